package tablestore

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/tablestore/meta"
	"github.com/flightd/flightd/tablestore/paimonfmt"
)

// randDatum is a random value of dt as flightd's writers make datums,
// including the ones Paimon's BinaryRow cannot hold (decimals, TIME below
// the millisecond, invalid UTF-8, NaN).
func randDatum(r *rand.Rand, dt arrow.DataType, nullable bool) meta.Datum {
	if nullable && r.IntN(8) == 0 {
		return meta.Datum{Null: true}
	}
	switch dt.(type) {
	case *arrow.BooleanType:
		return meta.IntDatum(int64(r.IntN(2)))
	case *arrow.Int8Type:
		return meta.IntDatum(int64(int8(r.Uint32())))
	case *arrow.Int16Type:
		return meta.IntDatum(int64(int16(r.Uint32())))
	case *arrow.Int32Type, *arrow.Date32Type:
		return meta.IntDatum(int64(int32(r.Uint32())))
	case *arrow.Int64Type:
		return meta.IntDatum(int64(r.Uint64()))
	case *arrow.Time64Type:
		return meta.IntDatum(r.Int64N(86_400_000_000))
	case *arrow.TimestampType:
		return meta.IntDatum(r.Int64N(1<<50) - 1<<49)
	case *arrow.Float32Type:
		return meta.FloatDatum(float64([]float32{float32(r.NormFloat64()), float32(math.Inf(1)), float32(math.NaN())}[r.IntN(3)]))
	case *arrow.Float64Type:
		return meta.FloatDatum([]float64{r.NormFloat64(), math.Inf(-1), math.NaN(), math.Copysign(0, -1)}[r.IntN(4)])
	case *arrow.StringType:
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		if r.IntN(10) == 0 {
			b = append(b, 0xff) // invalid UTF-8: kept as bytes
		}
		return meta.StrDatum(string(b))
	case *arrow.BinaryType:
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return meta.BinDatum(b)
	}
	return meta.Datum{} // decimals have no datum
}

var paimonTestTypes = []arrow.DataType{
	arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32,
	arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Date32,
	&arrow.Time64Type{Unit: arrow.Microsecond}, &arrow.TimestampType{Unit: arrow.Second},
	&arrow.TimestampType{Unit: arrow.Millisecond}, &arrow.TimestampType{Unit: arrow.Microsecond},
	&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, &arrow.Decimal128Type{Precision: 10, Scale: 2},
	&arrow.Decimal128Type{Precision: 30, Scale: 4}, arrow.BinaryTypes.String, arrow.BinaryTypes.Binary,
	arrow.ListOf(arrow.PrimitiveTypes.Int32),
}

