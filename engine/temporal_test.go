package engine_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
	qexec "github.com/flightd/flightd/exec"
)

// TestTemporalJoinPlans: the batch form of a temporal join reads its table
// through the lookup index (LookupJoin), the streaming form looks each
// change up as it arrives (TemporalJoin), and a filter that fixes a key
// reads by key (LookupScan).
func TestTemporalJoinPlans(t *testing.T) {
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE dim (k INT, name STRING, w INT, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "CREATE TABLE ev (id INT, k INT, pt AS PROCTIME())")
	for q, want := range map[string]string{
		"EXPLAIN SELECT ev.id, dim.name FROM ev JOIN dim FOR SYSTEM_TIME AS OF ev.pt ON ev.k = dim.k":                                                            "LookupJoin inner default.dim [k, name] keys: k = k",
		"EXPLAIN SELECT B.id, S.name FROM (SELECT *, PROCTIME() AS p FROM ev) B LEFT JOIN dim FOR SYSTEM_TIME AS OF B.p AS S ON mod(B.id, 10) = S.k AND S.w > 1": "LookupJoin left default.dim AS s [k, name, w] keys: k = mod(id, 10) residual: (w > 1)",
		"EXPLAIN SELECT ev.id, dim.name FROM ev /*+ OPTIONS('scan.mode'='latest') */ JOIN dim FOR SYSTEM_TIME AS OF ev.pt ON ev.k = dim.k":                       "TemporalJoin inner default.dim [k, name] keys: k = k",
		"EXPLAIN SELECT name FROM dim WHERE k IN (1, ?)": "LookupScan default.dim [k, name] keys: k IN (1, $1)",
	} {
		if got := fmt.Sprint(rows(t, s, q)); !strings.Contains(got, want) {
			t.Errorf("%s:\n%s\nwant %q in it", q, got, want)
		}
	}
}

