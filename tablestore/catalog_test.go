package tablestore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

func TestCatalog(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	if err := s.CreateDatabase(ctx, "db", false); !errors.Is(err, ErrDatabaseExists) {
		t.Fatalf("want ErrDatabaseExists, got %v", err)
	}
	if err := s.CreateDatabase(ctx, "db", true); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateDatabase(ctx, "a/b", false); err == nil {
		t.Fatal("want invalid name error")
	}
	must(t, s.CreateDatabase(ctx, "other", false))
	dbs, _ := s.Databases(ctx)
	if !slices.Equal(dbs, []string{"db", "other"}) {
		t.Fatalf("databases %v", dbs)
	}
	def := TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}
	for _, n := range []string{"b", "a"} {
		if _, err := s.CreateTable(ctx, Ident{"db", n}, def, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateTable(ctx, Ident{"db", "a"}, def, false); !errors.Is(err, ErrTableExists) {
		t.Fatalf("want ErrTableExists, got %v", err)
	}
	if _, err := s.CreateTable(ctx, Ident{"db", "a"}, def, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTable(ctx, Ident{"nope", "a"}, def, false); !errors.Is(err, ErrDatabaseNotFound) {
		t.Fatalf("want ErrDatabaseNotFound, got %v", err)
	}
	tables, _ := s.Tables(ctx, "db")
	if !slices.Equal(tables, []string{"a", "b"}) {
		t.Fatalf("tables %v", tables)
	}
	if _, err := s.Table(ctx, Ident{"db", "zz"}); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("want ErrTableNotFound, got %v", err)
	}
	if err := s.DropDatabase(ctx, "db", false, false); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("want not-empty error, got %v", err)
	}
	must(t, s.DropTable(ctx, Ident{"db", "a"}, false))
	if err := s.DropTable(ctx, Ident{"db", "a"}, false); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("want ErrTableNotFound, got %v", err)
	}
	must(t, s.DropTable(ctx, Ident{"db", "a"}, true))
	must(t, s.DropDatabase(ctx, "db", false, true))
	if _, err := s.Tables(ctx, "db"); !errors.Is(err, ErrDatabaseNotFound) {
		t.Fatalf("want ErrDatabaseNotFound, got %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestCreateTableValidation(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	f64 := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}, {Name: "y", Type: arrow.PrimitiveTypes.Int64}}, nil)
	cases := []struct {
		def  TableDef
		want string
	}{
		{TableDef{Schema: kvSchema, PrimaryKey: []string{"nope"}}, `primary key column "nope"`},
		{TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "x"}}, `"bucket"`},
		{TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"merge-engine": "upsert"}}, "deduplicate, partial-update"},
		{TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}}, `column "v": sum needs`},
		{TableDef{Schema: kvSchema, Options: map[string]string{"changelog-producer": "lookup"}}, "needs a primary key"},
		{TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bogus": "1"}}, `unknown table option "bogus"`},
		{TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, PartitionKeys: []string{"v"}}, "must be part of the primary key"},
		{TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"sequence.field": "zz"}}, `no column "zz"`},
		{TableDef{Schema: f64, PrimaryKey: []string{"x"}}, "cannot be a key"},
		{TableDef{Schema: kvSchema, Options: map[string]string{"bucket": "4"}}, "bucket-key"},
		{TableDef{Schema: arrow.NewSchema([]arrow.Field{{Name: "_x", Type: arrow.PrimitiveTypes.Int64}}, nil)}, "reserved"},
		{TableDef{Schema: arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.FixedWidthTypes.Float16)}}, nil)}, "not supported"},
	}
	for i, c := range cases {
		_, err := s.CreateTable(ctx, Ident{"db", "t"}, c.def, false)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: want ErrInvalid containing %q, got %v", i, c.want, err)
		}
	}
	if tables, _ := s.Tables(ctx, "db"); len(tables) != 0 {
		t.Fatalf("failed creates left tables: %v", tables)
	}
}

