package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// outcome of a write as its client saw it.
type outcome int8

const (
	pending outcome = iota // sent when flightd was killed: may or may not be there
	acked
	failed // failed before the kill: must have no effect
)

// killModel is what the clients of TestKill9WriteModel did, to check the
// tables against after each restart.
type killModel struct {
	mu     sync.Mutex
	incs   map[string]outcome // increment id -> outcome
	pairs  [][2]string        // ids incremented together by one transaction
	appIDs map[int64]outcome  // rows of app by id: all rows of a statement share its outcome
	stmtOf map[int64]int64    // app row id -> first id of its statement
	gens   map[int][]owGen    // overwrites of each partition of ow, in order
}

type owGen struct {
	g    int64
	rows int
	out  outcome
}

// TestKill9WriteModel kills a real flightd with SIGKILL while clients over
// ADBC write at once: counters incremented by UPDATE (autocommit, and two
// at a time in transactions) that record their increments' ids, appends
// by INSERT and bulk ingest, INSERT OVERWRITE of partitions, while another
// client compacts and expires snapshots. After each restart: every
// acknowledged increment is in its counter once, every id there was sent
// and did not fail, a transaction's two increments are both there or
// neither; every acknowledged append is there once and a pending one whole
// or not at all; each partition holds one overwrite whole, the last
// acknowledged or one pending after it.
func TestKill9WriteModel(t *testing.T) {
	p, rng, seed := startKill9(t)
	cnxn, closeConn := p.connect(t)
	for _, q := range []string{
		`CREATE TABLE cnt (k INT NOT NULL, v BIGINT, h STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2', 'num-sorted-run.compaction-trigger' = '2')`,
		`INSERT INTO cnt VALUES (0, 0, ''), (1, 0, ''), (2, 0, ''), (3, 0, '')`,
		`CREATE TABLE app (id BIGINT, c INT)`,
		`CREATE TABLE ow (p INT NOT NULL, k INT NOT NULL, g BIGINT, PRIMARY KEY (p, k) NOT ENFORCED) PARTITIONED BY (p) WITH ('bucket' = '1')`,
	} {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	closeConn()
	m := &killModel{incs: map[string]outcome{}, appIDs: map[int64]outcome{}, stmtOf: map[int64]int64{}, gens: map[int][]owGen{}}
	var nextApp atomic.Int64
	var nextGen atomic.Int64
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rounds := killRounds(t, "FLIGHTD_KILL_MODEL_ROUNDS", 4)
	for round := range rounds {
		var killed atomic.Bool
		// classify records err of a write: 40001 before the kill is a
		// failure without effect, any error after it leaves the write
		// pending; another error before the kill fails the test.
		classify := func(what string, err error) outcome {
			switch {
			case err == nil:
				return acked
			case killed.Load():
				return pending
			case strings.Contains(err.Error(), "40001"):
				return failed
			}
			t.Errorf("round %d: %s: %v", round, what, err)
			return pending
		}
		type client struct {
			cnxn  adbc.Connection
			close func()
		}
		var clients []client
		for range 7 {
			c, cl := p.connect(t)
			clients = append(clients, client{c, cl})
		}
		var wg sync.WaitGroup
		run := func(i int, body func(c adbc.Connection, rng *rand.Rand) bool) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(round*100+i)))
				for !killed.Load() && body(clients[i].cnxn, rng) {
				}
			}()
		}
		for i := range 2 { // counters
			txnMode := false
			run(i, func(c adbc.Connection, rng *rand.Rand) bool {
				if rng.IntN(3) > 0 {
					if txnMode {
						if err := c.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueEnabled); err != nil {
							classify("autocommit on", err)
							return false
						}
						txnMode = false
					}
					id := fmt.Sprintf("r%dc%dn%d", round, i, rng.Uint32())
					err := execSQL(c, fmt.Sprintf(`UPDATE cnt SET v = v + 1, h = h || ',%s' WHERE k = %d`, id, rng.IntN(4)))
					out := classify("UPDATE", err)
					m.mu.Lock()
					m.incs[id] = out
					m.mu.Unlock()
					return err == nil || out == failed
				}
				if !txnMode {
					if err := c.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
						classify("autocommit off", err)
						return false
					}
					txnMode = true
				}
				a := rng.IntN(4)
				b := (a + 1 + rng.IntN(3)) % 4
				ids := [2]string{fmt.Sprintf("r%dc%dt%d", round, i, rng.Uint32()), fmt.Sprintf("r%dc%du%d", round, i, rng.Uint32())}
				err := execSQL(c, fmt.Sprintf(`UPDATE cnt SET v = v + 1, h = h || ',%s' WHERE k = %d`, ids[0], a))
				if err == nil {
					err = execSQL(c, fmt.Sprintf(`UPDATE cnt SET v = v + 1, h = h || ',%s' WHERE k = %d`, ids[1], b))
				}
				if err == nil {
					err = c.Commit(context.Background())
				} else {
					_ = c.Rollback(context.Background())
				}
				out := classify("transaction", err)
				m.mu.Lock()
				m.incs[ids[0]], m.incs[ids[1]] = out, out
				m.pairs = append(m.pairs, ids)
				m.mu.Unlock()
				// After a failed commit the Go driver cannot go on
				// (docs/STATUS.md): this client stops for the round.
				return err == nil
			})
		}
		for i := 2; i < 4; i++ { // appends: INSERT (client 2) and bulk ingest (client 3)
			run(i, func(c adbc.Connection, rng *rand.Rand) bool {
				n := 1 + rng.IntN(5)
				lo := nextApp.Add(int64(n)) - int64(n) + 1
				var err error
				if i == 2 {
					var vals []string
					for id := lo; id < lo+int64(n); id++ {
						vals = append(vals, fmt.Sprintf("(%d, %d)", id, round))
					}
					err = execSQL(c, `INSERT INTO app VALUES `+strings.Join(vals, ", "))
				} else {
					rdr := appBatch(mem, lo, n, round)
					err = ingestStream(c, "app", adbc.OptionValueIngestModeAppend, rdr)
					rdr.Release()
				}
				out := classify("append", err)
				m.mu.Lock()
				for id := lo; id < lo+int64(n); id++ {
					m.appIDs[id], m.stmtOf[id] = out, lo
				}
				m.mu.Unlock()
				return err == nil
			})
		}
		for i := 4; i < 6; i++ { // INSERT OVERWRITE of partition i-4
			part := i - 4
			run(i, func(c adbc.Connection, rng *rand.Rand) bool {
				g := nextGen.Add(1)
				n := 1 + rng.IntN(6)
				var vals []string
				for k := range n {
					vals = append(vals, fmt.Sprintf("(%d, %d)", k, g))
				}
				err := execSQL(c, fmt.Sprintf(`INSERT OVERWRITE ow PARTITION (p = %d) SELECT * FROM (VALUES %s) AS x(k, g)`, part, strings.Join(vals, ", ")))
				out := classify("overwrite", err)
				m.mu.Lock()
				m.gens[part] = append(m.gens[part], owGen{g: g, rows: n, out: out})
				m.mu.Unlock()
				return err == nil
			})
		}
		run(6, func(c adbc.Connection, rng *rand.Rand) bool { // maintenance
			tbl := []string{"cnt", "app", "ow"}[rng.IntN(3)]
			q := fmt.Sprintf(`CALL sys.compact(table => '%s')`, tbl)
			if rng.IntN(2) == 0 {
				q = fmt.Sprintf(`CALL sys.expire_snapshots(table => '%s', retain_max => 3, retain_min => 1)`, tbl)
			}
			if err := execSQL(c, q); err != nil && !killed.Load() && !strings.Contains(err.Error(), "40001") && !strings.Contains(err.Error(), "conflict") {
				t.Errorf("round %d: %s: %v", round, q, err)
			}
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
			return true
		})
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		killed.Store(true)
		p.kill(t)
		wg.Wait()
		_ = p.cmd.Wait()
		for _, c := range clients {
			c.close()
		}
		p = start(t, p.bin, p.dataDir, p.flags...)
		check, closeCheck := p.connect(t)
		m.check(t, check, round, seed)
		closeCheck()
		if t.Failed() {
			break
		}
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("flightd did not exit cleanly on SIGTERM: %v", err)
	}
}

