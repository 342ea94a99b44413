package tablestore

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"
)

// TestLeaseOneHolder: several stores on one warehouse (nodes) take, renew,
// stall and release one lease at random, concurrently. Each counts itself
// the holder from when it took the lease (AcquireLease returned; a
// renewal, from just before it publishes the next epoch) until the
// epoch's lifetime, counted from before the call, minus a margin has
// passed (what a job runner does), or until it releases; no two of those
// intervals of different nodes may overlap, and the lease must change
// hands. (Counted from before AcquireLease, a node whose call read the
// record after the holder released it overlapped that holder by the
// call's own duration: a failure of the test's clock, not the lease.)
func TestLeaseOneHolder(t *testing.T) {
	forEachWarehouse(t, func(t *testing.T, wh warehouse) {
		seed := testSeed(t)
		const nodes, ttl, margin = 4, 300 * time.Millisecond, 75 * time.Millisecond
		ctx := context.Background()
		type hold struct {
			node       int
			start, end time.Time
			renewed    bool // held by a renewal, not an acquisition
		}
		var (
			mu    sync.Mutex
			holds []hold
			wg    sync.WaitGroup
		)
		// 4 s, longer (up to 30 s) until two nodes have held it: on a
		// loaded machine one node can keep it for seconds.
		until, giveUp := time.Now().Add(4*time.Second), time.Now().Add(30*time.Second)
		held := map[int]bool{}
		running := func() bool {
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			return now.Before(until) || len(held) < 2 && now.Before(giveUp)
		}
		for n := range nodes {
			s := openStore(t, wh.fs, wh.root, newMem(t))
			t.Cleanup(func() { s.Close() })
			rng := rand.New(rand.NewPCG(seed, uint64(n)))
			owner := "node-" + string(rune('a'+n))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for running() {
					start := time.Now()
					l, err := s.AcquireLease(ctx, "job", owner, ttl)
					if err != nil {
						if !errors.Is(err, ErrLeaseHeld) {
							t.Error(err)
							return
						}
						time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
						continue
					}
					deadline := start.Add(ttl - margin)
					start = time.Now() // held from here: the call read the lease free, then took it
					renewed := false
					for renewals := rng.IntN(5); ; renewals-- {
						// Work, sometimes stalling past the lease.
						time.Sleep(time.Duration(rng.IntN(int(ttl.Milliseconds())*5/4)) * time.Millisecond)
						now := time.Now()
						end := deadline
						if now.Before(end) {
							end = now
						}
						mu.Lock()
						holds = append(holds, hold{n, start, end, renewed})
						held[n] = true
						mu.Unlock()
						if renewals == 0 {
							// A release that comes after the lease was taken
							// (a stall past the check) is refused.
							if err := s.ReleaseLease(ctx, l); err != nil && !errors.Is(err, ErrLeaseHeld) {
								t.Error(err)
							}
							break
						}
						start = time.Now()
						if l, err = s.RenewLease(ctx, l, ttl); err != nil {
							if !errors.Is(err, ErrLeaseHeld) {
								t.Error(err)
							}
							break
						}
						deadline = start.Add(ttl - margin)
						renewed = true
					}
				}
			}()
		}
		wg.Wait()
		sort.Slice(holds, func(i, j int) bool { return holds[i].start.Before(holds[j].start) })
		owners := map[int]bool{}
		for i, h := range holds {
			owners[h.node] = true
			for _, o := range holds[i+1:] {
				if o.start.After(h.end) {
					break
				}
				if o.node != h.node && o.start.Before(h.end) {
					t.Fatalf("seed %d: node %d held the lease %v-%v (renewed: %v) and node %d from %v (renewed: %v)", seed, h.node, h.start, h.end, h.renewed, o.node, o.start, o.renewed)
				}
			}
		}
		if len(owners) < 2 {
			t.Fatalf("seed %d: only nodes %v held the lease in %d holds", seed, owners, len(holds))
		}
		t.Logf("%d holds by %d nodes", len(holds), len(owners))
	})
}

// TestLeaseHolder: the holder is the owner of a lease taken and not yet
// expired or released, "" otherwise, as another store sees it; a bad name
// is an error.
func TestLeaseHolder(t *testing.T) {
	ctx := context.Background()
	stores, clock := twoLeaseStores(t)
	holder := func(want string) {
		t.Helper()
		got, err := stores[1].LeaseHolder(ctx, "job")
		if err != nil || got != want {
			t.Fatalf("LeaseHolder: %q, %v; want %q", got, err, want)
		}
	}
	holder("") // never taken
	l, err := stores[0].AcquireLease(ctx, "job", "a", time.Minute)
	must(t, err)
	holder("a")
	clock.advance(time.Minute)
	holder("") // expired
	l, err = stores[0].AcquireLease(ctx, "job", "b", time.Minute)
	must(t, err)
	holder("b")
	must(t, stores[0].ReleaseLease(ctx, l))
	holder("") // released
	if _, err := stores[1].LeaseHolder(ctx, "../x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("LeaseHolder of a bad name: %v, want ErrInvalid", err)
	}
}

// TestLeaseStaleRenewal: a node that held epoch 1 and stalled past its
// expiry renews after another node took the lease and renewed it twice,
// which removed the record of epoch 2 (two epochs behind): the stale
// renewal publishes epoch 2 into a free slot, and must still fail.
func TestLeaseStaleRenewal(t *testing.T) {
	ctx := context.Background()
	stores, clock := twoLeaseStores(t)
	stale, err := stores[0].AcquireLease(ctx, "job", "a", time.Second)
	must(t, err)
	clock.advance(2 * time.Second)
	l, err := stores[1].AcquireLease(ctx, "job", "b", time.Second)
	must(t, err)
	for range 2 {
		l, err = stores[1].RenewLease(ctx, l, time.Second)
		must(t, err)
	}
	if l.Epoch != 4 {
		t.Fatalf("b holds epoch %d, want 4", l.Epoch)
	}
	if got, err := stores[0].RenewLease(ctx, stale, time.Second); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("a's stale renewal of epoch 1: %+v, %v; want ErrLeaseHeld", got, err)
	}
	if owner, err := stores[0].LeaseHolder(ctx, "job"); err != nil || owner != "b" {
		t.Fatalf("holder %q, %v; want b", owner, err)
	}
	if _, err := stores[1].RenewLease(ctx, l, time.Second); err != nil {
		t.Fatalf("b's renewal after the stale one: %v", err)
	}
}

// twoLeaseStores opens two stores of one warehouse on one fake clock,
// closed at the test's end.
func twoLeaseStores(t *testing.T) ([2]*Store, *fakeClock) {
	dir := t.TempDir()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var stores [2]*Store
	for i := range stores {
		s, err := Open(context.Background(), NewLocalFS(), dir, Options{Mem: newMem(t), Now: clock.Now})
		must(t, err)
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	return stores, clock
}
