package engine

import (
	"testing"
	"time"
)

// TestCheckpointPause: a job asks for its next checkpoint an interval
// after its last commit, unless its last checkpoint cost more than a
// checkpointPause-th of that: then only checkpointPause times that cost
// after, so a large state's checkpoints cannot take most of its time.
func TestCheckpointPause(t *testing.T) {
	last := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		cost, since time.Duration
		due         bool
	}{
		{0, 999 * time.Millisecond, false},
		{0, time.Second, true},
		{100 * time.Millisecond, time.Second, true}, // 4 x 100 ms < 1 s
		{300 * time.Millisecond, time.Second, false},
		{300 * time.Millisecond, 1199 * time.Millisecond, false},
		{300 * time.Millisecond, 1200 * time.Millisecond, true},
		{3 * time.Second, 11 * time.Second, false},
		{3 * time.Second, 12 * time.Second, true},
	} {
		a := &applier{interval: time.Second, cost: c.cost, lastCommit: last}
		if got := a.checkpointDue(last.Add(c.since)); got != c.due {
			t.Errorf("checkpoint cost %v, %v after the last commit: due %v, want %v", c.cost, c.since, got, c.due)
		}
	}
}
