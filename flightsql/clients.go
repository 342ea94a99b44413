package flightsql

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/peer"
)

// caller identifies who makes a call. user is the authenticated user (""
// without authentication); owner is what per-client limits count against:
// the user, or without authentication the connection (its remote address),
// so one connection exhausting its share leaves every other one its own.
// conn is the connection's remote address ("" when unknown).
type caller struct {
	user, owner, conn string
}

func callerOf(ctx context.Context) caller {
	var conn string
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		conn = p.Addr.String()
	}
	switch u := userOf(ctx); {
	case u != "":
		return caller{user: u, owner: "user " + u, conn: conn}
	case conn != "":
		return caller{owner: "connection " + conn, conn: conn}
	}
	return caller{owner: "connection ?"}
}

// registry holds server-side state that clients open by handle (prepared
// statements, transactions): at most max entries per owner, each dropped
// once no call has used it for idle. A call uses an entry from get until it
// ends, so a statement running longer than idle keeps its transaction.
// Only the user who opened an entry can use it (everyone, without
// authentication).
type registry[T any] struct {
	what string // "prepared statements", for errors
	max  int
	idle time.Duration

	mu       sync.Mutex
	m        map[string]*regEntry[T]
	perOwner map[string]int
}

type regEntry[T any] struct {
	v      T
	c      caller
	added  time.Time
	usedN  int64 // time.Time.UnixNano of the end of the last use
	active int   // calls using it now
}

func newRegistry[T any](what string, max int, idle time.Duration) *registry[T] {
	return &registry[T]{what: what, max: max, idle: idle, m: make(map[string]*regEntry[T]), perOwner: make(map[string]int)}
}

// add registers v under key, or fails with errExhausted when c's owner
// holds max entries already.
func (r *registry[T]) add(c caller, key string, v T) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.perOwner[c.owner] >= r.max {
		return fmt.Errorf("%s holds %d open %s, the most one client may; close some first (unused ones close after %v): %w",
			c.owner, r.max, r.what, r.idle, errExhausted)
	}
	now := time.Now()
	r.m[key] = &regEntry[T]{v: v, c: c, added: now, usedN: now.UnixNano()}
	r.perOwner[c.owner]++
	return nil
}

// visible returns the entry under key if c may see it (r.mu held).
func (r *registry[T]) visible(c caller, key string) (*regEntry[T], bool) {
	e, ok := r.m[key]
	if !ok || e.c.user != c.user {
		return nil, false
	}
	return e, true
}

// get returns the entry's value; the call (ctx) uses it until it ends.
func (r *registry[T]) get(ctx context.Context, c caller, key string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.visible(c, key)
	if !ok {
		var zero T
		return zero, false
	}
	e.active++
	context.AfterFunc(ctx, func() { // gRPC cancels a call's context when it ends
		r.mu.Lock()
		defer r.mu.Unlock()
		e.active--
		e.usedN = time.Now().UnixNano()
	})
	return e.v, true
}

// addedSince returns the keys of the entries c opened over its connection
// after since, of those keep admits.
func (r *registry[T]) addedSince(c caller, since time.Time, keep func(T) bool) []string {
	if c.conn == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for k, e := range r.m {
		if e.c == c && e.added.After(since) && keep(e.v) {
			keys = append(keys, k)
		}
	}
	return keys
}

// remove takes the entry out; false if c may not see it.
func (r *registry[T]) remove(c caller, key string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.visible(c, key)
	if !ok {
		var zero T
		return zero, false
	}
	r.drop(key, e)
	return e.v, true
}

func (r *registry[T]) drop(key string, e *regEntry[T]) {
	delete(r.m, key)
	if r.perOwner[e.c.owner]--; r.perOwner[e.c.owner] <= 0 {
		delete(r.perOwner, e.c.owner)
	}
}

// expired takes out the entries no call used since before now-idle.
func (r *registry[T]) expired(now time.Time) map[string]T {
	cut := now.Add(-r.idle).UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]T)
	for k, e := range r.m {
		if e.active == 0 && e.usedN < cut {
			r.drop(k, e)
			out[k] = e.v
		}
	}
	return out
}

// all takes out every entry.
func (r *registry[T]) all() map[string]T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]T, len(r.m))
	for k, e := range r.m {
		out[k] = e.v
	}
	r.m = make(map[string]*regEntry[T])
	r.perOwner = make(map[string]int)
	return out
}
