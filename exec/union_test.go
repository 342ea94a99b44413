package exec_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// running counts the children of a union that are open and not finished.
type running struct {
	exec.Operator
	now, most *atomic.Int64
	done      bool
}

func (r *running) Open(ctx context.Context) error {
	if n := r.now.Add(1); n > r.most.Load() {
		r.most.Store(n)
	}
	return r.Operator.Open(ctx)
}

func (r *running) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := r.Operator.Next(ctx)
	if err != nil && !r.done {
		r.done = true
		r.now.Add(-1)
	}
	return b, err
}

// UNION ALL opens a branch when it comes to it: a branch under a Gather
// runs ahead from its Open, so opening them all ran every branch at once
// (250 of them held 6.2 GB).
func TestUnionAllOpensBranchesInTurn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	var now, most atomic.Int64
	var branches []exec.Operator
	var batches []arrow.RecordBatch
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	vals := make([]*int64, 1000)
	for range 50 {
		b := intBatch(mem, schema, vals)
		batches = append(batches, b)
		src := exectest.Source(ec, b.Schema(), []arrow.RecordBatch{b})
		branches = append(branches, &running{Operator: src, now: &now, most: &most})
	}
	defer release(batches)
	u, err := exec.NewUnionAll(ec, branches...)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	rows, err := exec.Drain(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	if rows != 50*1000 || most.Load() != 1 {
		t.Fatalf("%d rows, %d branches open at once; want 50,000 and 1", rows, most.Load())
	}
}
