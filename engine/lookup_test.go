package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flightd/flightd/engine"
)

// TestLookupIndexesBounded: per-request options make an index each, so the
// registry is bounded: a client cycling through option sets reuses the
// slots of closed lookups (3,000 sets held 240 MB before), and one holding
// every slot open is refused a new index, as a limit (ResourceExhausted),
// until it closes one.
func TestLookupIndexesBounded(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE dim (k BIGINT NOT NULL, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "INSERT INTO dim VALUES (1, 'a')")
	open := func(i int) (*engine.Lookup, error) {
		return s.OpenLookup(ctx, engine.LookupRequest{Table: []string{"dim"},
			Options: map[string]string{"lookup.partial-cache.max-rows": fmt.Sprint(1000 + i)}})
	}
	for i := range 300 {
		l, err := open(i)
		if err != nil {
			t.Fatalf("option set %d, the earlier ones closed: %v", i, err)
		}
		l.Close()
	}
	var held []*engine.Lookup
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	refused := false
	for i := 0; i < 1000 && !refused; i++ {
		l, err := open(i)
		if err != nil {
			if engine.KindOf(err) != engine.KindExhausted || len(held) == 0 {
				t.Fatalf("option set %d with %d held: %v, want a limit", i, len(held), err)
			}
			refused = true
			continue
		}
		held = append(held, l)
	}
	if !refused {
		t.Fatalf("%d indexes held open and no limit", len(held))
	}
	held[0].Close()
	held = held[1:]
	l, err := open(-1)
	if err != nil {
		t.Fatalf("after closing one of %d: %v", len(held)+1, err)
	}
	l.Close()
}
