package paimonfmt

import (
	"bytes"
	"flag"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"
)

var seedFlag = flag.Uint64("seed", 0, "random seed (0: from the clock)")

func testRand(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed))
}

func randValue(r *rand.Rand, t Type) any {
	if r.IntN(6) == 0 {
		return nil
	}
	switch t.Kind {
	case Boolean:
		return r.IntN(2) == 1
	case TinyInt:
		return int64(int8(r.Uint32()))
	case SmallInt:
		return int64(int16(r.Uint32()))
	case Int, Date, Time:
		return int64(int32(r.Uint32()))
	case BigInt:
		return int64(r.Uint64())
	case Float:
		return float64(math.Float32frombits(r.Uint32()))
	case Double:
		return math.Float64frombits(r.Uint64())
	case Timestamp:
		v := TimestampValue{Millis: int64(r.Uint64()) >> 8}
		if t.Precision > compactTimestamp {
			v.NanoOfMilli = int32(r.IntN(1_000_000))
		}
		return v
	case Decimal:
		limit, _ := new(big.Int).SetString(strings.Repeat("9", r.IntN(t.Precision)+1), 10)
		raw := make([]byte, 17)
		for i := range raw {
			raw[i] = byte(r.Uint32())
		}
		d := new(big.Int).Mod(new(big.Int).SetBytes(raw), limit)
		if r.IntN(2) == 0 {
			d.Neg(d)
		}
		return d
	case String:
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	case Bytes:
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	return nil
}

// same compares decoded values: floats by bits (NaN included), decimals
// by value.
func same(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case *big.Int:
		y, ok := b.(*big.Int)
		return ok && x.Cmp(y) == 0
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	}
	return reflect.DeepEqual(a, b)
}

var allKinds = []Type{{Kind: Boolean}, {Kind: TinyInt}, {Kind: SmallInt}, {Kind: Int}, {Kind: BigInt},
	{Kind: Float}, {Kind: Double}, {Kind: Date}, {Kind: Time}, {Kind: Timestamp, Precision: 3},
	{Kind: Timestamp, Precision: 6}, {Kind: Timestamp, Precision: 9}, {Kind: Decimal, Precision: 10},
	{Kind: Decimal, Precision: 18}, {Kind: Decimal, Precision: 38}, {Kind: String}, {Kind: Bytes}}

// TestRowRoundTrip: every kind, random values and arities, reads back as
// written, and the layout invariants Paimon's readers rely on hold (an
// 8-byte aligned row, the arity prefix).
func TestRowRoundTrip(t *testing.T) {
	r := testRand(t)
	for n := 0; n < 2000; n++ {
		arity := r.IntN(70)
		types := make([]Type, arity)
		vals := make([]any, arity)
		for i := range types {
			types[i] = allKinds[r.IntN(len(allKinds))]
			vals[i] = randValue(r, types[i])
			if types[i].Kind == Float && vals[i] != nil {
				vals[i] = float64(float32(vals[i].(float64)))
			}
		}
		data, err := EncodeRow(types, vals)
		if err != nil {
			t.Fatalf("encode %v: %v", vals, err)
		}
		if (len(data)-4)%8 != 0 {
			t.Fatalf("row of %d bytes is not word aligned", len(data)-4)
		}
		if a, _ := Arity(data); a != arity {
			t.Fatalf("arity %d, want %d", a, arity)
		}
		got, err := DecodeRow(data, types)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		for i := range vals {
			if !same(vals[i], got[i]) {
				t.Fatalf("field %d (kind %d): wrote %v, read %v", i, types[i].Kind, vals[i], got[i])
			}
		}
	}
}

// TestRowRejectsBadInput: truncated or inconsistent rows are errors, not
// panics, whatever the bytes.
func TestRowRejectsBadInput(t *testing.T) {
	r := testRand(t)
	types := []Type{{Kind: String}, {Kind: Decimal, Precision: 30}, {Kind: Timestamp, Precision: 9}}
	good, err := EncodeRow(types, []any{"a string longer than seven", big.NewInt(-12345), TimestampValue{Millis: 5, NanoOfMilli: 7}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5000; i++ {
		b := append([]byte(nil), good[:r.IntN(len(good)+1)]...)
		for j := 0; j < r.IntN(4) && len(b) > 0; j++ {
			b[r.IntN(len(b))] = byte(r.Uint32())
		}
		_, _ = DecodeRow(b, types) // must not panic
	}
	if _, err := DecodeRow(good, types[:2]); err == nil {
		t.Fatal("arity mismatch accepted")
	}
	if _, err := EncodeRow([]Type{{Kind: Int}}, []any{"x"}); err == nil {
		t.Fatal("a string as INT accepted")
	}
	if _, err := EncodeRow([]Type{{Kind: Decimal, Precision: 5}}, []any{new(big.Int).Lsh(big.NewInt(1), 70)}); err == nil {
		t.Fatal("a decimal beyond its precision accepted")
	}
}

// TestTwosComplementMatchesBigInt: the big-endian form of decimals is
// Java's BigInteger.toByteArray, minimal, for values around byte edges.
func TestTwosComplement(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 127, 128, -128, -129, 255, 256, -256, -257, 32767, -32768, math.MaxInt64, math.MinInt64} {
		b := twosComplement(big.NewInt(v))
		if got := fromTwosComplement(b); got.Int64() != v {
			t.Errorf("%d: bytes %x read back as %s", v, b, got)
		}
		// Minimal: dropping the first byte changes the value.
		if len(b) > 1 && fromTwosComplement(b[1:]).Int64() == v {
			t.Errorf("%d: %x is not minimal", v, b)
		}
	}
}

// TestBucketSpreads: bucket numbers are in range and every bucket is used
// by sequential keys (the hash mixes).
func TestBucketSpreads(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 16} {
		seen := make([]int, n)
		for id := int64(0); id < 1000; id++ {
			h, err := RowHash([]Type{{Kind: BigInt}}, []any{id})
			if err != nil {
				t.Fatal(err)
			}
			b := BucketOf(h, n)
			if b < 0 || b >= n {
				t.Fatalf("bucket %d of %d", b, n)
			}
			seen[b]++
		}
		for b, c := range seen {
			if c < 1000/n/2 {
				t.Errorf("%d buckets: bucket %d got %d of 1000 keys", n, b, c)
			}
		}
	}
}

