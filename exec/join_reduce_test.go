package exec

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// sliceSource yields batches it does not own.
type sliceSource struct{ bs []arrow.RecordBatch }

func (s *sliceSource) Next(context.Context) (arrow.RecordBatch, error) {
	if len(s.bs) == 0 {
		return nil, io.EOF
	}
	b := s.bs[0]
	s.bs = s.bs[1:]
	return b, nil
}

func (s *sliceSource) Close() error { return nil }

// TestJoinReducesBuild: a hash join whose probe side ends within
// maxReduceRows builds only the build rows whose key a probe row has
// (inner, left, semi, anti), builds all of them for right and full joins
// and past maxReduceRows (the rows read ahead replayed), and answers as
// the nested-loop join does.
func TestJoinReducesBuild(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	// rows makes n rows, k = key(i) (-1: NULL), v = i, in batches of 1000.
	rows := func(n int, key func(i int) int64) []arrow.RecordBatch {
		var out []arrow.RecordBatch
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := range n {
			if k := key(i); k < 0 {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(k)
			}
			b.Field(1).(*array.Int64Builder).Append(int64(i))
			if b.Field(1).Len() == 1000 || i == n-1 {
				out = append(out, b.NewRecordBatch())
			}
		}
		return out
	}
	small := rows(4, func(i int) int64 { return []int64{1, 2, 2, -1}[i] })
	big := rows(10_000, func(i int) int64 { return int64(i % 1000) })
	many := rows(maxReduceRows+1000, func(i int) int64 { return int64(i % 50) })
	few := rows(100, func(i int) int64 { return int64(i%70) - 1 })
	defer func() {
		for _, bs := range [][]arrow.RecordBatch{small, big, many, few} {
			releaseBatches(bs)
		}
	}()
	k := func(i int) Expr { return NewColumn(i, arrow.PrimitiveTypes.Int64, "k") }
	cond, err := NewCall("equal", k(0), k(2))
	if err != nil {
		t.Fatal(err)
	}
	run := func(op Operator) []string {
		t.Helper()
		return sortedRows(t, op, func(b arrow.RecordBatch, r int) string {
			var row []string
			for _, c := range b.Columns() {
				row = append(row, c.ValueStr(r))
			}
			return fmt.Sprint(row)
		})
	}
	for _, c := range []struct {
		name        string
		left, right []arrow.RecordBatch
		reduced     int // build rows of the reducible joins
	}{
		{"small probe side", small, big, 20},
		{"past maxReduceRows", many, few, 100},
	} {
		for _, typ := range []JoinType{InnerJoin, LeftJoin, SemiJoin, AntiJoin, RightJoin, FullJoin} {
			t.Run(fmt.Sprint(c.name, " ", typ), func(t *testing.T) {
				ec := NewContext(mem)
				src := func(bs []arrow.RecordBatch) Operator {
					return NewSource(ec, schema, func(context.Context) (BatchSource, error) { return &sliceSource{bs: bs}, nil })
				}
				op, err := NewHashJoin(ec, src(c.left), src(c.right), typ, []Expr{k(0)}, []Expr{k(0)}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := op.Open(context.Background()); err != nil {
					t.Fatal(err)
				}
				want := c.reduced
				if typ == RightJoin || typ == FullJoin {
					want = 0
					for _, b := range c.right {
						want += int(b.NumRows())
					}
				}
				if n := op.(*joinOp).build.n; n != want {
					t.Errorf("built %d rows, want %d", n, want)
				}
				got := run(op)
				nl, err := NewNestedLoopJoin(ec, src(c.left), src(c.right), typ, cond)
				if err != nil {
					t.Fatal(err)
				}
				if exp := run(nl); !slices.Equal(got, exp) {
					t.Fatalf("%d rows, want %d:\ngot  %.300q\nwant %.300q", len(got), len(exp), got, exp)
				}
			})
		}
	}
}

// TestJoinReadAheadWithinBudget: the rows a hash join reads ahead of its
// probe side count against the memory budget. Four probe rows of 300 KB
// strings are over a quarter of a 1 MiB limit, and over what a 1 MiB pool
// grants: the join gives up the reduction and builds all 10,000 build rows
// (it held the 1.2 MB uncharged before, and 8192 such rows would have been
// 2.4 GB). Without a budget it reduces the build to the 20 rows of the
// probe's keys. Every way, it answers as the nested-loop join does, and the
// pool holds nothing after Close.
func TestJoinReadAheadWithinBudget(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	probeSchema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	pb := array.NewRecordBuilder(mem, probeSchema)
	for i, k := range []int64{1, 2, 2, -1} {
		if k < 0 {
			pb.Field(0).AppendNull()
		} else {
			pb.Field(0).(*array.Int64Builder).Append(k)
		}
		pb.Field(1).(*array.StringBuilder).Append(strings.Repeat(fmt.Sprint(i), 300_000))
	}
	probe := pb.NewRecordBatch()
	pb.Release()
	defer probe.Release()
	buildSchema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	bb := array.NewRecordBuilder(mem, buildSchema)
	for i := range 10_000 {
		bb.Field(0).(*array.Int64Builder).Append(int64(i % 1000))
		bb.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	build := bb.NewRecordBatch()
	bb.Release()
	defer build.Release()
	k := func(i int) Expr { return NewColumn(i, arrow.PrimitiveTypes.Int64, "k") }
	cond, err := NewCall("equal", k(0), k(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		limit int64
		pool  int64
		built int
	}{
		{"no budget", 0, 0, 20},
		{"limit", 1 << 20, 0, 10_000},
		{"pool", 0, 1 << 20, 10_000},
		{"pool with room", 0, 64 << 20, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			ec := NewContext(mem)
			ec.MemoryLimit = c.limit
			if c.pool > 0 {
				ec.Pool = NewMemoryPool(c.pool)
			}
			src := func(s *arrow.Schema, b arrow.RecordBatch) Operator {
				return NewSource(ec, s, func(context.Context) (BatchSource, error) { return &sliceSource{bs: []arrow.RecordBatch{b}}, nil })
			}
			// The 300 KB strings by their length.
			rows := func(op Operator) []string {
				t.Helper()
				return sortedRows(t, op, func(b arrow.RecordBatch, r int) string {
					return fmt.Sprint(b.Column(0).ValueStr(r), len(b.Column(1).ValueStr(r)), b.Column(3).ValueStr(r))
				})
			}
			op, err := NewHashJoin(ec, src(probeSchema, probe), src(buildSchema, build), InnerJoin, []Expr{k(0)}, []Expr{k(0)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := op.(*joinOp).build.n; n != c.built {
				t.Errorf("built %d rows, want %d", n, c.built)
			}
			got := rows(op)
			nl, err := NewNestedLoopJoin(ec, src(probeSchema, probe), src(buildSchema, build), InnerJoin, cond)
			if err != nil {
				t.Fatal(err)
			}
			if want := rows(nl); len(got) != 30 || !slices.Equal(got, want) {
				t.Fatalf("%d rows, want 30 as the nested-loop join's %d:\ngot  %.200q\nwant %.200q", len(got), len(want), got, want)
			}
			if ec.Pool != nil && ec.Pool.Reserved() != 0 {
				t.Errorf("the pool holds %d bytes after Close", ec.Pool.Reserved())
			}
		})
	}
}

// sortedRows drains and closes op, and returns row(b, r) of every row,
// sorted.
func sortedRows(t *testing.T, op Operator, row func(b arrow.RecordBatch, r int) string) []string {
	t.Helper()
	out, err := Collect(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range out {
		for r := range int(b.NumRows()) {
			got = append(got, row(b, r))
		}
		b.Release()
	}
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}