// TestTemporalJoinStream: a streaming temporal join sees, for each probe
// row, the dimension row of its key as of when the row arrives: the
// dimension changes at random (upserts, deletes, compaction) between probe
// rows, each probe row's output carries the then-current values (NULLs
// when the key is gone, LEFT JOIN), and nothing emitted is ever retracted.
func TestTemporalJoinStream(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE dim (k INT, name STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')")
	mustExec(t, s, "CREATE TABLE ev (id INT, k INT, pt AS PROCTIME())")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := s.Prepare(ctx, "SELECT ev.id, dim.name FROM ev /*+ OPTIONS('scan.mode'='latest-full') */ LEFT JOIN dim FOR SYSTEM_TIME AS OF ev.pt ON ev.k = dim.k", nil)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := st.Rows(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	kind := rdr.Schema().FieldIndices("_row_kind")
	dim := map[int]string{}
	for id := range 40 {
		for range r.IntN(4) {
			k := r.IntN(5)
			switch r.IntN(5) {
			case 0:
				mustExec(t, s, fmt.Sprintf("DELETE FROM dim WHERE k = %d", k))
				delete(dim, k)
			case 1:
				mustExec(t, s, "CALL sys.compact('default.dim')")
			default:
				name := fmt.Sprintf("n%d", r.IntN(1000))
				mustExec(t, s, fmt.Sprintf("INSERT INTO dim VALUES (%d, '%s')", k, name))
				dim[k] = name
			}
		}
		k := r.IntN(5)
		mustExec(t, s, fmt.Sprintf("INSERT INTO ev VALUES (%d, %d)", id, k))
		want := fmt.Sprintf("%d|NULL", id)
		if name, ok := dim[k]; ok {
			want = fmt.Sprintf("%d|%s", id, name)
		}
		// The probe row's output (progress batches carry no rows).
		var got []string
		for len(got) == 0 {
			if !rdr.Next() {
				t.Fatalf("stream ended: %v", rdr.Err())
			}
			b := rdr.RecordBatch()
			for i := range int(b.NumRows()) {
				var row []string
				for c := range int(b.NumCols()) {
					if len(kind) > 0 && c == kind[0] {
						if v := b.Column(c).ValueStr(i); v != "+I" {
							t.Fatalf("probe row %d: a %s change; a temporal join never retracts", id, v)
						}
						continue
					}
					v := "NULL"
					if b.Column(c).IsValid(i) {
						v = b.Column(c).ValueStr(i)
					}
					row = append(row, v)
				}
				got = append(got, strings.Join(row, "|"))
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("probe row %d (key %d): got %v, want %s (dimension then: %v)", id, k, got, want, dim)
		}
	}
}

// TestLookupScanSeesOtherProcess: a point query that reads through the
// lookup index sees what another engine (another flightd node on the same
// warehouse) committed after the index was built, as a scan would.
func TestLookupScanSeesOtherProcess(t *testing.T) {
	dir := t.TempDir()
	a, memA := openEngine(t, dir)
	defer closeEngine(t, a, memA)
	b, memB := openEngine(t, dir)
	defer closeEngine(t, b, memB)
	sa, sb := a.NewSession(), b.NewSession()
	mustExec(t, sa, `CREATE TABLE c (id BIGINT NOT NULL, v BIGINT, PRIMARY KEY (id) NOT ENFORCED)`)
	mustExec(t, sa, `INSERT INTO c VALUES (0, 0)`)
	const q = `SELECT v FROM c WHERE id = 0`
	var plan string
	for _, r := range rows(t, sb, `EXPLAIN `+q) {
		plan += strings.Join(r, " ") + "\n"
	}
	if !strings.Contains(plan, "LookupScan") {
		t.Fatalf("the point query does not read through the index:\n%s", plan)
	}
	for i := 1; i <= 3; i++ {
		mustExec(t, sa, `UPDATE c SET v = v + 1 WHERE id = 0`)
		if got := rows(t, sb, q); len(got) != 1 || got[0][0] != fmt.Sprint(i) {
			t.Fatalf("after %d increments on the other engine: %v", i, got)
		}
	}
}

// TestLookupsInTransaction: inside a transaction, reads through the lookup
// index (a point query, an IN list, a temporal join) see the tables as of
// the transaction's start, as a scan does, while another session changes
// the dimension: a LookupScan or LookupJoin that read the latest snapshot
// would show the later values.
func TestLookupsInTransaction(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s, other := e.NewSession(), e.NewSession()
	mustExec(t, s, "CREATE TABLE dim (k INT, name STRING, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "CREATE TABLE ev (id INT, k INT, pt AS PROCTIME())")
	mustExec(t, s, "INSERT INTO dim VALUES (1, 'a'), (2, 'b')")
	mustExec(t, s, "INSERT INTO ev VALUES (10, 1), (20, 2)")
	queries := map[string]string{
		"SELECT k, name FROM dim WHERE k = 1":                                                      "LookupScan",
		"SELECT k, name FROM dim WHERE k IN (1, 2)":                                                "LookupScan",
		"SELECT k, name FROM dim":                                                                  "Scan",
		"SELECT ev.id, dim.name FROM ev JOIN dim FOR SYSTEM_TIME AS OF ev.pt ON ev.k = dim.k":      "LookupJoin",
		"SELECT ev.id, dim.name FROM ev LEFT JOIN dim FOR SYSTEM_TIME AS OF ev.pt ON ev.k = dim.k": "LookupJoin",
	}
	for q, op := range queries {
		if got := fmt.Sprint(rows(t, s, "EXPLAIN "+q)); !strings.Contains(got, op) {
			t.Fatalf("%s:\n%s\nwant %s in it", q, got, op)
		}
	}
	txRows := func(tx *engine.Txn, q string) []string {
		t.Helper()
		st, err := s.Prepare(ctx, q, tx)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		op, err := st.Query(ctx, nil)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out []string
		err = drainRows(ctx, op, func(row string) { out = append(out, row) })
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		slices.Sort(out)
		return out
	}
	tx := e.Begin()
	defer func() { _ = e.Rollback(tx.ID()) }()
	before := map[string][]string{}
	for q := range queries {
		before[q] = txRows(tx, q)
	}
	mustExec(t, other, "INSERT INTO dim VALUES (1, 'A'), (2, 'B')")
	mustExec(t, other, "DELETE FROM dim WHERE k = 2")
	mustExec(t, other, "CALL sys.compact('default.dim')")
	for q := range queries {
		if got := txRows(tx, q); !slices.Equal(got, before[q]) {
			t.Errorf("%s in a transaction, after another session changed dim: %v, before: %v", q, got, before[q])
		}
	}
}

// drainRows opens op, renders each row's values joined by "|" (NULL for
// nulls) through fn, and closes it.
func drainRows(ctx context.Context, op qexec.Operator, fn func(string)) error {
	defer op.Close()
	if err := op.Open(ctx); err != nil {
		return err
	}
	for {
		b, err := op.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range int(b.NumRows()) {
			row := make([]string, b.NumCols())
			for c := range row {
				row[c] = "NULL"
				if b.Column(c).IsValid(i) {
					row[c] = b.Column(c).ValueStr(i)
				}
			}
			fn(strings.Join(row, "|"))
		}
	}
}