// TestOptionsPastTheirRange: sizes, durations and counts past their
// type's range are taken as its largest, as they mean (never), and tables
// created with them work. They wrapped: 'snapshot.time-retained' =
// '106752d' (just past Go's 292 years) became negative and expired every
// snapshot past the minimum at the next commit, 'consumer.expiration-time'
// = '213504d' became 25 minutes, a write-buffer-size of '8589934592 gb' a
// negative budget that flushed every write, and a
// 'num-sorted-run.compaction-trigger' of 2^63-1 failed on
// num-sorted-run.stop-trigger, which the statement did not set.
func TestOptionsPastTheirRange(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	const maxDays = time.Duration(math.MaxInt64/int64(24*time.Hour)) * 24 * time.Hour
	for i, c := range []struct {
		key, val string
		got      func(o tableOptions) int64
		want     int64
	}{
		{"snapshot.time-retained", "106752d", func(o tableOptions) int64 { return int64(o.timeRetained) }, int64(maxDays)},
		{"consumer.expiration-time", "213504d", func(o tableOptions) int64 { return int64(o.consumerExpire) }, int64(maxDays)},
		{"write-buffer-size", "8589934592 gb", func(o tableOptions) int64 { return o.writeBufferSize }, math.MaxInt64 / (1 << 30) * (1 << 30)},
		{"target-file-size", "9223372036854775807 kb", func(o tableOptions) int64 { return o.targetFileSize }, math.MaxInt64 / (1 << 10) * (1 << 10)},
		{"num-sorted-run.compaction-trigger", "9223372036854775807", func(o tableOptions) int64 { return int64(o.compactionTrigger) }, math.MaxInt32},
		{"snapshot.num-retained.min", "9223372036854775807", func(o tableOptions) int64 { return int64(o.retainedMin) }, math.MaxInt32},
	} {
		tbl, err := s.CreateTable(ctx, Ident{"db", fmt.Sprint("t", i)}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{c.key: c.val}}, false)
		if err != nil {
			t.Errorf("%s = %s: %v", c.key, c.val, err)
			continue
		}
		if got := c.got(tbl.schema.opts); got != c.want {
			t.Errorf("%s = %s: got %d, want %d", c.key, c.val, got, c.want)
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}})
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "c"}})
		eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a", "2|b", "3|c")
	}
}

var partSchema = arrow.NewSchema([]arrow.Field{
	{Name: "dt", Type: arrow.FixedWidthTypes.Date32},
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

func TestAppendTablePartitionsOverwrite(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "log"}, TableDef{Schema: partSchema, PartitionKeys: []string{"dt"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{19000, 1, 10}, {19001, 2, 20}, {19000, 1, nil}})
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{19002, 3, 30}})
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "2022-01-08|1|10", "2022-01-08|1|NULL", "2022-01-09|2|20", "2022-01-10|3|30")
	// Append tables refuse deletes.
	w := tbl.NewWrite(WriteOptions{})
	b := makeBatch(t, mem, partSchema, [][]any{{19000, 1, 10}})
	if err := w.Write(ctx, b, Delete); err == nil {
		t.Fatal("want error for delete on append table")
	}
	b.Release()
	w.Abort()
	// Partition pruning.
	sc, err := tbl.NewScan(ctx, ScanSpec{Filter: Compare{Column: "dt", Op: EQ, Value: scalar.NewDate32Scalar(19001)}})
	must(t, err)
	if got := sc.Splits()[0].Partition(); got["dt"] != "2022-01-09" {
		t.Fatalf("split partition %v", got)
	}
	eqRows(t, readScan(t, sc), "2022-01-09|2|20")
	if st := sc.Stats(); st.PartitionsTotal != 3 || st.PartitionsSelected != 1 || st.FilesSelected != 1 {
		t.Fatalf("pruning stats %+v", st)
	}
	// Dynamic overwrite: only the partitions written to.
	writeRows(t, tbl, mem, WriteOptions{Overwrite: true, DynamicPartitionOverwrite: true}, Insert, [][]any{{19000, 9, 90}})
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "2022-01-08|9|90", "2022-01-09|2|20", "2022-01-10|3|30")
	// Static overwrite of a partition with nothing: truncates it.
	w = tbl.NewWrite(WriteOptions{Overwrite: true, OverwritePartition: map[string]string{"dt": "2022-01-09"}})
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "2022-01-08|9|90", "2022-01-10|3|30")
	w = tbl.NewWrite(WriteOptions{Overwrite: true, OverwritePartition: map[string]string{"id": "1"}})
	if _, err := w.Commit(ctx); err == nil || !strings.Contains(err.Error(), `"id" is not a partition column`) {
		t.Fatalf("want bad partition spec error, got %v", err)
	}
	// A plain overwrite replaces the whole table.
	writeRows(t, tbl, mem, WriteOptions{Overwrite: true}, Insert, [][]any{{19002, 4, 40}})
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "2022-01-10|4|40")
	// Small-file compaction of append tables keeps every row.
	for i := range 6 {
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{19003, i, i}})
	}
	must(t, tbl.Compact(ctx, true))
	st, _ := tbl.Stats(ctx, 0)
	if st.Files != 2 {
		t.Fatalf("after compaction: %+v", st)
	}
	if got := scanAll(t, tbl, ScanSpec{Filter: Compare{Column: "dt", Op: GE, Value: scalar.NewDate32Scalar(19003)}}); len(got) != 6 {
		t.Fatalf("rows after compaction: %q", got)
	}
}

