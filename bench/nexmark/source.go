package nexmark

import "container/heap"

// Source emits events [0, total) of a config in emission order: in event
// number order, except that a delayed event comes out just before the
// first event not delayed whose time reaches its release (its time plus
// its delay), or at the end.
type Source struct {
	cfg       Config
	next, end int64
	held      heldEvents
}

// NewSource emits the first total events of cfg.
func NewSource(cfg Config, total int64) *Source {
	return &Source{cfg: cfg, end: total}
}

// Next returns up to n more events, none once all have been emitted.
func (s *Source) Next(n int) []Event {
	out := make([]Event, 0, n)
	for len(out) < n {
		if s.next == s.end {
			if len(s.held) == 0 {
				break
			}
			out = append(out, heap.Pop(&s.held).(Event))
			continue
		}
		e := s.cfg.Event(s.next)
		if e.Delay > 0 {
			s.next++
			heap.Push(&s.held, e)
			continue
		}
		if len(s.held) > 0 && s.held[0].Time+s.held[0].Delay <= e.Time {
			out = append(out, heap.Pop(&s.held).(Event))
			continue // e is generated again on the next round
		}
		s.next++
		out = append(out, e)
	}
	return out
}

// heldEvents is a min-heap of delayed events by release time.
type heldEvents []Event

func (h heldEvents) Len() int           { return len(h) }
func (h heldEvents) Less(i, j int) bool { return h[i].Time+h[i].Delay < h[j].Time+h[j].Delay }
func (h heldEvents) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *heldEvents) Push(x any)        { *h = append(*h, x.(Event)) }
func (h *heldEvents) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
