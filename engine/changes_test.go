package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/sql"
)

// changeCols are the columns of the table the change request tests read:
// names that need quoting in SQL text, to show a request needs none.
var changeCols = []string{"k", "v", "Mixed Case", "a`b", "select", "x'y"}

func changeTable(t *testing.T) (*engine.Engine, *engine.Session, int64) {
	t.Helper()
	e := newEngine(t)
	s := e.NewSession()
	q := func(c string) string { return sql.QuoteIdent(c) }
	mustExec(t, s, fmt.Sprintf("CREATE TABLE t (%s BIGINT, %s STRING, %s BIGINT, %s STRING, %s BIGINT, %s STRING, PRIMARY KEY (k) NOT ENFORCED)",
		q("k"), q("v"), q("Mixed Case"), q("a`b"), q("select"), q("x'y")))
	var snaps int64
	for i := range 6 {
		var vals []string
		for k := range 5 {
			vals = append(vals, fmt.Sprintf("(%d, 'v%d', %d, NULL, %d, 'w%d')", k+i, (k*i)%3, k*i, (k+i)%4, k))
		}
		mustExec(t, s, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
		snaps++
		if i%2 == 1 {
			mustExec(t, s, fmt.Sprintf("DELETE FROM t WHERE k = %d", i))
			snaps++
		}
	}
	return e, s, snaps
}

// readAll runs a bounded stream statement to its end, rows as strings.
func readAll(t *testing.T, st *engine.Statement) []string {
	t.Helper()
	rdr, err := st.Rows(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		b := rdr.RecordBatch()
		for r := range int(b.NumRows()) {
			row := make([]string, b.NumCols())
			for c := range row {
				row[c] = b.Column(c).ValueStr(r)
			}
			out = append(out, strings.Join(row, "|"))
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestChangeRequestMatchesSQL: a change request streams exactly what the
// SQL a client would write for it streams (random requests, seed printed).
func TestChangeRequestMatchesSQL(t *testing.T) {
	_, s, snaps := changeTable(t)
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	filters := []string{"", "k > 2", "v = 'v1' OR k < 1", "`Mixed Case` IS NULL OR `Mixed Case` >= 4", "`select` IN (0, 3)", "`x'y` <> 'w2' -- a comment",
		"`a``b` IS NULL AND NOT (k BETWEEN 1 AND 3)"}
	for i := range 40 {
		req := engine.ChangeRequest{Table: []string{"t"}, Filter: filters[rng.IntN(len(filters))], EndSnapshotID: snaps}
		if rng.IntN(2) == 0 {
			req.Table = []string{"default", "t"}
		}
		for _, c := range rng.Perm(len(changeCols))[:rng.IntN(len(changeCols)+1)] {
			req.Columns = append(req.Columns, changeCols[c])
		}
		req.Mode = []string{"from-snapshot", "from-snapshot-full"}[rng.IntN(2)]
		req.SnapshotID = 1 + rng.Int64N(snaps)

		cols := "*"
		if len(req.Columns) > 0 {
			var qs []string
			for _, c := range req.Columns {
				qs = append(qs, sql.QuoteIdent(c))
			}
			cols = strings.Join(qs, ", ")
		}
		text := fmt.Sprintf("SELECT %s FROM %s /*+ OPTIONS('scan.mode'='%s', 'scan.snapshot-id'='%d', 'scan.bounded.snapshot-id'='%d') */",
			cols, strings.Join(req.Table, "."), req.Mode, req.SnapshotID, req.EndSnapshotID)
		if req.Filter != "" {
			text += " WHERE " + req.Filter
		}
		want, err := s.Prepare(context.Background(), text, nil)
		if err != nil {
			t.Fatalf("seed %d: %s: %v", seed, text, err)
		}
		got, err := s.PrepareChanges(context.Background(), req)
		if err != nil {
			t.Fatalf("seed %d, request %d %+v: %v", seed, i, req, err)
		}
		if !got.Streaming() || !got.Schema().Equal(want.Schema()) {
			t.Fatalf("seed %d, request %+v: streaming %v, schema %v; want the schema of %s: %v", seed, req, got.Streaming(), got.Schema(), text, want.Schema())
		}
		if g, w := readAll(t, got), readAll(t, want); !slices.Equal(g, w) {
			t.Fatalf("seed %d, request %+v streamed\n%v\nwant (%s)\n%v", seed, req, g, text, w)
		}
	}
}

// hostile are values that would change a statement pasted together from
// them: close a parenthesis, a quote or the hint, start a comment, add a
// statement.
var hostile = []string{"k) OR (1 = 1", "k > 0; DROP TABLE t", "k */ WHERE 1=1 --", "') */ UNION SELECT 1 --", "`", "'", "*/", "/*", "--",
	"k FROM t --", "t /*+ OPTIONS('scan.mode'='latest') */", ")", "(", "\n", "default.t", ""}

// TestChangeRequestHostile: fields made of SQL syntax (fixed and random,
// seed printed) are names, literals or one expression, never more SQL: the
// request is refused as invalid or not found, or, for a filter that is one
// well-formed condition, streams the table's columns; the table is as it
// was.
func TestChangeRequestHostile(t *testing.T) {
	e, s, snaps := changeTable(t)
	before := rows(t, s, "SELECT * FROM t ORDER BY k")
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	piece := func() string {
		if rng.IntN(3) == 0 {
			return hostile[rng.IntN(len(hostile))]
		}
		const chars = "kv()'`\"*/-;.= \n,1t+"
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteByte(chars[rng.IntN(len(chars))])
		}
		return b.String()
	}
	for i := range 300 {
		req := engine.ChangeRequest{Table: []string{"t"}, EndSnapshotID: snaps, Mode: "from-snapshot-full", SnapshotID: 1}
		field := rng.IntN(5)
		switch field {
		case 0:
			req.Table = []string{piece()}
		case 1:
			req.Columns = []string{"k", piece()}
		case 2:
			req.Filter = piece()
		case 3:
			req.Tag, req.SnapshotID = piece(), 0
		case 4:
			req.ConsumerID = piece()
		}
		st, err := s.PrepareChanges(context.Background(), req)
		if err != nil {
			if k := engine.KindOf(err); k != engine.KindInvalid && k != engine.KindNotFound {
				t.Fatalf("seed %d, request %d %+v: %v error %v, want invalid or not found", seed, i, req, k, err)
			}
			continue
		}
		// Accepted: the shape is what the fields name as values, after the
		// row kind; SQL in a name or a tag is never accepted.
		var names []string
		for _, f := range st.Schema().Fields()[1:] {
			names = append(names, f.Name)
		}
		wantNames := changeCols
		switch field {
		case 0:
			if req.Table[0] != "t" {
				t.Fatalf("seed %d: table %q accepted", seed, req.Table[0])
			}
		case 1:
			if !slices.Contains(changeCols, req.Columns[1]) {
				t.Fatalf("seed %d: column %q accepted", seed, req.Columns[1])
			}
			wantNames = req.Columns
		case 3:
			t.Fatalf("seed %d: tag %q accepted", seed, req.Tag)
		}
		if !st.Streaming() || !slices.Equal(names, wantNames) {
			t.Fatalf("seed %d, request %+v accepted with schema %v", seed, req, st.Schema())
		}
		if field == 2 && req.Filter != "" { // "": no filter
			if _, err := sql.ParseExpr(req.Filter); err != nil {
				t.Fatalf("seed %d: filter %q accepted, but it is not one expression: %v", seed, req.Filter, err)
			}
		}
	}
	if after := rows(t, s, "SELECT * FROM t ORDER BY k"); !slices.EqualFunc(before, after, slices.Equal) {
		t.Fatalf("seed %d: the table changed:\n%v\nwas\n%v", seed, after, before)
	}
	if names, err := e.Tables(context.Background(), "default"); err != nil || !slices.Equal(names, []string{"t"}) {
		t.Fatalf("seed %d: tables %v, %v", seed, names, err)
	}
}

// TestResetConsumerHostile: ResetConsumer takes its table and consumer as
// values: SQL as the table is a table that does not exist or an invalid
// name, and a consumer named with SQL is a consumer of that name, which
// resumes where it was put.
func TestResetConsumerHostile(t *testing.T) {
	_, s, snaps := changeTable(t)
	ctx := context.Background()
	stream := func(consumer string) []string {
		st, err := s.PrepareChanges(ctx, engine.ChangeRequest{Table: []string{"t"}, ConsumerID: consumer, Mode: "latest", EndSnapshotID: snaps})
		if err != nil {
			t.Fatalf("consumer %q: %v", consumer, err)
		}
		return readAll(t, st)
	}
	if err := s.ResetConsumer(ctx, "t", "c1", snaps); err != nil {
		t.Fatal(err)
	}
	want := stream("c1")
	if len(want) == 0 {
		t.Fatalf("consumer c1 at snapshot %d streamed nothing of it", snaps)
	}
	for _, h := range append(hostile, "t', 'c1', 1) --") {
		if h == "default.t" {
			continue // a valid name of t
		}
		if err := s.ResetConsumer(ctx, h, "c1", 1); err == nil || engine.KindOf(err) != engine.KindInvalid && engine.KindOf(err) != engine.KindNotFound {
			t.Errorf("ResetConsumer(%q, c1): %v, want invalid or not found", h, err)
		}
		err := s.ResetConsumer(ctx, "t", h, snaps)
		if err != nil {
			if engine.KindOf(err) != engine.KindInvalid {
				t.Errorf("ResetConsumer(t, %q): %v, want a valid consumer or invalid", h, err)
			}
			continue
		}
		if strings.TrimSpace(h) == "" {
			continue // the binder refuses a blank consumer-id, the store takes it (plan/stream.go)
		}
		if got := stream(h); !slices.Equal(got, want) {
			t.Errorf("consumer %q streamed %v, want what c1 at the same snapshot streams: %v", h, got, want)
		}
	}
	if err := s.ResetConsumer(ctx, "t", "c1", -1); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("negative snapshot: %v, want ErrInvalid", err)
	}
	if got := stream("c1"); !slices.Equal(got, want) {
		t.Errorf("c1 moved by the refused calls: streamed %v, want %v", got, want)
	}
}

// BenchmarkPrepareChanges: preparing a change stream from a request, and
// from the equivalent SQL text (what a ticket cost before).
func BenchmarkPrepareChanges(b *testing.B) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: b.TempDir(), SpillDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			b.Error(err)
		}
		mem.AssertSize(b, 0)
	}()
	s := e.NewSession()
	ctx := context.Background()
	if st, err := s.Prepare(ctx, "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)", nil); err != nil {
		b.Fatal(err)
	} else if _, err := st.Exec(ctx, nil); err != nil {
		b.Fatal(err)
	}
	req := engine.ChangeRequest{Table: []string{"default", "t"}, Columns: []string{"k", "v"}, Filter: "k > 10 AND v <> 'x'", Mode: "latest", HeartbeatMillis: 50}
	b.Run("request", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.PrepareChanges(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sql", func(b *testing.B) {
		text := "SELECT k, v FROM default.t /*+ OPTIONS('scan.mode'='latest', 'stream.heartbeat-interval'='50ms') */ WHERE (k > 10 AND v <> 'x'\n)"
		for b.Loop() {
			if _, err := s.Prepare(ctx, text, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