// TestManifestEntriesRoundTrip: manifest entries of random tables (every
// stored type, random keys and partitions, random statistics) read back
// from Paimon's Avro manifests exactly as flightd wrote them, and the
// Paimon view of them (read by paimonfmt alone) holds the key range and
// partition where BinaryRow can hold them.
func TestManifestEntriesRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 0))
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	for n := 0; n < 12; n++ {
		var fields []arrow.Field
		var keyable []string
		for i := 0; i < 2+r.IntN(8); i++ {
			dt := paimonTestTypes[r.IntN(len(paimonTestTypes))]
			name := fmt.Sprintf("c%d", i)
			fields = append(fields, arrow.Field{Name: name, Type: dt, Nullable: r.IntN(2) == 0})
			if keyTypeOK(dt) {
				keyable = append(keyable, name)
			}
		}
		def := TableDef{Schema: arrow.NewSchema(fields, nil), Options: map[string]string{}}
		if len(keyable) >= 2 && r.IntN(3) > 0 {
			r.Shuffle(len(keyable), func(i, j int) { keyable[i], keyable[j] = keyable[j], keyable[i] })
			def.PrimaryKey = keyable[:1+r.IntN(len(keyable)-1)]
			if len(def.PrimaryKey) > 1 && r.IntN(2) == 0 {
				def.PartitionKeys = def.PrimaryKey[:1]
			}
		} else if len(keyable) > 0 && r.IntN(2) == 0 {
			def.PartitionKeys = keyable[:1]
		}
		id := Ident{Database: "db", Table: fmt.Sprintf("t%d", n)}
		if _, err := s.CreateTable(ctx, id, def, false); err != nil {
			t.Fatal(err)
		}
		st := s.state(id)
		sch, err := st.latestSchema()
		if err != nil {
			t.Fatal(err)
		}
		var ents []*meta.ManifestEntry
		for e := 0; e < 1+r.IntN(20); e++ {
			part := make([]meta.Datum, len(sch.PartitionKeys))
			for i, p := range sch.PartitionKeys {
				part[i] = randDatum(r, sch.types[sch.fieldIndex(p)], false)
			}
			key := func() []meta.Datum {
				var k []meta.Datum
				for _, c := range sch.PrimaryKeys {
					if j := slices.Index(sch.PartitionKeys, c); j >= 0 {
						k = append(k, part[j])
						continue
					}
					k = append(k, randDatum(r, sch.types[sch.fieldIndex(c)], false))
				}
				return k
			}
			rows := 1 + r.Int64N(1000)
			bucket := r.IntN(4)
			f := meta.DataFile{
				FileName: fmt.Sprintf("data-%d-%d.parquet", n, e), FileSize: r.Int64N(1 << 30), RowCount: rows,
				MinSeq: r.Int64N(100), MaxSeq: 100 + r.Int64N(100), SchemaID: sch.ID, Level: r.IntN(5),
				CreationMillis: r.Int64N(1 << 42), DeleteRowCount: r.Int64N(rows + 1),
				FileSource: []string{"APPEND", "COMPACT"}[r.IntN(2)],
			}
			f.Path = st.filePath(sch, part, bucket, f.FileName)
			if r.IntN(5) == 0 {
				f.Path = "elsewhere/" + f.FileName
			}
			if r.IntN(2) == 0 {
				crc := r.Uint32()
				f.CRC = &crc
			}
			if sch.hasPK() {
				f.MinKey, f.MaxKey = key(), key()
			}
			for i, fd := range sch.Fields {
				c := meta.ColStats{ID: fd.ID, NullCount: r.Int64N(rows + 1)}
				switch {
				case c.NullCount == rows:
				case isNested(sch.types[i]) || r.IntN(6) == 0:
					// unknown bounds
				default:
					lo, hi := randDatum(r, sch.types[i], false), randDatum(r, sch.types[i], false)
					c.Min, c.Max = &lo, &hi
				}
				if r.IntN(3) == 0 {
					c.NDV = 1 + r.Int64N(rows)
				}
				f.ValueStats = append(f.ValueStats, c)
			}
			kind := meta.KindAdd
			if r.IntN(4) == 0 {
				kind = meta.KindDelete
			}
			ents = append(ents, &meta.ManifestEntry{Kind: kind, Partition: part, Bucket: bucket, TotalBuckets: 4, File: f})
		}
		data, err := st.encodeManifest(ents)
		if err != nil {
			t.Fatalf("table %d: encode: %v", n, err)
		}
		got, err := st.decodeManifest("test", data)
		if err != nil {
			t.Fatalf("table %d: decode: %v", n, err)
		}
		want, _ := json.Marshal(ents)
		have, _ := json.Marshal(got)
		if string(want) != string(have) {
			t.Fatalf("table %d (%v, key %v, partition %v): entries differ:\n got  %s\n want %s", n, fields, sch.PrimaryKeys, sch.PartitionKeys, have, want)
		}
		// Paimon's view: the same files, kinds and buckets; partitions and
		// keys where BinaryRow holds them exactly.
		pents, _, err := paimonfmt.DecodeManifest(data)
		if err != nil {
			t.Fatal(err)
		}
		for i, pe := range pents {
			e := ents[i]
			if pe.File.FileName != e.File.FileName || int(pe.Bucket) != e.Bucket || (pe.Kind == paimonfmt.KindDelete) != (e.Kind == meta.KindDelete) {
				t.Fatalf("table %d: Paimon reads entry %d as %+v, flightd wrote %+v", n, i, pe, e)
			}
			// Key statistics bound each key column (where known), as the
			// column statistics do.
			keyCols := sch.trimmedKey()
			lo, err := meta.DecodeDatums(sch.typesOf(keyCols), pe.File.KeyStats.MinValues)
			if err != nil {
				t.Fatalf("table %d: key stats: %v", n, err)
			}
			for j, c := range keyCols {
				if lo[j].Null {
					continue
				}
				for _, cs := range e.File.ValueStats {
					if cs.ID == sch.Fields[sch.fieldIndex(c)].ID && (cs.Min == nil || !jsonEqual(*cs.Min, lo[j])) {
						t.Fatalf("table %d: key stats min of %s is %v, column min %v", n, c, lo[j], cs.Min)
					}
				}
			}
			if _, exact, _ := meta.EncodeDatums(partTypes(sch), e.Partition); exact {
				p, err := meta.DecodeDatums(partTypes(sch), pe.Partition)
				if err != nil || !jsonEqual(p, e.Partition) {
					t.Fatalf("table %d: Paimon partition %v (%v), flightd %v", n, p, err, e.Partition)
				}
			}
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// copyDir copies a directory tree into a fresh temp dir.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// legacyPKRows are the rows testfixtures/legacy_warehouse/genlegacy.go.txt
// leaves in db.pk: ids 0..19 in partition d<id%2>, v<id>, ids 0..4
// updated to w<id>, id 5 deleted; overrides replace values after that.
func legacyPKRows(overrides map[int64]string) []string {
	var out []string
	for id := int64(0); id < 21; id++ {
		v := fmt.Sprintf("v%d", id)
		if id < 5 {
			v = fmt.Sprintf("w%d", id)
		}
		if o, ok := overrides[id]; ok {
			v = o
		} else if id == 5 || id == 20 {
			continue
		}
		out = append(out, fmt.Sprintf("d%d|%d|%s", id%2, id, v))
	}
	return out
}

// TestLegacyWarehouse opens a warehouse written by flightd before it used
// Paimon's metadata format (testfixtures/legacy_warehouse, made by
// genlegacy.go.txt with that version): its tables, tags and consumers
// read as they were; writes keep each key in the bucket the old hash gave
// it (no key appears twice), also after an ALTER and a restart; and the
// first commit leaves a latest snapshot whose manifests are all Avro.
func TestLegacyWarehouse(t *testing.T) {
	ctx := context.Background()
	dir := copyDir(t, filepath.Join("testfixtures", "legacy_warehouse"))
	mem := newMem(t)
	s := openStore(t, NewLocalFS(), dir, mem)
	defer func() { s.Close() }()
	pkID, apID := Ident{Database: "db", Table: "pk"}, Ident{Database: "db", Table: "app"}
	pk, err := s.Table(ctx, pkID)
	if err != nil {
		t.Fatal(err)
	}
	eqRows(t, scanAll(t, pk, ScanSpec{}), legacyPKRows(nil)...)
	eqRows(t, scanAll(t, pk, ScanSpec{Tag: "t1"}), legacyPKRows(nil)...)
	if next, ok, err := pk.Consumer(ctx, "c1"); err != nil || !ok || next != 2 {
		t.Fatalf("consumer c1: %d %v %v, want 2", next, ok, err)
	}
	ap, err := s.Table(ctx, apID)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < 10; i++ {
		if i%3 == 0 {
			want = append(want, fmt.Sprintf("%d|NULL", i))
		} else {
			want = append(want, fmt.Sprintf("%d|s%d", i, i))
		}
	}
	eqRows(t, scanAll(t, ap, ScanSpec{}), want...)

	// Upserts of existing keys in both buckets and partitions, and a new key.
	over := map[int64]string{}
	var rows [][]any
	for _, id := range []int64{0, 1, 6, 7, 8, 9, 20} {
		over[id] = fmt.Sprintf("x%d", id)
		rows = append(rows, []any{fmt.Sprintf("d%d", id%2), int(id), over[id]})
	}
	writeRows(t, pk, mem, WriteOptions{}, Insert, rows)
	eqRows(t, scanAll(t, pk, ScanSpec{}), legacyPKRows(over)...)
	checkPaimonSnapshot(t, s.state(pkID))

	if err := s.AlterTable(ctx, pkID, AddColumn{Name: "extra", Type: arrow.PrimitiveTypes.Int32}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, NewLocalFS(), dir, mem)
	if pk, err = s.Table(ctx, pkID); err != nil {
		t.Fatal(err)
	}
	var again [][]any
	for _, id := range []int64{2, 3, 11, 12} {
		over[id] = fmt.Sprintf("y%d", id)
		again = append(again, []any{fmt.Sprintf("d%d", id%2), int(id), over[id], nil})
	}
	writeRows(t, pk, mem, WriteOptions{}, Insert, again)
	got := scanAll(t, pk, ScanSpec{Columns: []string{"dt", "id", "v"}})
	eqRows(t, got, legacyPKRows(over)...)
	checkPaimonSnapshot(t, s.state(pkID))
}

// checkPaimonSnapshot: the latest snapshot is Paimon's JSON (no trailer),
// its manifest lists and every manifest they list are Avro, and its
// schema file is Paimon's JSON.
func checkPaimonSnapshot(t *testing.T, st *tableState) {
	t.Helper()
	id, err := st.latestSnapshotID()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := readFileAll(st.fs(), st.snapshotPath(id))
	if err != nil {
		t.Fatal(err)
	}
	var sn meta.Snapshot
	if err := json.Unmarshal(raw, &sn); err != nil {
		t.Fatalf("snapshot %d is not plain JSON: %v", id, err)
	}
	for _, l := range []string{sn.BaseManifestList, sn.DeltaManifestList} {
		data, err := st.readManifestFile(l)
		if err != nil {
			t.Fatal(err)
		}
		metas, err := paimonfmt.DecodeManifestList(data)
		if err != nil {
			t.Fatalf("manifest list %s: %v", l, err)
		}
		for _, m := range metas {
			data, err := st.readManifestFile(m.FileName)
			if err != nil {
				t.Fatal(err)
			}
			if !paimonfmt.IsAvro(data) {
				t.Fatalf("snapshot %d lists manifest %s, which is not Avro", id, m.FileName)
			}
		}
	}
	raw, err = readFileAll(st.fs(), joinPath(st.dir, "schema", fmt.Sprintf("schema-%d", sn.SchemaID)))
	if err != nil {
		t.Fatal(err)
	}
	var sch map[string]any
	if err := json.Unmarshal(raw, &sch); err != nil {
		t.Fatalf("schema %d is not plain JSON: %v", sn.SchemaID, err)
	}
}

// TestVersionlessPaimonSchema: a schema file without a "version" field and
// without flightd's checksum trailer is Paimon's (Paimon 0.7 wrote none),
// not flightd's former format: flightd leaves the file as it is and puts
// keys in the buckets Paimon's function gives, as Paimon's writers do.
func TestVersionlessPaimonSchema(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	s := openStore(t, NewLocalFS(), dir, mem)
	must(t, s.CreateDatabase(ctx, "db", false))
	id := Ident{Database: "db", Table: "t"}
	_, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "4"}}, false)
	must(t, err)
	s.Close()

	// Rewrite schema-0 as Paimon 0.7 did: no "version".
	path := filepath.Join(dir, "db.db", "t", "schema", "schema-0")
	raw, err := os.ReadFile(path)
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(raw, &m))
	delete(m, "version")
	raw, err = json.Marshal(m)
	must(t, err)
	must(t, os.WriteFile(path, raw, 0o644))

	s = openStore(t, NewLocalFS(), dir, mem)
	defer s.Close()
	tbl, err := s.Table(ctx, id)
	must(t, err)
	var rows [][]any
	for k := 0; k < 40; k++ {
		rows = append(rows, []any{k, fmt.Sprint("v", k)})
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
	if after, err := os.ReadFile(path); err != nil || string(after) != string(raw) {
		t.Fatalf("flightd rewrote Paimon's schema file (%v):\n%s\nwas\n%s", err, after, raw)
	}
	st := s.state(id)
	sn, err := st.readSnapshot(1)
	must(t, err)
	live, err := st.liveFiles(sn)
	must(t, err)
	for _, e := range live {
		for _, key := range [][]meta.Datum{e.File.MinKey, e.File.MaxKey} {
			h, err := paimonfmt.RowHash([]paimonfmt.Type{{Kind: paimonfmt.BigInt}}, []any{*key[0].I})
			must(t, err)
			if b := paimonfmt.BucketOf(h, 4); b != e.Bucket {
				t.Fatalf("key %d is in bucket %d; Paimon's function gives %d", *key[0].I, e.Bucket, b)
			}
		}
	}
}