func randStats(r *rand.Rand) SimpleStats {
	s := SimpleStats{MinValues: []byte{byte(r.Uint32())}, MaxValues: []byte{}}
	if r.IntN(3) > 0 {
		s.NullCounts = []*int64{}
		for i := r.IntN(4); i > 0; i-- {
			if r.IntN(3) == 0 {
				s.NullCounts = append(s.NullCounts, nil)
				continue
			}
			n := r.Int64()
			s.NullCounts = append(s.NullCounts, &n)
		}
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// TestManifestRoundTrip: random manifests and manifest lists read back
// as written, with the header metadata.
func TestManifestRoundTrip(t *testing.T) {
	r := testRand(t)
	for n := 0; n < 50; n++ {
		ents := make([]ManifestEntry, r.IntN(40))
		for i := range ents {
			f := DataFileMeta{
				FileName: "data-" + string(rune('a'+r.IntN(26))) + ".parquet", FileSize: r.Int64(), RowCount: r.Int64(),
				MinKey: []byte{1, 2}, MaxKey: []byte{3}, KeyStats: randStats(r), ValueStats: randStats(r),
				MinSequenceNumber: r.Int64(), MaxSequenceNumber: r.Int64(), SchemaID: r.Int64N(5), Level: int32(r.IntN(6)),
				ExtraFiles: []string{}, CreationTime: ptr(r.Int64N(1 << 45)), DeleteRowCount: ptr(r.Int64()),
				FileSource: ptr(int32(r.IntN(2))), ValueStatsCols: []string{"a", "b"},
			}
			switch r.IntN(3) { // null (all columns) and empty (none) differ
			case 0:
				f.ValueStatsCols = nil
			case 1:
				f.ValueStatsCols = []string{}
			}
			ents[i] = ManifestEntry{Kind: int32(r.IntN(2)), Partition: []byte{0, 0, 0, 0}, Bucket: int32(r.IntN(8)), TotalBuckets: 8, File: f}
		}
		meta := map[string][]byte{"k": []byte("v")}
		data, err := EncodeManifest(ents, meta)
		if err != nil {
			t.Fatal(err)
		}
		got, gotMeta, err := DecodeManifest(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ents) || (len(got) > 0 && !reflect.DeepEqual(got, ents)) {
			t.Fatalf("manifest read back differs:\n%+v\n%+v", got, ents)
		}
		if string(gotMeta["k"]) != "v" {
			t.Fatalf("header metadata lost: %q", gotMeta)
		}
		metas := make([]ManifestFileMeta, r.IntN(10))
		for i := range metas {
			metas[i] = ManifestFileMeta{FileName: "manifest-x", FileSize: r.Int64(), NumAddedFiles: r.Int64(),
				NumDeleted: r.Int64(), PartitionStats: randStats(r), SchemaID: r.Int64N(9), MinBucket: ptr(int32(1))}
		}
		data, err = EncodeManifestList(metas)
		if err != nil {
			t.Fatal(err)
		}
		gotList, err := DecodeManifestList(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(gotList) != len(metas) || (len(metas) > 0 && !reflect.DeepEqual(gotList, metas)) {
			t.Fatalf("manifest list read back differs:\n%+v\n%+v", gotList, metas)
		}
	}
	if _, _, err := DecodeManifest([]byte(`[{"kind":"ADD"}]`)); err != ErrNotAvro {
		t.Fatalf("JSON read as Avro: %v", err)
	}
}

// TestHeaderSchema: a file's header holds its schema as the Avro encoder
// writes it (the text is marshalled once per process, not per file).
func TestHeaderSchema(t *testing.T) {
	m, err := EncodeManifest([]ManifestEntry{{Partition: []byte{0, 0, 0, 0}, File: DataFileMeta{FileName: "f"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := EncodeManifestList([]ManifestFileMeta{{FileName: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		data   []byte
		schema string
	}{{m, manifestEntrySchema}, {l, manifestFileMetaSchema}} {
		dec, err := ocf.NewDecoder(bytes.NewReader(c.data))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(dec.Metadata()["avro.schema"]), avro.MustParse(c.schema).String(); got != want {
			t.Fatalf("header schema\n%s\nwant\n%s", got, want)
		}
	}
}

// BenchmarkEncodeCommitManifests encodes what a commit of one file
// writes: a manifest of one entry and a manifest list of one manifest.
func BenchmarkEncodeCommitManifests(b *testing.B) {
	for b.Loop() {
		if _, err := EncodeManifest([]ManifestEntry{{Partition: []byte{0, 0, 0, 0}, File: DataFileMeta{FileName: "f"}}}, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := EncodeManifestList([]ManifestFileMeta{{FileName: "m"}}); err != nil {
			b.Fatal(err)
		}
	}
}
