package stream

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// TestRowtimeTemporalSpills is TestWindowAggregateSpills for event-time
// temporal joins (LEFT in the helper's first run, inner in the others):
// a join key's waiting probe rows and versions go to disk together and
// come back on a change or when the watermark reaches their first probe
// row. Which keys are on disk stays in memory (about 60 bytes each), so
// the test has 200 keys under 16 KB.
func TestRowtimeTemporalSpills(t *testing.T) {
	testWindowSpills(t, 16<<10, 200, 20_000, func(ec *exec.Context, in Operator, ws Windows, b *Budget) (Operator, func() *spillStore, error) {
		k, ts := []exec.Expr{col(1, "k")}, exec.NewColumn(3, eventTS, "ts")
		spec := RowtimeTemporalSpec{Outer: ws.Kind == Tumble, ProbeKeys: k, TableKeys: k, ProbeTime: ts, TableTime: ts}
		j, err := NewRowtimeTemporal(ec, in, newEvents(ec.Mem, 42, 256, 20_000, 200), spec, b)
		return j, func() *spillStore {
			if j == nil {
				return nil
			}
			return j.store
		}, err
	})
}

// BenchmarkRowtimeTemporal: events per second (both inputs together)
// through an event-time temporal join on k over 1000 keys (each probe
// row meets the version of its key at its time), 1024 events per
// snapshot; inner and LEFT.
func BenchmarkRowtimeTemporal(b *testing.B) {
	for _, outer := range []bool{false, true} {
		b.Run(map[bool]string{false: "inner", true: "left"}[outer], func(b *testing.B) {
			mem := memory.NewGoAllocator()
			ec := exec.NewContext(mem)
			side := func(seed int64) *events { return newEvents(mem, seed, 1024, b.N/2, 1000) }
			k, ts := []exec.Expr{col(1, "k")}, exec.NewColumn(3, eventTS, "ts")
			j, err := NewRowtimeTemporal(ec, side(1), side(2), RowtimeTemporalSpec{Outer: outer, ProbeKeys: k, TableKeys: k, ProbeTime: ts, TableTime: ts}, NewBudget(0))
			if err != nil {
				b.Fatal(err)
			}
			benchEvents(b, j)
		})
	}
}
