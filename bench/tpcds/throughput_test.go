package tpcds

import (
	"fmt"
	"slices"
	"testing"
)

// TestStreamOrder checks that each stream is a permutation of the queries,
// the same for the same seed and stream, and different between streams.
func TestStreamOrder(t *testing.T) {
	var qs []Query
	for i := range 99 {
		qs = append(qs, Query{Name: fmt.Sprintf("%02d", i+1)})
	}
	names := func(o []Query) []string {
		var out []string
		for _, q := range o {
			out = append(out, q.Name)
		}
		return out
	}
	var orders [][]string
	for s := range 4 {
		o := names(StreamOrder(qs, 1, s))
		if !slices.Equal(o, names(StreamOrder(qs, 1, s))) {
			t.Fatalf("stream %d: two calls gave different orders", s)
		}
		sorted := slices.Sorted(slices.Values(o))
		if !slices.Equal(sorted, names(qs)) {
			t.Fatalf("stream %d is not a permutation of the queries: %v", s, o)
		}
		for p, prev := range orders {
			if slices.Equal(o, prev) {
				t.Fatalf("streams %d and %d run in the same order", p, s)
			}
		}
		orders = append(orders, o)
	}
	if slices.Equal(names(StreamOrder(qs, 2, 0)), orders[0]) {
		t.Fatal("seeds 1 and 2 give stream 0 the same order")
	}
}
