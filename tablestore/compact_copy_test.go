package tablestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/tablestore/meta"
)

var copySchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "c", Type: arrow.BinaryTypes.String},
}, nil)

// copyTable writes commits of random rows (ids ascending, so that row
// group statistics can skip) to a new append table with the given row
// group size and compacts it fully; it returns the rows written and the
// compacted table's one live file. distinctC, when given, is per commit
// the number of values column c is drawn from (0: a new value each row).
func copyTable(t *testing.T, s *Store, name string, rowGroupRows int, sizes []int, distinctC []int) (*Table, []string, *meta.ManifestEntry) {
	t.Helper()
	ctx := context.Background()
	tbl, err := s.CreateTable(ctx, Ident{"db", name}, TableDef{Schema: copySchema,
		Options: map[string]string{"file.row-group-rows": strconv.Itoa(rowGroupRows), "write-only": "true"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var want []string
	id := 0
	for commit, n := range sizes {
		var rows [][]any
		for range n {
			id++
			row := []any{id, nil, nil, fmt.Sprintf("c%08d", id)}
			if distinctC != nil && distinctC[commit] > 0 {
				row[3] = "c" + strconv.Itoa(rng.IntN(distinctC[commit]))
			}
			if rng.IntN(4) > 0 {
				row[1] = rng.IntN(1000) - 500
			}
			if rng.IntN(10) > 0 {
				row[2] = fmt.Sprintf("s%09d", rng.IntN(1_000_000_000))
			}
			rows = append(rows, row)
			cell := func(v any) string {
				if v == nil {
					return "NULL"
				}
				return fmt.Sprint(v)
			}
			want = append(want, fmt.Sprintf("%d|%s|%s|%s", id, cell(row[1]), cell(row[2]), row[3]))
		}
		writeRows(t, tbl, s.opts.Mem, WriteOptions{}, Insert, rows)
	}
	if err := tbl.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	live := liveEntries(t, tbl)
	if len(live) != 1 {
		t.Fatalf("%s: %d files after a full compaction, want 1", name, len(live))
	}
	return tbl, want, live[0]
}

func liveEntries(t *testing.T, tbl *Table) []*meta.ManifestEntry {
	t.Helper()
	sn, err := tbl.st.resolveSnapshot(0)
	if err != nil {
		t.Fatal(err)
	}
	live, err := tbl.st.liveFiles(sn)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// TestCompactCopyRowGroups compacts an append table whose row groups are
// large enough to copy (minCopyRows) and checks the output against the
// same rows compacted by rewriting: the same rows (scanned, and read by
// arrow-go's own Parquet reader from the file alone), the same file
// statistics, one row group per input file, no page index, and row group
// statistics that still skip. A row group below minConcatRows in the
// inputs makes compaction rewrite them.
func TestCompactCopyRowGroups(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	sizes := []int{1400, 1170, 1600, 1330, 1250, 1500, 1160, 1410}
	copied, want, cf := copyTable(t, s, "copied", 1<<14, sizes, nil) // minCopyRows 1024
	rewritten, want2, rf := copyTable(t, s, "rewritten", 1<<20, sizes, nil)
	if !slices.Equal(want, want2) {
		t.Fatal("the two tables got different rows")
	}
	eqRows(t, scanAll(t, copied, ScanSpec{}), want...)
	eqRows(t, scanAll(t, rewritten, ScanSpec{}), want...)

	pf, err := file.OpenParquetFile(filepath.Join(copied.st.dir, cf.File.Path), false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if pf.NumRowGroups() != len(sizes) {
		t.Fatalf("copied file has %d row groups, want %d (one per input)", pf.NumRowGroups(), len(sizes))
	}
	for i, n := range sizes {
		rg := pf.MetaData().RowGroup(i)
		if rg.NumRows() != int64(n) {
			t.Fatalf("row group %d has %d rows, want %d", i, rg.NumRows(), n)
		}
		for c := range rg.NumColumns() {
			if _, ok := rg.ColumnIndexLocation(c); ok {
				t.Fatalf("row group %d column %d has a page index", i, c)
			}
		}
	}
	if n := pf.NumRows(); n != int64(len(want)) || cf.File.RowCount != n {
		t.Fatalf("copied file: %d rows, manifest %d, want %d", n, cf.File.RowCount, len(want))
	}
	rpf, err := file.OpenParquetFile(filepath.Join(rewritten.st.dir, rf.File.Path), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rpf.Close()
	if rpf.NumRowGroups() != 1 {
		t.Fatalf("rewritten file has %d row groups, want 1", rpf.NumRowGroups())
	}
	got := parquetRows(t, filepath.Join(copied.st.dir, cf.File.Path))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("arrow-go reads the copied file as\n%q\nwant\n%q", got, want)
	}

	if len(cf.File.ValueStats) != len(rf.File.ValueStats) {
		t.Fatalf("stats of %d and %d columns", len(cf.File.ValueStats), len(rf.File.ValueStats))
	}
	for i, c := range cf.File.ValueStats {
		r := rf.File.ValueStats[i]
		if c.ID != r.ID || c.NullCount != r.NullCount || datumStr(c.Min) != datumStr(r.Min) || datumStr(c.Max) != datumStr(r.Max) || c.NDV != r.NDV {
			t.Fatalf("column %d: copied stats %+v (min %s, max %s), rewritten %+v (min %s, max %s)", i, c, datumStr(c.Min), datumStr(c.Max), r, datumStr(r.Min), datumStr(r.Max))
		}
	}
	if cf.File.Level != rf.File.Level || cf.File.FileSource != "COMPACT" || cf.File.SchemaID != rf.File.SchemaID {
		t.Fatalf("copied entry %+v, rewritten %+v", cf.File, rf.File)
	}

	sc, err := copied.NewScan(ctx, ScanSpec{Filter: Compare{Column: "id", Op: GT, Value: scalar.NewInt64Scalar(int64(len(want) - 10))}})
	if err != nil {
		t.Fatal(err)
	}
	// A scan's filter skips data, the caller filters rows: the last
	// row group is read whole.
	rows := readScan(t, sc)
	if len(rows) != sizes[len(sizes)-1] {
		t.Fatalf("filtered scan: %d rows, want the last row group's %d", len(rows), sizes[len(sizes)-1])
	}
	if st := sc.Stats(); st.RowGroupsSkipped != int64(len(sizes)-1) {
		t.Fatalf("filtered scan skipped %d row groups, want %d", st.RowGroupsSkipped, len(sizes)-1)
	}

	// One row group too small to copy or concatenate: rewritten into one
	// row group.
	small, _, e := copyTable(t, s, "small", 1<<14, []int{1400, 100, 1600}, nil)
	if n := rowGroups(t, small, e); n != 1 {
		t.Fatalf("small: %d row groups, want 1 (rewritten)", n)
	}
}

// TestCompactConcatRowGroups: row groups of small commits (below
// minCopyRows, of at least minConcatChunkBytes a column) are concatenated, consecutive ones
// into row groups of at most file.row-group-rows rows, between the large
// ones copied, in commit order. The output holds the rows the same commits
// compacted by rewriting hold, read by a scan and by arrow-go's Parquet
// reader from the file alone; each row group's statistics are those of its
// rows (min and max id, nulls of n and s), so a filter skips them; the file
// statistics are the rewrite's.
func TestCompactConcatRowGroups(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	// Default row groups of 65,536 rows: minCopyRows 4,096; the rows take
	// about 10 bytes a column, so 2,000 rows are concatenated.
	sizes := []int{2000, 2200, 2400, 5000}
	for range 23 {
		sizes = append(sizes, 3000)
	}
	sizes = append(sizes, 2500, 6000)
	groups := []int{6600, 5000, 21 * 3000, 2*3000 + 2500, 6000}
	concat, want, cf := copyTable(t, s, "concat", 1<<16, sizes, nil)
	rewritten, want2, rf := copyTable(t, s, "concat_rewritten", 1<<20, sizes, nil)
	if !slices.Equal(want, want2) {
		t.Fatal("the two tables got different rows")
	}
	inOrder := slices.Clone(want) // eqRows sorts want
	eqRows(t, scanAll(t, concat, ScanSpec{}), want...)
	eqRows(t, scanAll(t, rewritten, ScanSpec{}), want...)
	path := filepath.Join(concat.st.dir, cf.File.Path)
	if got := parquetRows(t, path); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("arrow-go reads the concatenated file as\n%q\nwant\n%q", got, want)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if pf.NumRowGroups() != len(groups) {
		t.Fatalf("%d row groups, want %d", pf.NumRowGroups(), len(groups))
	}
	first := 0
	for i, n := range groups {
		rg := pf.MetaData().RowGroup(i)
		if rg.NumRows() != int64(n) {
			t.Fatalf("row group %d has %d rows, want %d", i, rg.NumRows(), n)
		}
		rows := inOrder[first : first+n]
		first += n
		nulls := []int64{0, 0, 0, 0}
		for _, r := range rows {
			for c, v := range strings.Split(r, "|") {
				if v == "NULL" {
					nulls[c]++
				}
			}
		}
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			st, err := cc.Statistics()
			if err != nil || st == nil {
				t.Fatalf("row group %d column %d: no statistics (%v)", i, c, err)
			}
			if cc.NumValues() != int64(n) || st.NullCount() != nulls[c] {
				t.Fatalf("row group %d column %d: %d values, %d nulls; want %d, %d", i, c, cc.NumValues(), st.NullCount(), n, nulls[c])
			}
			if c == 0 {
				lo, hi := st.(*metadata.Int64Statistics).Min(), st.(*metadata.Int64Statistics).Max()
				if lo != int64(first-n+1) || hi != int64(first) {
					t.Fatalf("row group %d: id from %d to %d, want %d to %d", i, lo, hi, first-n+1, first)
				}
			}
		}
	}
	for i, c := range cf.File.ValueStats {
		r := rf.File.ValueStats[i]
		if c.NullCount != r.NullCount || datumStr(c.Min) != datumStr(r.Min) || datumStr(c.Max) != datumStr(r.Max) || c.NDV != r.NDV {
			t.Fatalf("column %d: concatenated stats %+v, rewritten %+v", i, c, r)
		}
	}
	sc, err := concat.NewScan(ctx, ScanSpec{Filter: Compare{Column: "id", Op: GT, Value: scalar.NewInt64Scalar(int64(len(want) - 10))}})
	if err != nil {
		t.Fatal(err)
	}
	if rows := readScan(t, sc); len(rows) != groups[len(groups)-1] {
		t.Fatalf("filtered scan: %d rows, want the last row group's %d", len(rows), groups[len(groups)-1])
	}
	if st := sc.Stats(); st.RowGroupsSkipped != int64(len(groups)-1) {
		t.Fatalf("filtered scan skipped %d row groups, want %d", st.RowGroupsSkipped, len(groups)-1)
	}
}

// TestCompactCopyCountsDistinct: where inputs know a column's distinct
// count, the copy counts that column's values again, so that its distinct
// counts are those of the same rows compacted by rewriting: exact while
// the union has at most maxTrackedNDV values, unknown (0) beyond, also
// when every input alone had few.
func TestCompactCopyCountsDistinct(t *testing.T) {
	s, _, _ := newTestStore(t)
	for _, c := range []struct {
		name      string
		sizes     []int
		distinctC []int
		ndv       int64 // -1: whatever the rewrite counted, which is not 0
	}{
		{"few", []int{1400, 1200, 1600}, []int{3, 3, 3}, 3},
		{"onefew", []int{1400, 1200, 1600}, []int{0, 3, 0}, 0},
		{"unionfew", []int{1100, 1100, 1100}, []int{400, 400, 400}, -1},
		{"unionmany", []int{1100, 1100, 1100}, []int{2000, 2000, 2000}, 0}, // about 850 a file, 1,600 together
	} {
		copied, want, cf := copyTable(t, s, c.name+"_copied", 1<<14, c.sizes, c.distinctC) // minCopyRows 1024
		_, want2, rf := copyTable(t, s, c.name+"_rewritten", 1<<20, c.sizes, c.distinctC)
		if !slices.Equal(want, want2) {
			t.Fatalf("%s: the two tables got different rows", c.name)
		}
		eqRows(t, scanAll(t, copied, ScanSpec{}), want...)
		if n := rowGroups(t, copied, cf); n != len(c.sizes) {
			t.Fatalf("%s: %d row groups, want %d (copied)", c.name, n, len(c.sizes))
		}
		for i, cs := range cf.File.ValueStats {
			r := rf.File.ValueStats[i]
			if cs.ID != r.ID || cs.NullCount != r.NullCount || datumStr(cs.Min) != datumStr(r.Min) || datumStr(cs.Max) != datumStr(r.Max) || cs.NDV != r.NDV {
				t.Fatalf("%s: column %d: copied stats %+v, rewritten %+v", c.name, i, cs, r)
			}
		}
		if got := cf.File.ValueStats[3].NDV; c.ndv >= 0 && got != c.ndv || c.ndv < 0 && got == 0 {
			t.Fatalf("%s: distinct count of c %d, want %d", c.name, got, c.ndv)
		}
	}
}

func rowGroups(t *testing.T, tbl *Table, e *meta.ManifestEntry) int {
	t.Helper()
	pf, err := file.OpenParquetFile(filepath.Join(tbl.st.dir, e.File.Path), false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	return pf.NumRowGroups()
}

// TestCompactCopyRolls copies inputs past the target file size: the
// output rolls to a new file at a row group boundary, and every row is
// kept once.
func TestCompactCopyRolls(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: copySchema,
		Options: map[string]string{"file.row-group-rows": "16384", "write-only": "true", "target-file-size": "30kb"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 12 {
		var rows [][]any
		for j := range 1100 {
			id := i*1100 + j
			rows = append(rows, []any{id, j, fmt.Sprintf("s%09d", id*7919), fmt.Sprintf("c%d", id)})
			want = append(want, fmt.Sprintf("%d|%d|s%09d|c%d", id, j, id*7919, id))
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
	}
	if err := tbl.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	live := liveEntries(t, tbl)
	var groups int
	for _, e := range live {
		pf, err := file.OpenParquetFile(filepath.Join(tbl.st.dir, e.File.Path), false)
		if err != nil {
			t.Fatal(err)
		}
		groups += pf.NumRowGroups()
		pf.Close()
	}
	if len(live) < 2 || groups != 12 {
		t.Fatalf("%d files with %d row groups after compacting 12 files past the target size, want 2 or more with 12", len(live), groups)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
}

// TestCompactCopyCorrupt damages one input of a copying compaction: it
// fails with ErrCorrupt (as a rewrite would, reading it) and publishes
// nothing.
func TestCompactCopyCorrupt(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: copySchema,
		Options: map[string]string{"file.row-group-rows": "16384", "write-only": "true"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		var rows [][]any
		for j := range 1100 {
			id := i*1100 + j
			rows = append(rows, []any{id, j, fmt.Sprintf("s%d", id), fmt.Sprintf("c%d", id)})
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
	}
	before := liveEntries(t, tbl)
	path := filepath.Join(tbl.st.dir, before[1].File.Path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Compact(ctx, true); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("compaction over a damaged file: %v, want ErrCorrupt", err)
	}
	after := liveEntries(t, tbl)
	if len(after) != len(before) {
		t.Fatalf("%d live files after the failed compaction, want %d", len(after), len(before))
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(before) {
		t.Fatalf("%d files in the bucket after the failed compaction, want %d (no output left behind)", len(entries), len(before))
	}
}

// TestCompactCopyReadsOnce: compaction by copy reads each input whole
// once (to check it and copy its row groups) and only the footer besides:
// deciding from whole reads first read every input twice.
func TestCompactCopyReadsOnce(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	fsys := &readCountingFS{FS: NewLocalFS()}
	s := openStore(t, fsys, t.TempDir(), mem)
	t.Cleanup(func() { s.Close() })
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	sizes := []int{1400, 1170, 1600, 1330, 1250}
	before := fsys.read.Load()
	tbl, want, out := copyTable(t, s, "t", 1<<14, sizes, nil) // minCopyRows 1024: copied
	read := fsys.read.Load() - before
	eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
	// The inputs are still on disk beside the output (until expiry).
	inputs := -out.File.FileSize
	err := filepath.WalkDir(tbl.st.dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "data-") {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			inputs += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if read < inputs || read > inputs*5/4 {
		t.Fatalf("compaction read %d bytes of data files holding %d, want them whole once (at most 1.25x)", read, inputs)
	}
}

// readCountingFS counts the bytes read from data files.
type readCountingFS struct {
	FS
	read atomic.Int64
}

func (c *readCountingFS) Open(name string) (ReadFile, error) {
	f, err := c.FS.Open(name)
	if err != nil || !strings.HasPrefix(path.Base(name), "data-") {
		return f, err
	}
	return &readCountingFile{ReadFile: f, n: &c.read}, nil
}

type readCountingFile struct {
	ReadFile
	n *atomic.Int64
}

func (f *readCountingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.ReadFile.ReadAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

// parquetRows reads a Parquet file with arrow-go alone, rows rendered as
// readScan renders them, sorted.
func parquetRows(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem := newMem(t)
	tab, err := pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Release()
	tr := array.NewTableReader(tab, 0)
	defer tr.Release()
	var rows []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := range int(rec.NumRows()) {
			var cells []string
			for c := range int(rec.NumCols()) {
				cells = append(cells, cellString(rec.Column(c), i))
			}
			rows = append(rows, strings.Join(cells, "|"))
		}
	}
	slices.Sort(rows)
	return rows
}

func datumStr(d *meta.Datum) string {
	if d == nil {
		return "none"
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// concatenatedPages counts the data pages of the first column chunk of e's
// first row group.
func concatenatedPages(t *testing.T, tbl *Table, e *meta.ManifestEntry) int {
	t.Helper()
	pf, err := file.OpenParquetFile(filepath.Join(tbl.st.dir, e.File.Path), false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	pr, err := pf.RowGroup(0).GetColumnPageReader(0)
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for pr.Next() {
		if _, ok := pr.Page().(file.DataPage); ok {
			pages++
		}
	}
	if err := pr.Err(); err != nil {
		t.Fatal(err)
	}
	return pages
}
