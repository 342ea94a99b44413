package nexmark

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestSourceOrder checks that a source emits every event once, the ones
// not delayed in event order, and a delayed one after every event not
// delayed before its release and before the next one (random chunk sizes,
// seed printed).
func TestSourceOrder(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 4))
	cfg := DefaultConfig()
	cfg.ProbDelayedEvent = rng.Float64() / 2
	const n = 20_000
	src := NewSource(cfg, n)
	seen := map[int64]bool{}
	var last, maxTime int64 = -1, 0
	delayed := 0
	var released int64 // release of the last delayed event, until the next event not delayed
	for {
		chunk := src.Next(1 + rng.IntN(3000))
		if len(chunk) == 0 {
			break
		}
		for _, e := range chunk {
			num := eventNumber(t, cfg, e)
			if seen[num] {
				t.Fatalf("event %d emitted twice", num)
			}
			seen[num] = true
			if e.Delay == 0 {
				if num < last {
					t.Fatalf("event %d after %d", num, last)
				}
				if e.Time < released {
					t.Fatalf("event %d at %d came after a delayed event released at %d", num, e.Time, released)
				}
				last, released = num, 0
				maxTime = max(maxTime, e.Time)
			} else {
				delayed++
				if maxTime >= e.Time+e.Delay {
					t.Fatalf("event %d (release %d) emitted after an event at %d", num, e.Time+e.Delay, maxTime)
				}
				released = max(released, e.Time+e.Delay)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("emitted %d events, want %d", len(seen), n)
	}
	if cfg.ProbDelayedEvent > 0.05 && delayed == 0 {
		t.Fatalf("no event delayed at probability %v", cfg.ProbDelayedEvent)
	}
}

// eventNumber finds an emitted event's number from its time: with one
// generator in order, number = (time - base) * rate / 1000, up to the
// events sharing a millisecond, told apart by their content.
func eventNumber(t *testing.T, cfg Config, e Event) int64 {
	delay := cfg.interEventDelayUs()
	lo := (e.Time - cfg.BaseTime) * 1000 / delay
	for num := max(lo-2, 0); num <= lo+1000/delay+2; num++ {
		if c := cfg.Event(num); c.Time == e.Time && c.Kind == e.Kind && c.Person == e.Person && c.Auction == e.Auction && c.Bid == e.Bid {
			return num
		}
	}
	t.Fatalf("emitted event at %d not generated", e.Time)
	return 0
}