// appBatch is n rows of app: ids lo.. and c = round.
func appBatch(mem memory.Allocator, lo int64, n, round int) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "c", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for id := lo; id < lo+int64(n); id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Int32Builder).Append(int32(round))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	return rdr
}

// check compares the tables after a restart with the model, and settles
// pending writes as found: a write pending at one kill is not pending
// again at the next.
func (m *killModel) check(t *testing.T, cnxn adbc.Connection, round int, seed int64) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(format string, args ...any) {
		t.Errorf("round %d (seed %d): "+format, append([]any{round, seed}, args...)...)
	}
	seen := map[string]int{}
	for _, r := range rowsOf(t, cnxn, `SELECT k, v, h FROM cnt`, "|") {
		f := strings.SplitN(r, "|", 3)
		ids := strings.Split(f[2], ",")[1:]
		if f[1] != strconv.Itoa(len(ids)) {
			fail("counter %s = %s with %d increments in its history", f[0], f[1], len(ids))
		}
		for _, id := range ids {
			seen[id]++
		}
	}
	n := 0
	for id, out := range m.incs {
		switch {
		case seen[id] > 1:
			fail("increment %s applied %d times", id, seen[id])
		case out == acked && seen[id] == 0:
			fail("acknowledged increment %s lost", id)
		case out == failed && seen[id] > 0:
			fail("failed increment %s applied", id)
		case out == pending:
			m.incs[id] = failed
			if seen[id] > 0 {
				m.incs[id] = acked
			}
		}
		n += seen[id]
	}
	for id := range seen {
		if _, ok := m.incs[id]; !ok {
			fail("increment %q never sent", id)
		}
	}
	for _, pr := range m.pairs {
		if (seen[pr[0]] > 0) != (seen[pr[1]] > 0) {
			fail("transaction's increments %s and %s: one applied, %d and %d", pr[0], pr[1], seen[pr[0]], seen[pr[1]])
		}
	}
	count := map[int64]int{}
	err := query(cnxn, `SELECT id FROM app`, func(b arrow.RecordBatch) {
		col := b.Column(0).(*array.Int64)
		for i := range col.Len() {
			count[col.Value(i)]++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	stmtSeen := map[int64]map[bool]bool{}
	for id, out := range m.appIDs {
		c := count[id]
		switch {
		case c > 1:
			fail("append %d there %d times", id, c)
		case out == acked && c == 0:
			fail("acknowledged append %d lost", id)
		case out == failed && c > 0:
			fail("failed append %d there", id)
		}
		if stmtSeen[m.stmtOf[id]] == nil {
			stmtSeen[m.stmtOf[id]] = map[bool]bool{}
		}
		stmtSeen[m.stmtOf[id]][c > 0] = true
	}
	for lo, s := range stmtSeen {
		if len(s) > 1 {
			fail("append statement from id %d is there in part", lo)
		}
	}
	for id := range m.appIDs {
		if m.appIDs[id] == pending {
			m.appIDs[id] = failed
			if count[id] > 0 {
				m.appIDs[id] = acked
			}
		}
	}
	for id := range count {
		if _, ok := m.appIDs[id]; !ok {
			fail("append %d never sent", id)
		}
	}
	parts := map[int]map[int64]int{}
	for _, r := range rowsOf(t, cnxn, `SELECT p, g FROM ow`, "|") {
		f := strings.Split(r, "|")
		pp, _ := strconv.Atoi(f[0])
		g, _ := strconv.ParseInt(f[1], 10, 64)
		if parts[pp] == nil {
			parts[pp] = map[int64]int{}
		}
		parts[pp][g]++
	}
	for part, gs := range m.gens {
		got := parts[part]
		if len(got) == 0 && !slices.ContainsFunc(gs, func(g owGen) bool { return g.out == acked }) {
			for j := range gs {
				gs[j].out = failed // pending, not there
			}
			continue
		}
		if len(got) != 1 {
			fail("partition %d holds generations %v", part, got)
			continue
		}
		last := -1 // index of the last acknowledged overwrite
		for i, g := range gs {
			if g.out == acked {
				last = i
			}
		}
		ok := false
		for i, g := range gs {
			if got[g.g] > 0 {
				ok = got[g.g] == g.rows && g.out != failed && i >= last
				if !ok {
					fail("partition %d holds %d rows of overwrite %d (%d written, outcome %d, last acknowledged index %d of %d)", part, got[g.g], g.g, g.rows, g.out, last, len(gs))
				}
				for j := range gs {
					if gs[j].out == pending {
						gs[j].out = failed
					}
				}
				gs[i].out = acked
			}
		}
		if !ok && last >= 0 {
			fail("partition %d holds %v, no overwrite of it", part, got)
		}
	}
	t.Logf("round %d: %d increments, %d appends, overwrites %d and %d", round, n, len(count), len(m.gens[0]), len(m.gens[1]))
}
