package exec_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// TestKeyRange: a hash join publishes the range of its non-NULL build keys
// when it opens, before it opens its probe side; no key gives lo > hi.
func TestKeyRange(t *testing.T) {
	for _, c := range []struct {
		name   string
		schema string
		build  []string
		lo, hi int64
	}{
		{"ints with NULL", "k:int32", []string{"12", "NULL", "5", "9"}, 5, 12},
		{"dates", "k:date", []string{"2000-01-03", "1999-12-31"}, 10956, 10959},
		{"no rows", "k:int64", nil, 1, 0},
		{"only NULL", "k:int64", []string{"NULL"}, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ec := exec.NewContext(mem)
			build := exectest.NewTable(t, c.schema, c.build...)
			probe := exectest.NewTable(t, c.schema)
			var sources []exec.Operator
			for _, tb := range []exectest.Table{probe, build} {
				var batches []arrow.RecordBatch
				if len(tb.Rows) > 0 {
					b, err := tb.Batch(mem, 0, len(tb.Rows), 1)
					if err != nil {
						t.Fatal(err)
					}
					batches = append(batches, b)
				}
				sources = append(sources, exectest.Source(ec, tb.Schema, batches))
			}
			probeOpened := false
			kr := &exec.KeyRange{}
			left := &openHook{Operator: sources[0], open: func() {
				probeOpened = true
				if _, _, ok := kr.Get(); !ok && len(c.build) > 0 {
					t.Error("probe side opened before the range was published")
				}
			}}
			key := func() []exec.Expr { return []exec.Expr{exec.NewColumn(0, build.Schema.Field(0).Type, "k")} }
			op, err := exec.NewHashJoin(ec, left, sources[1], exec.InnerJoin, key(), key(), nil)
			if err != nil {
				t.Fatal(err)
			}
			op = exec.WithKeyRanges(op, []*exec.KeyRange{kr})
			if _, err := exec.Drain(context.Background(), op); err != nil {
				t.Fatal(err)
			}
			lo, hi, ok := kr.Get()
			if !ok || !probeOpened {
				t.Fatalf("range published %v, probe opened %v", ok, probeOpened)
			}
			if lo > hi && c.lo > c.hi {
				return
			}
			if lo != c.lo || hi != c.hi {
				t.Fatalf("range [%d, %d], want [%d, %d]", lo, hi, c.lo, c.hi)
			}
		})
	}
}

// openHook calls open when the operator opens.
type openHook struct {
	exec.Operator
	open func()
}

func (o *openHook) Open(ctx context.Context) error {
	o.open()
	return o.Operator.Open(ctx)
}

// TestKeySetExpr: after a hash join publishes its build keys, the scan
// filter keeps exactly the probe rows whose key is a build key (not NULL,
// not a value between two build keys, not one outside their range); over
// a span too wide for the key set it keeps the rows inside the range;
// before publication it keeps every row, NULL keys too.
func TestKeySetExpr(t *testing.T) {
	for _, c := range []struct {
		name         string
		schema       string
		build, probe []string
		want         string // one char per probe row: 1 kept
	}{
		{"int32 set", "k:int32", []string{"12", "NULL", "5", "9"},
			[]string{"5", "6", "9", "NULL", "12", "13", "4", "-2147483648", "2147483647"}, "101010000"},
		{"int64 set", "k:int64", []string{"-3", "40"},
			[]string{"-3", "-2", "39", "40", "41", "NULL"}, "100100"},
		{"dates", "k:date", []string{"2000-01-03", "1999-12-31"},
			[]string{"1999-12-31", "2000-01-01", "2000-01-03", "2000-01-04"}, "1010"},
		{"span too wide: range only", "k:int64", []string{"0", "1099511627776"},
			[]string{"0", "1", "1099511627775", "1099511627776", "1099511627777", "-1", "NULL"}, "1111000"},
		{"no build key", "k:int32", nil, []string{"1", "NULL"}, "00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ec := exec.NewContext(mem)
			ctx := context.Background()
			build := exectest.NewTable(t, c.schema, c.build...)
			probe := exectest.NewTable(t, c.schema, c.probe...)
			pb, err := probe.Batch(mem, 0, len(probe.Rows), 1)
			if err != nil {
				t.Fatal(err)
			}
			defer pb.Release()
			kr := &exec.KeyRange{}
			e := &exec.KeySetExpr{Index: 0, Name: "k", Range: kr}
			mask := func() string {
				a, err := e.Eval(ctx, ec, pb)
				if err != nil {
					t.Fatal(err)
				}
				defer a.Release()
				if a.NullN() != 0 || a.Len() != len(c.probe) {
					t.Fatalf("mask of %d rows with %d NULLs", a.Len(), a.NullN())
				}
				var s []byte
				for i := range a.Len() {
					s = append(s, "01"[btoi(a.(*array.Boolean).Value(i))])
				}
				return string(s)
			}
			if got := mask(); got != strings.Repeat("1", len(c.probe)) {
				t.Fatalf("before publication: %s, want every row", got)
			}
			var batches []arrow.RecordBatch
			if len(build.Rows) > 0 {
				b, err := build.Batch(mem, 0, len(build.Rows), 1)
				if err != nil {
					t.Fatal(err)
				}
				batches = append(batches, b)
			}
			key := func() []exec.Expr { return []exec.Expr{exec.NewColumn(0, build.Schema.Field(0).Type, "k")} }
			op, err := exec.NewHashJoin(ec, exectest.Source(ec, probe.Schema, nil), exectest.Source(ec, build.Schema, batches), exec.InnerJoin, key(), key(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := exec.Drain(ctx, exec.WithKeyRanges(op, []*exec.KeyRange{kr})); err != nil {
				t.Fatal(err)
			}
			if got := mask(); got != c.want {
				t.Fatalf("kept %s, want %s", got, c.want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
