package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

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

// TestOpenLookupSeesOtherEngine: a lookup opened on one engine (a DoExchange
// of one node) and kept open sees each statement another engine on the
// same warehouse (another node) committed before the lookup's next batch:
// random upserts, updates and deletes, every key compared with the model.
func TestOpenLookupSeesOtherEngine(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 15))
	ctx := context.Background()
	dir := t.TempDir()
	a, memA := openEngine(t, dir)
	defer closeEngine(t, a, memA)
	b, memB := openEngine(t, dir)
	defer closeEngine(t, b, memB)
	sa, sb := a.NewSession(), b.NewSession()
	mustExec(t, sa, "CREATE TABLE dim (k BIGINT NOT NULL, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
	l, err := sb.OpenLookup(ctx, engine.LookupRequest{Table: []string{"dim"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const nKeys = 8
	keys := make([][]any, nKeys+1) // every key and one never written
	for k := range keys {
		keys[k] = []any{k}
	}
	model := map[int]string{}
	for step := range 12 {
		k, v := r.IntN(nKeys), fmt.Sprint("v", r.IntN(1000))
		switch op := r.IntN(4); {
		case op < 2:
			mustExec(t, sa, fmt.Sprintf("INSERT INTO dim VALUES (%d, '%s')", k, v))
			model[k] = v
		case op == 2:
			mustExec(t, sa, fmt.Sprintf("UPDATE dim SET v = '%s' WHERE k = %d", v, k))
			if _, ok := model[k]; ok {
				model[k] = v
			}
		default:
			mustExec(t, sa, fmt.Sprintf("DELETE FROM dim WHERE k = %d", k))
			delete(model, k)
		}
		kb, err := l.KeyBatch(keys)
		if err != nil {
			t.Fatal(err)
		}
		out, snap, err := l.Do(ctx, kb)
		kb.Release()
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		found := out.Column(2).(*array.Boolean)
		for i := range keys {
			want, ok := model[i]
			got := out.Column(1).ValueStr(i)
			if f := found.Value(i); f != ok || ok && got != want {
				out.Release()
				t.Fatalf("step %d (snapshot %d), key %d: found %v, v %s; the other engine committed found %v, v %s", step, snap, i, f, got, ok, want)
			}
		}
		out.Release()
	}
}

// TestLookupIndexKeepsNoSnapshots: the lookup index an UPDATE's key lookup
// opened held the snapshot it read until its next lookup, so expiry kept
// every snapshot from it on: after one UPDATE and 20 INSERTs,
// expire_snapshots with retain_max 1 kept all 23 (files included). It now
// holds the snapshot only while a lookup reads, and its next lookup,
// finding the snapshot expired, reads the latest.
func TestLookupIndexKeepsNoSnapshots(t *testing.T) {
	e := newEngine(t)
	s := e.NewSession()
	// write-only: a compaction committed after the expiry would be a
	// second snapshot (CI saw it).
	mustExec(t, s, "CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('write-only' = 'true')")
	mustExec(t, s, "INSERT INTO u VALUES (1, 0)")
	mustExec(t, s, "UPDATE u SET v = v + 1 WHERE k = 1")
	for i := range 20 {
		mustExec(t, s, fmt.Sprintf("INSERT INTO u VALUES (%d, %d)", i+2, i))
	}
	mustExec(t, s, "INSERT INTO u VALUES (1, 10)") // after the index's snapshot
	mustExec(t, s, "CALL sys.expire_snapshots(table => 'u', retain_max => 1, retain_min => 1)")
	if got := rows(t, s, "SELECT count(*) FROM u$snapshots"); fmt.Sprint(got) != "[[1]]" {
		t.Fatalf("after expiry keeping 1, u keeps %v snapshots", got)
	}
	mustExec(t, s, "UPDATE u SET v = v + 1 WHERE k = 1")
	mustExec(t, s, "UPDATE u SET v = v + 1 WHERE k = 2")
	if got := rows(t, s, "SELECT k, v FROM u WHERE k <= 2 ORDER BY k"); fmt.Sprint(got) != "[[1 11] [2 1]]" {
		t.Fatalf("after updates through the index whose snapshot expired: %v, want [[1 11] [2 1]]", got)
	}
}
