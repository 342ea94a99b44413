package exec_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
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
