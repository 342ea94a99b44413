package nexmark

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/bench/tpcds"
)

var compareSeed = flag.Uint64("compare.seed", 0, "seed of TestTiesRandom (0: from the clock)")

func TestRankQuery(t *testing.T) {
	sel := "SELECT auction, bidder FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY A.id, `bidder` ORDER BY B.price DESC, B.`dateTime` ASC) AS rank_number FROM bid) WHERE rank_number <= 1"
	rank, partition, order, rn, ok := rankQuery(sel)
	if !ok || !strings.Contains(rank, "SELECT *, RANK() OVER (PARTITION BY A.id") || strings.Contains(rank, "ROW_NUMBER") {
		t.Fatalf("rankQuery: %v %s", ok, rank)
	}
	if !slices.Equal(partition, []string{"id", "bidder"}) || !slices.Equal(order, []string{"price", "datetime"}) || rn != "rank_number" {
		t.Errorf("partition %q order %q rn %q", partition, order, rn)
	}
	if _, _, _, _, ok := rankQuery("SELECT auction FROM bid"); ok {
		t.Error("a query without ROW_NUMBER has ties")
	}
}

// TestTiesRandom builds random top-N answers with ties on the ORDER BY
// key: another correct choice among tied rows must compare equal (with
// and without the row number in the result), and each perturbation a
// wrong engine could make must not.
func TestTiesRandom(t *testing.T) {
	seed := *compareSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-compare.seed to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for run := range 200 {
		withRN := run%2 == 0
		n := 1 + rng.IntN(3) // rn <= n
		// Rows (partition, order key, payload), order key descending wins.
		type row struct{ p, o, v int64 }
		var all []row
		for p := range int64(1 + rng.IntN(6)) {
			for range 1 + rng.IntN(6) {
				all = append(all, row{p, int64(rng.IntN(4)), rng.Int64N(1000)})
			}
		}
		// rank: rows of p strictly better than r.
		better := func(r row) int {
			c := 0
			for _, x := range all {
				if x.p == r.p && x.o > r.o {
					c++
				}
			}
			return c
		}
		// pick keeps the top n of each partition, breaking ties at random,
		// numbered in order.
		pick := func() rowSet {
			out := rowSet{}
			byP := map[int64][]row{}
			for _, r := range all {
				byP[r.p] = append(byP[r.p], r)
			}
			for _, rs := range byP {
				rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
				slices.SortStableFunc(rs, func(a, b row) int { return int(b.o - a.o) })
				for i, r := range rs[:min(n, len(rs))] {
					vals := []tpcds.Value{num(r.p), num(r.o), num(r.v)}
					if withRN {
						vals = append(vals, num(int64(i+1)))
					}
					out.add(vals, 1)
				}
			}
			return out
		}
		cols := []string{"p", "o", "v"}
		if withRN {
			cols = append(cols, "rn")
		}
		tie := newTies(cols, []string{"p"}, []string{"o"}, "rn")
		for _, r := range all {
			if b := better(r); b < n {
				vals := []tpcds.Value{num(r.p), num(r.o), num(r.v)}
				if withRN {
					vals = append(vals, num(int64(b+1)))
				}
				tie.addCandidate(vals, 1)
			}
		}
		want := &expected{rows: pick(), ties: tie}
		got := pick()
		if d, _ := want.diff(got); d != "" {
			t.Fatalf("run %d: another choice among ties differs: %s", run, d)
		}
		if err := want.selfCheck(got, nil); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		exact := &expected{rows: want.rows}
		if d, tied := want.diff(got); d == "" && tied == 0 {
			if d2, _ := exact.diff(got); d2 != "" {
				t.Fatalf("run %d: no tied rows counted, yet the exact comparison differs: %s", run, d2)
			}
		}
		// A wrong engine: a row outside the top (with ties) kept instead
		// of one in it, a payload changed, a row number changed.
		var keys []string
		for k := range got {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		victim := got[keys[rng.IntN(len(keys))]]
		for _, r := range all {
			if r.p == victim.row[0].Num.Num().Int64() && better(r) >= n {
				wrong := got.clone()
				wrong.add(victim.row, -1)
				vals := slices.Clone(victim.row)
				vals[1], vals[2] = num(r.o), num(r.v)
				wrong.add(vals, 1)
				if d, _ := want.diff(wrong); d == "" {
					t.Fatalf("run %d: a row below the top replacing %v compares equal", run, victim.row)
				}
				break
			}
		}
		wrong := got.clone()
		wrong.add(victim.row, -1)
		vals := slices.Clone(victim.row)
		vals[2] = num(victim.row[2].Num.Num().Int64() + 1000)
		wrong.add(vals, 1)
		if d, _ := want.diff(wrong); d == "" {
			t.Fatalf("run %d: a changed payload compares equal", run)
		}
		if withRN {
			wrong := got.clone()
			wrong.add(victim.row, -1)
			vals := slices.Clone(victim.row)
			vals[3] = num(int64(n + 1))
			wrong.add(vals, 1)
			if d, _ := want.diff(wrong); d == "" {
				t.Fatalf("run %d: a row number out of the top compares equal", run)
			}
		}
	}
}

// TestSelfCheck: an honest comparison passes, one with nothing streamed
// against a batch answer does not, and a row of a window still open in
// the result is reported.
func TestSelfCheck(t *testing.T) {
	rows := func(vs ...int64) rowSet {
		s := rowSet{}
		for _, v := range vs {
			s.add([]tpcds.Value{num(v)}, 1)
		}
		return s
	}
	e := &expected{rows: rows(1, 2, 2)}
	if err := e.selfCheck(rows(1, 2, 2), rows(7)); err != nil {
		t.Errorf("an honest comparison failed its self-check: %v", err)
	}
	if err := e.selfCheck(rowSet{}, nil); err == nil {
		t.Error("nothing streamed against 3 batch rows passed the self-check")
	}
	if d, _ := e.diff(rows(1, 2, 2, 7)); d == "" {
		t.Error("a row of an open window in the result compared equal")
	}
}

// TestClosedWindows checks the batch query rewritten to closed windows.
func TestClosedWindows(t *testing.T) {
	wm := time.Date(2015, 7, 15, 0, 0, 41, 995e6, time.UTC)
	lit := "TIMESTAMP '2015-07-15 00:00:41.995'"
	for _, c := range []struct{ in, want string }{
		{"SELECT auction, count(*) FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end",
			"SELECT auction, count(*) FROM (SELECT * FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) WHERE window_end <= " + lit + ") AS closed_w0 GROUP BY auction, window_start, window_end"},
		{"SELECT * FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) AS P JOIN TABLE(TUMBLE(TABLE auction, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) A ON P.id = A.seller",
			"SELECT * FROM (SELECT * FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) WHERE window_end <= " + lit + ") AS P JOIN (SELECT * FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) WHERE window_end <= " + lit + ") AS A ON P.id = A.seller"},
		{"SELECT B.bidder, count(*), SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) as endtime FROM bid B GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND)",
			"SELECT * FROM (SELECT B.bidder, count(*), SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) as endtime FROM bid B GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND)) AS closed_windows WHERE endtime <= " + lit},
	} {
		if !windowed(c.in) {
			t.Errorf("not windowed: %s", c.in)
		}
		got, err := closedWindows(c.in, wm)
		if err != nil || got != c.want {
			t.Errorf("closedWindows(%s):\n got %s (%v)\nwant %s", c.in, got, err, c.want)
		}
	}
	if _, err := closedWindows("SELECT bidder, count(*) FROM bid GROUP BY bidder, SESSION(`dateTime`, INTERVAL '10' SECOND)", wm); err == nil {
		t.Error("a session window without a named end was taken")
	}
	for _, sel := range []string{"SELECT auction FROM bid", "SELECT max(price) FROM bid GROUP BY auction HAVING count(*) > 1"} {
		if windowed(sel) {
			t.Errorf("windowed: %s", sel)
		}
	}
	q12 := Query{Setup: []string{"CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid"},
		Select: "SELECT bidder, count(*) FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND)) GROUP BY bidder, window_start, window_end"}
	q13 := Query{Select: "SELECT B.auction FROM (SELECT *, PROCTIME() as p_time FROM bid) B JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S ON mod(B.auction, 10000) = S.key"}
	q7 := Query{Select: "SELECT max(price) FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) GROUP BY window_start, window_end"}
	if !processingTime(q12) || processingTime(q13) || processingTime(q7) {
		t.Errorf("processing time: q12 %v, q13 %v, q7 %v; want true, false, false", processingTime(q12), processingTime(q13), processingTime(q7))
	}
	if _, err := closedWindows("SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(x)", wm); err == nil {
		t.Error("unbalanced parentheses were taken")
	}
}

// TestAnswerCompare compares results spooled in random orders, with
// retractions, against an answer by digest: equal multisets compare equal
// without reading either back (and pass the self-check), and a wrong row, a
// missing row or a duplicated row is reported as a difference with the row,
// as the in-memory comparison reports it.
func TestAnswerCompare(t *testing.T) {
	seed := *compareSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-compare.seed to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	row := func(v int64) []tpcds.Value {
		return []tpcds.Value{num(v % 7), {Kind: tpcds.KString, S: fmt.Sprint("s", v)}}
	}
	for run := range 100 {
		var rows []int64
		for range 1 + rng.IntN(50) {
			rows = append(rows, rng.Int64N(30)) // repeats: a multiset
		}
		a := &answer{rows: newTestSpool(t)}
		for _, v := range rows {
			if err := a.rows.add(row(v), 1); err != nil {
				t.Fatal(err)
			}
		}
		// spooled is rows as a changelog in another order, each row
		// also inserted and retracted again at random.
		spooled := func(rows []int64) (*spool, mark) {
			s := newTestSpool(t)
			for _, i := range rng.Perm(len(rows)) {
				if rng.IntN(3) == 0 {
					if err := s.add(row(rows[i]), 1); err != nil {
						t.Fatal(err)
					}
					if err := s.add(row(rows[i]), -1); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.add(row(rows[i]), 1); err != nil {
					t.Fatal(err)
				}
			}
			return s, s.mark()
		}
		got, m := spooled(rows)
		o, err := a.compare(got, m)
		if err != nil {
			t.Fatal(err)
		}
		if o.diff != "" || o.read {
			t.Fatalf("run %d: the same rows in another order: %q (read back: %v)", run, o.diff, o.read)
		}
		if err := a.selfCheck(o, got, m, row(99)); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		i := rng.IntN(len(rows))
		wrong := map[string][]int64{
			"fewer than batch":  slices.Delete(slices.Clone(rows), i, i+1),
			"more than batch":   append(slices.Clone(rows), rows[i]),
			"fewer than batch:": append(slices.Delete(slices.Clone(rows), i, i+1), 100+rows[i]),
		}
		for what, w := range wrong {
			got, m := spooled(w)
			o, err := a.compare(got, m)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(o.diff, "streamed 1 "+strings.TrimSuffix(what, ":")) {
				t.Fatalf("run %d: %v against %v: %q, want it reported (%s)", run, w, rows, o.diff, what)
			}
		}
	}
	// A self-check of a digest comparison that cannot fail fails.
	a := &answer{rows: newTestSpool(t)}
	if err := a.rows.add(row(1), 1); err != nil {
		t.Fatal(err)
	}
	if err := a.selfCheck(outcome{}, newTestSpool(t), mark{}, nil); err == nil {
		t.Error("nothing streamed against a batch row passed the self-check")
	}
}

// TestAnswerCompareTies compares a ROW_NUMBER() result with its answer
// through spools, in parts read back in rounds (small parts and budget
// here): a legal choice among ties is accepted holding only the parts
// that differ, a wrong row, a missing row and a duplicate are reported,
// each verdict is the one of diffing everything in memory, and the
// self-check of the accepted result passes and catches perturbations.
func TestAnswerCompareTies(t *testing.T) {
	parts, budget := compareParts, compareBudget
	compareParts, compareBudget = 64, 8
	t.Cleanup(func() { compareParts, compareBudget = parts, budget })

	// Partition p: two rows tied at the top (order key 1), one below;
	// ROW_NUMBER() ... rn <= 1 keeps one of the two.
	const partitions = 200
	row := func(p, o, v, rn int64) []tpcds.Value { return []tpcds.Value{num(p), num(o), num(v), num(rn)} }
	tie := newTies([]string{"p", "o", "v", "rn"}, []string{"p"}, []string{"o"}, "rn")
	a := &answer{rows: newTestSpool(t), tied: newTestSpool(t), ties: tie}
	var batch [][]tpcds.Value
	for p := range int64(partitions) {
		batch = append(batch, row(p, 1, 10*p, 1))
		for _, c := range [][]tpcds.Value{row(p, 1, 10*p, 1), row(p, 1, 10*p+1, 1)} {
			if err := a.tied.add(c, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, r := range batch {
		if err := a.rows.add(r, 1); err != nil {
			t.Fatal(err)
		}
	}
	// inMemory is today's comparison: everything read back.
	inMemory := func(got *spool, m mark) string {
		e := &expected{rows: rowSet{}}
		if err := a.rows.each(a.rows.records, func(r []tpcds.Value, n int) error { e.rows.add(r, n); return nil }); err != nil {
			t.Fatal(err)
		}
		tt := *tie
		tt.candidates = rowSet{}
		if err := a.tied.each(a.tied.records, func(r []tpcds.Value, n int) error { tt.addCandidate(r, n); return nil }); err != nil {
			t.Fatal(err)
		}
		e.ties = &tt
		rows, err := got.load(m.records)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := e.diff(rows)
		return d
	}
	// streamed is the batch answer with partition 7's row replaced by
	// with (nil: removed) and extra added, as a changelog that first
	// inserts and retracts a row below the top.
	// Every other spool keeps its parts' digests as it is written.
	keep := false
	streamed := func(with []tpcds.Value, extra ...[]tpcds.Value) (*spool, mark) {
		s := newTestSpool(t)
		if keep = !keep; keep {
			s.keepParts(a)
		}
		if err := s.add(row(3, 0, 32, 1), 1); err != nil {
			t.Fatal(err)
		}
		if err := s.add(row(3, 0, 32, 1), -1); err != nil {
			t.Fatal(err)
		}
		rows := slices.Clone(batch)
		rows[7] = with
		for _, r := range append(rows, extra...) {
			if r != nil {
				if err := s.add(r, 1); err != nil {
					t.Fatal(err)
				}
			}
		}
		return s, s.mark()
	}

	for range 2 {
		got, m := streamed(row(7, 1, 71, 1))
		o, err := a.compare(got, m)
		if err != nil {
			t.Fatal(err)
		}
		if o.diff != "" || o.tied != 2 || !o.read || inMemory(got, m) != "" {
			t.Fatalf("a choice among ties: %q, %d tied (read back: %v; in memory: %q)", o.diff, o.tied, o.read, inMemory(got, m))
		}
		// The parts that differ hold partition 7 and the partitions whose
		// hash shares its part (the hash is seeded per process, so how
		// many varies: 36 of the 600 rows were seen): well below all.
		if o.held == 0 || o.held > 600/3 {
			t.Errorf("held %d rows in a round, want 1 to %d", o.held, 600/3)
		}
		if err := a.selfCheck(o, got, m, row(500, 1, 5000, 1)); err != nil {
			t.Fatal(err)
		}
	}

	for what, c := range map[string]struct {
		with  []tpcds.Value
		extra [][]tpcds.Value
		want  string
	}{
		"a row below the top": {row(7, 0, 72, 1), nil, "not a choice among tied rows"},
		"a changed payload":   {row(7, 1, 79, 1), nil, "not a choice among tied rows"},
		"a missing row":       {nil, nil, "streamed 1 fewer than batch: 7 | 1 | 70 | 1"},
		"a duplicate":         {row(7, 1, 70, 1), [][]tpcds.Value{row(150, 1, 1500, 1)}, "streamed 1 more than batch: 150 | 1 | 1500 | 1"},
		"a wrong row number":  {row(7, 1, 71, 2), nil, "not a choice among tied rows"},
	} {
		got, m := streamed(c.with, c.extra...)
		o, err := a.compare(got, m)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(o.diff, c.want) || o.tied != 0 {
			t.Errorf("%s: %q (%d tied), want %q", what, o.diff, o.tied, c.want)
		}
		if mem := inMemory(got, m); mem == "" {
			t.Errorf("%s: accepted in memory, yet %q", what, o.diff)
		}
	}
}