// TestSchemaFileBucket: a key table created without a bucket option is
// written with "bucket": "1" (what flightd stores it as: without it Paimon
// reads the table as dynamic, bucket -1), while the table's own options,
// ALTERs included, stay as the user gave them; tables with a bucket option
// and append tables are written as they are.
func TestSchemaFileBucket(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	s := openStore(t, NewLocalFS(), dir, mem)
	must(t, s.CreateDatabase(ctx, "db", false))
	cases := []struct {
		name     string
		def      TableDef
		onDisk   string // the bucket option in the schema file ("": none)
		inMemory string
		buckets  int
	}{
		{"nobucket", TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, "1", "", 1},
		{"buckets", TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "3"}}, "3", "3", 3},
		{"one", TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "1"}}, "1", "1", 1},
		{"append", TableDef{Schema: kvSchema}, "", "", 1},
	}
	for _, c := range cases {
		id := Ident{Database: "db", Table: c.name}
		_, err := s.CreateTable(ctx, id, c.def, false)
		must(t, err)
		must(t, s.AlterTable(ctx, id, SetOption{Key: "snapshot.num-retained.min", Value: "3"}))
	}
	s.Close()
	s = openStore(t, NewLocalFS(), dir, mem)
	defer s.Close()
	for _, c := range cases {
		for _, schemaFile := range []string{"schema-0", "schema-1"} {
			raw, err := os.ReadFile(filepath.Join(dir, "db.db", c.name, "schema", schemaFile))
			must(t, err)
			var m struct{ Options map[string]string }
			must(t, json.Unmarshal(raw, &m))
			if m.Options["bucket"] != c.onDisk {
				t.Errorf("%s %s: bucket %q on disk, want %q", c.name, schemaFile, m.Options["bucket"], c.onDisk)
			}
		}
		tbl, err := s.Table(ctx, Ident{Database: "db", Table: c.name})
		must(t, err)
		opts := tbl.Options()
		if opts["bucket"] != c.inMemory || opts["snapshot.num-retained.min"] != "3" {
			t.Errorf("%s: options %v, want bucket %q and the ALTER's option", c.name, opts, c.inMemory)
		}
		if tbl.Buckets() != c.buckets {
			t.Errorf("%s: %d buckets, want %d", c.name, tbl.Buckets(), c.buckets)
		}
	}
}
