package flightsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/flightd/flightd/engine"
)

// plannedQueries keeps the statement GetFlightInfo planned for a ticket
// until the ticket's DoGet, which runs it instead of binding and optimizing
// the query a second time when binding again would give the same plan
// (engine.Statement.Unchanged). Tickets stay self-contained: one whose plan
// is not here (redeemed before, redeemed on another node, older than
// plannedLifetime, or issued while maxPlanned were waiting) is planned
// again at DoGet, as every ticket was before.
type plannedQueries struct {
	mu sync.Mutex
	m  map[string]plannedQuery
}

type plannedQuery struct {
	st *engine.Statement
	at time.Time
}

const (
	// maxPlanned bounds the plans kept for clients that ask for a
	// FlightInfo and never fetch it.
	maxPlanned      = 256
	plannedLifetime = time.Minute
)

// put keeps st and returns the id a ticket names it by ("": not kept).
func (p *plannedQueries) put(st *engine.Statement, now time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= maxPlanned {
		p.expireLocked(now)
		if len(p.m) >= maxPlanned {
			return ""
		}
	}
	if p.m == nil {
		p.m = make(map[string]plannedQuery)
	}
	p.m[id] = plannedQuery{st, now}
	return id
}

// take removes and returns the statement kept under id if it is still
// current, or nil: DoGet plans the query again then.
func (p *plannedQueries) take(ctx context.Context, id string, now time.Time) *engine.Statement {
	p.mu.Lock()
	q, ok := p.m[id]
	delete(p.m, id)
	p.mu.Unlock()
	if !ok || now.Sub(q.at) > plannedLifetime || !q.st.Unchanged(ctx) {
		return nil
	}
	return q.st
}

// expire drops the plans older than plannedLifetime.
func (p *plannedQueries) expire(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
}

func (p *plannedQueries) expireLocked(now time.Time) {
	for id, q := range p.m {
		if now.Sub(q.at) > plannedLifetime {
			delete(p.m, id)
		}
	}
}

func (p *plannedQueries) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
