package nexmark

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/doget"
	"github.com/flightd/flightd/bench/tpcds"
	"github.com/flightd/flightd/engine"
)

func TestParseQuery(t *testing.T) {
	text := `-- a comment; with a semicolon
CREATE TABLE side_input (
  key BIGINT,
  ` + "`value`" + ` VARCHAR
) WITH (
  'connector.type' = 'filesystem',
  'connector.path' = 'file:///x;y'
);
CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;
CREATE TABLE nexmark_q13 (auction BIGINT) PARTITIONED BY (auction) WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q13
SELECT B.auction, S.` + "`value`" + ` FROM B JOIN side_input S ON mod(B.auction, 10000) = S.key WHERE B.url <> 'a;b';`
	q, err := ParseQuery("q13", text)
	if err != nil {
		t.Fatal(err)
	}
	// side_input is the runner's (SideInputDDL).
	want := []string{"CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid"}
	if !slices.Equal(q.Setup, want) {
		t.Errorf("setup %q, want %q", q.Setup, want)
	}
	if !strings.HasPrefix(q.Sink, "CREATE TABLE nexmark_q13") || !strings.HasSuffix(q.Select, "WHERE B.url <> 'a;b'") {
		t.Errorf("sink %q select %q", q.Sink, q.Select)
	}
	if got := dropFor(q.Setup[0]); got != "DROP VIEW IF EXISTS B" {
		t.Errorf("dropFor = %q", got)
	}
	for _, bad := range []string{"SELECT 1;", "INSERT INTO other SELECT 1;"} {
		if _, err := ParseQuery("q1", bad); err == nil {
			t.Errorf("ParseQuery(%q) took a file without INSERT INTO nexmark_q1", bad)
		}
	}
}

func TestStreaming(t *testing.T) {
	sql := "SELECT * FROM auction AS A, bid B JOIN person P ON P.id = B.bidder, (SELECT 1 FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(x), INTERVAL '1' SECOND))) W WHERE bidder > 0"
	got, tables := Streaming(sql, false, nil)
	want := "SELECT * FROM auction " + StreamHint + " AS A, bid " + StreamHint + " B JOIN person " + StreamHint +
		" P ON P.id = B.bidder, (SELECT 1 FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(x), INTERVAL '1' SECOND))) W WHERE bidder > 0"
	if got != want || !slices.Equal(tables, []string{"auction", "bid", "person"}) {
		t.Errorf("Streaming:\n got %s %v\nwant %s", got, tables, want)
	}
	if got, _ := Streaming(sql, true, nil); !strings.Contains(got, "TABLE bid "+StreamHint+",") {
		t.Errorf("Streaming with TVFs left the TVF's table alone: %s", got)
	}
	// A view of bid (q12's B) is hinted where it is read, for bid.
	q, err := ParseQuery("q12", "CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid; INSERT INTO nexmark_q12 SELECT count(*) FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND)) GROUP BY window_start, window_end;")
	if err != nil {
		t.Fatal(err)
	}
	got, tables = Streaming(q.Select, true, q.Views())
	if !strings.Contains(got, "TABLE B "+StreamHint+",") || !slices.Equal(tables, []string{"bid"}) {
		t.Errorf("Streaming over view B: %s %v", got, tables)
	}
	if got, tables := Streaming(q.Select, false, q.Views()); len(tables) != 0 || strings.Contains(got, StreamHint) {
		t.Errorf("Streaming without TVFs hinted the view in one: %s %v", got, tables)
	}
}

// sharedQueriesDir is the shared directory of the nexmark query files; the
// test is skipped without it.
func sharedQueriesDir(t *testing.T) string {
	dir, err := filepath.Abs("../../../shared/bench/nexmark/queries")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no nexmark queries at %s", dir)
	}
	return dir
}

// TestSharedQueries parses every query file of the shared directory.
func TestSharedQueries(t *testing.T) {
	dir := sharedQueriesDir(t)
	qs, err := LoadQueries(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 23 || qs[0].Name != "q0" || qs[10].Name != "q10" {
		t.Fatalf("loaded %d queries, first %s", len(qs), qs[0].Name)
	}
	if _, err := LoadQueries(dir, []string{"q0", "q99"}); err == nil {
		t.Error("LoadQueries took an unknown query name")
	}
}

func TestSinkColumns(t *testing.T) {
	names, err := sinkColumns("CREATE TABLE nexmark_q14 (\n  auction BIGINT,\n  price  DECIMAL(23, 3),\n  `dateTime` TIMESTAMP(3),\n  c_counts BIGINT\n) WITH (\n  'connector' = 'blackhole'\n)")
	if err != nil || !slices.Equal(names, []string{"auction", "price", "dateTime", "c_counts"}) {
		t.Errorf("sinkColumns: %q %v", names, err)
	}
	if _, err := sinkColumns("CREATE VIEW v AS SELECT 1"); err == nil {
		t.Error("a statement without a column list was taken")
	}
	for typ, want := range map[arrow.DataType]string{
		arrow.PrimitiveTypes.Int64: "BIGINT", arrow.BinaryTypes.String: "VARCHAR",
		&arrow.TimestampType{Unit: arrow.Millisecond}: "TIMESTAMP(3)", &arrow.Decimal128Type{Precision: 23, Scale: 3}: "DECIMAL(23, 3)",
	} {
		if got, err := sqlType(typ); got != want || err != nil {
			t.Errorf("sqlType(%s) = %q, %v; want %q", typ, got, err, want)
		}
	}
	if _, err := sqlType(arrow.ListOf(arrow.PrimitiveTypes.Int64)); err == nil {
		t.Error("a list type was given an SQL type")
	}
}

// TestCountCharSQL: flightd's answer to the count_char rewrite equals a
// count of the character on random strings (NULL, empty, multi-byte,
// quotes), as nexmark's Java UDF counts it.
func TestCountCharSQL(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	ctx := context.Background()
	_, addr, stop, err := doget.StartFlightd(ctx, engine.Config{Mem: memory.NewGoAllocator(), Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	f, err := tpcds.OpenFlightd(ctx, mem, "grpc://"+addr)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Exec(ctx, "CREATE TABLE t (i BIGINT, extra VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	alphabet := []rune("abcC c'é€")
	want := map[int64]int64{}
	var vals []string
	for i := range 200 {
		if i == 0 {
			vals, want[0] = append(vals, "(0, NULL)"), 0
			continue
		}
		var s []rune
		for range rng.IntN(12) {
			s = append(s, alphabet[rng.IntN(len(alphabet))])
		}
		want[int64(i)] = int64(strings.Count(string(s), "c"))
		vals = append(vals, fmt.Sprintf("(%d, '%s')", i, strings.ReplaceAll(string(s), "'", "''")))
	}
	if err := f.Exec(ctx, "INSERT INTO t VALUES "+strings.Join(vals, ", ")); err != nil {
		t.Fatal(err)
	}
	q, err := ParseQuery("q14", "CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';\n"+
		"INSERT INTO nexmark_q14 SELECT i, count_char(extra, 'c') AS c_counts FROM t;")
	if err != nil || len(q.Setup) != 0 || strings.Contains(q.Select, "count_char") {
		t.Fatalf("q14 not rewritten: %+v %v", q, err)
	}
	res, err := f.Query(ctx, q.Select)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(want))
	}
	for _, r := range res.Rows {
		i, n := r[0].Num.Num().Int64(), r[1].Num.Num().Int64()
		if n != want[i] {
			t.Errorf("seed %d: row %d: count_char %d, want %d", seed, i, n, want[i])
		}
	}
}
