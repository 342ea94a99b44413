package flightsql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/flightsql"
)

// kvVersions is the content of table kv after each acknowledged write, in
// order; the writer holds mu from before a write until its version is
// appended, so a reader that takes mu after its query ended knows every
// write it could have seen.
type kvVersions struct {
	mu   sync.Mutex
	list []map[string]string // "a|b" -> v
}

func (m *kvVersions) last() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.list) - 1
}

// TestPreparedLookups: prepared point queries (`k = ?`, IN lists of
// parameters, multi-row binds that run as one batched lookup) and prefix
// queries (`a = ?`, reading one bucket) through the ADBC driver, while
// another connection upserts, deletes and compacts. Every answer equals the
// table as of a write acknowledged between the query's start and end; at
// the end, every key's lookup equals a full scan.
func TestPreparedLookups(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	writer := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE kv (a INT, b STRING, v BIGINT, PRIMARY KEY (a, b) NOT ENFORCED) WITH ('bucket' = '3', 'bucket-key' = 'a')")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	for q, want := range map[string]string{
		"EXPLAIN SELECT a, b, v FROM kv WHERE a = ? AND b = ?":        "LookupScan default.kv [a, b, v] keys: a = $1 AND b = $2",
		"EXPLAIN SELECT v FROM kv WHERE b IN (?, ?) AND a = ?":        "keys: a = $3 AND b IN ($1, $2)",
		"EXPLAIN SELECT a, b, v FROM kv WHERE a = ?":                  "pushed: (a = $1)",
		"EXPLAIN SELECT a, b, v FROM kv WHERE a = ? AND b = 'x'":      "keys: a = $1 AND b = 'x'",
		"EXPLAIN SELECT a, b, v FROM kv WHERE a = ? AND b > 'x'":      "Scan default.kv",
		"EXPLAIN SELECT a, v FROM kv WHERE a = 1 AND b = ? AND v > 0": "filter: (((a = 1) AND (b = $1)) AND (v > 0))",
	} {
		if got := fmt.Sprint(query(t, cnxn, q)); !strings.Contains(got, want) {
			t.Errorf("%s:\n%s\nwant %q in it", q, got, want)
		}
	}

	model := &kvVersions{list: []map[string]string{{}}}
	bs := []string{"x", "y", "z"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // upserts, deletes and compactions
		defer wg.Done()
		wr := rand.New(rand.NewPCG(seed, 1))
		for i := 0; i < 120 && ctx.Err() == nil; i++ {
			a, b, v := wr.IntN(12), bs[wr.IntN(3)], wr.IntN(1000)
			model.mu.Lock()
			next := map[string]string{}
			for k, v := range model.list[len(model.list)-1] {
				next[k] = v
			}
			q := fmt.Sprintf("INSERT INTO kv VALUES (%d, '%s', %d)", a, b, v)
			switch wr.IntN(6) {
			case 0:
				q = fmt.Sprintf("DELETE FROM kv WHERE a = %d AND b = '%s'", a, b)
				delete(next, fmt.Sprintf("%d|%s", a, b))
			case 1:
				q = "CALL sys.compact('default.kv')"
			default:
				next[fmt.Sprintf("%d|%s", a, b)] = fmt.Sprint(v)
			}
			_, err := tryExec(writer, q)
			if err == nil {
				model.list = append(model.list, next)
			}
			model.mu.Unlock()
			if err != nil {
				t.Errorf("%s: %v", q, err)
				return
			}
		}
	}()

	point := prepare(t, cnxn, "SELECT a, b, v FROM kv WHERE a = ? AND b = ?")
	defer point.Close()
	in := prepare(t, cnxn, "SELECT a, b, v FROM kv WHERE a = ? AND b IN (?, ?)")
	defer in.Close()
	prefix := prepare(t, cnxn, "SELECT a, b, v FROM kv WHERE a = ?")
	defer prefix.Close()

	aVal := func() any {
		switch r.IntN(10) {
		case 0:
			return nil
		case 1:
			return int64(100 + r.IntN(5)) // never written
		}
		return int64(r.IntN(12))
	}
	bVal := func() any {
		if r.IntN(10) == 0 {
			return nil
		}
		return bs[r.IntN(3)]
	}
	// expect renders what the rows of params select at one version: per
	// parameter row, the rows whose a equals its first value and whose b
	// is one of the others (any b with none).
	expect := func(version map[string]string, rows [][]any) []string {
		var out []string
		for _, p := range rows {
			if p[0] == nil {
				continue
			}
			var seen []string
			for k, v := range version {
				a, b, _ := strings.Cut(k, "|")
				if a != fmt.Sprint(p[0]) {
					continue
				}
				match := len(p) == 1
				for _, want := range p[1:] {
					match = match || want == b
				}
				if match && !slices.Contains(seen, b) {
					seen = append(seen, b)
					out = append(out, a+"|"+b+"|"+v)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	check := func(name string, rows [][]any, got [][]string, from, to int) {
		t.Helper()
		var g []string
		for _, row := range got {
			g = append(g, strings.Join(row, "|"))
		}
		slices.Sort(g)
		model.mu.Lock()
		defer model.mu.Unlock()
		for m := from; m <= to; m++ {
			if slices.Equal(g, expect(model.list[m], rows)) {
				return
			}
		}
		t.Fatalf("%s %v: got %v, which is the table at no write between %d and %d (last: %v)", name, rows, g, from, to, expect(model.list[to], rows))
	}

	for i := 0; i < 150; i++ {
		var st = point
		var name string
		var rows [][]any
		switch r.IntN(4) {
		case 0:
			st, name = in, "a = ? AND b IN (?, ?)"
			rows = [][]any{{aVal(), bVal(), bVal()}}
		case 1:
			st, name = prefix, "a = ?"
			rows = [][]any{{aVal()}}
		case 2:
			name = "a = ? AND b = ? (many rows)"
			for range 2 + r.IntN(30) {
				rows = append(rows, []any{aVal(), bVal()})
			}
		default:
			name = "a = ? AND b = ?"
			rows = [][]any{{aVal(), bVal()}}
		}
		from := model.last()
		got := queryBound(t, st, kvParams(mem, rows))
		check(name, rows, got, from, model.last())
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// Quiet now: every key looked up in one bind equals a full scan.
	var all [][]any
	for a := range 14 {
		for _, b := range bs {
			all = append(all, []any{int64(a), b})
		}
	}
	var got, want []string
	for _, row := range queryBound(t, point, kvParams(mem, all)) {
		got = append(got, strings.Join(row, "|"))
	}
	for _, row := range query(t, cnxn, "SELECT a, b, v FROM kv") {
		want = append(want, strings.Join(row, "|"))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("all keys by lookup: %v\nscan: %v", got, want)
	}
}

// kvParams is a batch of parameter rows: a INT first, then b STRINGs;
// nil values are NULL.
func kvParams(mem memory.Allocator, rows [][]any) arrow.RecordBatch {
	fields := []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}
	for i := 1; i < len(rows[0]); i++ {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("b%d", i), Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return paramBatch(mem, arrow.NewSchema(fields, nil), rows)
}