func TestAlterTable(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	id := Ident{"db", "t"}
	tbl, err := s.CreateTable(ctx, id, TableDef{Schema: partSchema, PrimaryKey: []string{"id"}}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, 1, 5}, {2, 2, 6}})
	must(t, s.AlterTable(ctx, id,
		AddColumn{Name: "extra", Type: arrow.BinaryTypes.String},
		RenameColumn{Old: "dt", New: "day"},
		UpdateColumnType{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		SetOption{Key: "write-buffer-size", Value: "1mb"}))
	if err := s.AlterTable(ctx, id, DropColumn{Name: "id"}); err == nil || !strings.Contains(err.Error(), "cannot drop key") {
		t.Fatalf("want key drop error, got %v", err)
	}
	if err := s.AlterTable(ctx, id, UpdateColumnType{Name: "n", Type: arrow.PrimitiveTypes.Int16}); err == nil {
		t.Fatal("want narrowing error")
	}
	if err := s.AlterTable(ctx, id, SetOption{Key: "bucket", Value: "5"}); err == nil {
		t.Fatal("want bucket change error")
	}
	if err := s.AlterTable(ctx, id, SetOption{Key: "write-buffer-size", Value: "lots"}); err == nil {
		t.Fatal("want option validation error")
	}
	must(t, s.AlterTable(ctx, id, RemoveOption{Key: "write-buffer-size"}))
	if err := s.AlterTable(ctx, id, RemoveOption{Key: "bucket"}); err == nil {
		t.Fatal("want error removing bucket")
	}
	tbl, err = s.Table(ctx, id)
	must(t, err)
	if got := tbl.Schema().String(); !strings.Contains(got, "day: type=date32") || !strings.Contains(got, "n: type=int64") || !strings.Contains(got, "extra: type=utf8") {
		t.Fatalf("schema after alter: %s", got)
	}
	sc2 := tbl.Schema()
	b := makeBatch(t, mem, sc2, [][]any{{3, 2, 7, "x"}})
	w := tbl.NewWrite(WriteOptions{})
	must(t, w.Write(ctx, b, Insert))
	b.Release()
	_, err = w.Commit(ctx)
	must(t, err)
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1970-01-02|1|5|NULL", "1970-01-04|2|7|x")
	must(t, s.AlterTable(ctx, id, DropColumn{Name: "n"}))
	tbl, _ = s.Table(ctx, id)
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1970-01-02|1|NULL", "1970-01-04|2|x")
	// Time travel reads an old snapshot with its own schema; the handle
	// reads it with the handle's (a statement's pin across an ALTER).
	old, err := tbl.AsOf(ctx, 1, "")
	must(t, err)
	eqRows(t, scanAll(t, old, ScanSpec{SnapshotID: 1}), "1970-01-02|1|5", "1970-01-03|2|6")
	eqRows(t, scanAll(t, tbl, ScanSpec{SnapshotID: 1}), "1970-01-02|1|NULL", "1970-01-03|2|NULL")
	if _, err := tbl.AsOf(ctx, 99, ""); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("AsOf of a missing snapshot: %v", err)
	}
	must(t, tbl.Compact(ctx, true))
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1970-01-02|1|NULL", "1970-01-04|2|x")
	eqRows(t, scanAll(t, tbl, ScanSpec{Filter: IsNull{Column: "extra"}}), "1970-01-02|1|NULL", "1970-01-04|2|x")
}
