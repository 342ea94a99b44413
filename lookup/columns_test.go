package lookup

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/tablestore"
)

// keyTypes are the types a key column may have.
var keyTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Date32, arrow.FixedWidthTypes.Time64us, arrow.FixedWidthTypes.Timestamp_us,
	arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, arrow.FixedWidthTypes.Boolean,
	arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, &arrow.Decimal128Type{Precision: 20, Scale: 2},
}

// randomColumn makes n values of t drawn from a small domain (so keys
// repeat), with NULLs when nulls.
func randomColumn(r *rand.Rand, mem memory.Allocator, t arrow.DataType, n int, nulls bool) arrow.Array {
	b := array.NewBuilder(mem, t)
	defer b.Release()
	for range n {
		if nulls && r.IntN(8) == 0 {
			b.AppendNull()
			continue
		}
		v := int64(r.IntN(7)) - 3
		if r.IntN(4) == 0 {
			v = r.Int64() // extremes, sign bits
		}
		switch b := b.(type) {
		case *array.Int8Builder:
			b.Append(int8(v))
		case *array.Int16Builder:
			b.Append(int16(v))
		case *array.Int32Builder:
			b.Append(int32(v))
		case *array.Int64Builder:
			b.Append(v)
		case *array.Date32Builder:
			b.Append(arrow.Date32(int32(v)))
		case *array.Time64Builder:
			b.Append(arrow.Time64(v))
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(v))
		case *array.StringBuilder:
			b.Append(string(randomBytes(r)))
		case *array.BinaryBuilder:
			b.Append(randomBytes(r))
		case *array.BooleanBuilder:
			b.Append(v%2 == 0)
		case *array.Float32Builder:
			b.Append([]float32{0, float32(math.Copysign(0, -1)), 1.5, -2, float32(math.NaN()), float32(math.Inf(1))}[r.IntN(6)])
		case *array.Float64Builder:
			b.Append([]float64{0, math.Copysign(0, -1), 1.5, -2, math.NaN(), math.Inf(-1)}[r.IntN(6)])
		case *array.Decimal128Builder:
			b.Append(decimal128.New(v>>32, uint64(v)))
		}
	}
	return b.NewArray()
}

// randomBytes: short strings over bytes that the key encoding escapes.
func randomBytes(r *rand.Rand) []byte {
	out := make([]byte, r.IntN(4))
	for i := range out {
		out[i] = []byte{0, 0xFF, 'a', 1}[r.IntN(4)]
	}
	return out
}

// TestKeyHashes: for random keys of every key type, one to three columns,
// sliced or not, the hash of a key's normalized encoding (what a commit
// reports) equals the hash of its columns (what a lookup probes), keys
// with a NULL are skipped, and keyEqual says equal only of keys whose
// encodings are equal (and of every key with itself); where hashIsKey,
// hashes are equal exactly when keys are.
func TestKeyHashes(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 3))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for round := range 300 {
		nc := 1 + r.IntN(3)
		n := 1 + r.IntN(40)
		types := make([]arrow.DataType, nc)
		cols := make([]arrow.Array, nc)
		for c := range cols {
			types[c] = keyTypes[r.IntN(len(keyTypes))]
			full := randomColumn(r, mem, types[c], n+2, r.IntN(2) == 0)
			cols[c] = array.NewSlice(full, 1, int64(n+1)) // a non-zero offset
			full.Release()
		}
		hs, skip := make([]uint64, n), make([]bool, n)
		hashKeys(cols, hs, skip)
		views := viewsOf(cols)
		var enc, enc2 []byte
		for i := range n {
			if skip[i] != nullKey(cols, i) {
				t.Fatalf("round %d key %d (%s): skip %v", round, i, render(cols, i), skip[i])
			}
			if skip[i] {
				continue
			}
			enc = tablestore.AppendKey(enc[:0], cols, i)
			h, ok := hashEncoded(types, enc)
			if !ok || h != hs[i] {
				t.Fatalf("round %d key %d (%s of %v): encoded hash %x (%v), column hash %x", round, i, render(cols, i), types, h, ok, hs[i])
			}
			if !keyEqual(views, i, views, i) {
				t.Fatalf("round %d key %d (%s): not equal to itself", round, i, render(cols, i))
			}
			j := r.IntN(n)
			if skip[j] {
				continue
			}
			enc2 = tablestore.AppendKey(enc2[:0], cols, j)
			if keyEqual(views, i, views, j) && !bytes.Equal(enc, enc2) {
				t.Fatalf("round %d: keys %s and %s taken as equal", round, render(cols, i), render(cols, j))
			}
			if hashIsKey(types) && (hs[i] == hs[j]) != bytes.Equal(enc, enc2) {
				t.Fatalf("round %d: keys %s and %s of %v: equal hashes %v, equal keys %v", round, render(cols, i), render(cols, j), types, hs[i] == hs[j], bytes.Equal(enc, enc2))
			}
		}
		if _, ok := hashEncoded(types, append(tablestore.AppendKey(nil, cols, 0), 1)); ok {
			t.Fatalf("round %d: an encoding with a trailing byte decoded", round)
		}
		release(cols)
	}
}

// TestGather: a gather of random rows of random segments (and NULL rows)
// equals the values it picked, for every column type.
func TestGather(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 4))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for round := range 100 {
		typ := keyTypes[r.IntN(len(keyTypes))]
		var srcs []arrow.Array
		var segs []*segment
		for range 1 + r.IntN(3) {
			full := randomColumn(r, mem, typ, 12, true)
			a := array.NewSlice(full, 2, 12)
			full.Release()
			srcs = append(srcs, a)
			segs = append(segs, newRowSegment([]arrow.Array{a}, []int{0}))
		}
		n := r.IntN(30)
		pick, rows := make([]*segment, n), make([]int32, n)
		want := make([]string, n)
		for i := range n {
			if r.IntN(5) == 0 {
				want[i] = array.NullValueStr
				continue
			}
			s := r.IntN(len(segs))
			pick[i], rows[i] = segs[s], int32(r.IntN(10))
			want[i] = srcs[s].ValueStr(int(rows[i]))
		}
		got, err := gather(mem, typ, pick, rows, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if got.ValueStr(i) != want[i] {
				t.Fatalf("round %d (%s) row %d: gathered %s, want %s", round, typ, i, got.ValueStr(i), want[i])
			}
		}
		// A budget: the bytes of the column gathered are taken from it;
		// one byte short refuses the column, allocating nothing.
		size := int64(0)
		for _, b := range got.Data().Buffers() {
			if b != nil {
				size += int64(b.Len())
			}
		}
		got.Release()
		if n > 0 {
			left := size
			if again, err := gather(mem, typ, pick, rows, 0, &left); err != nil || left != 0 {
				t.Fatalf("round %d (%s): a budget of the column's %d bytes: %v, %d left", round, typ, size, err, left)
			} else {
				again.Release()
			}
			left = size - 1
			if _, err := gather(mem, typ, pick, rows, 0, &left); !errors.Is(err, ErrAnswerTooLarge) || left != size-1 {
				t.Fatalf("round %d (%s): a budget one byte short of %d: %v, %d left", round, typ, size, err, left)
			}
		}
		release(srcs)
	}
}
