package exec

import (
	"context"
	"fmt"
	"io"
	"slices"
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
		out, err := Collect(context.Background(), op)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range out {
			for r := range int(b.NumRows()) {
				var row []string
				for _, c := range b.Columns() {
					row = append(row, c.ValueStr(r))
				}
				got = append(got, fmt.Sprint(row))
			}
			b.Release()
		}
		if err := op.Close(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return got
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
