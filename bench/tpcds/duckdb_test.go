package tpcds

import (
	"context"
	"testing"
)

// TestFlinkAvg checks DuckDB's AVG as Flink's: over integers the mean
// truncated toward zero, over decimals and with DISTINCT or OVER as
// DuckDB's own; and the default NULL order, Flink's.
func TestFlinkAvg(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT avg(x) FROM t": "SELECT flink_avg(x) FROM t",
		"SELECT AVG ( a.x + 1 ), avg(sum(y)) OVER (PARTITION BY z) FROM t": "SELECT flink_avg( a.x + 1 ), avg(sum(y)) OVER (PARTITION BY z) FROM t",
		"SELECT avg(DISTINCT x), favg(x), avg((x))":                        "SELECT avg(DISTINCT x), favg(x), flink_avg((x))",
	} {
		if got := flinkAvg(q); got != want {
			t.Errorf("flinkAvg(%q) = %q, want %q", q, got, want)
		}
	}
	ctx := context.Background()
	d, err := OpenDuckDB(ctx, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Exec(ctx, "CREATE TABLE t AS SELECT * FROM (VALUES (1, 1.25::DECIMAL(7,2), 1), (2, 2.00, 1), (-1, NULL, 2), (-2, -1.00, 2), (NULL, 3.00, 3)) v(i, d, g)"); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"SELECT g, avg(i), avg(d) FROM t GROUP BY g ORDER BY g":  "[[1 1 1.625] [2 -1 -1] [3 NULL 3]]",
		"SELECT avg(DISTINCT i) FROM t":                          "[[0]]",
		"SELECT avg(i + 0) FROM t WHERE g = 1":                   "[[1]]",
		"SELECT avg(i) OVER (PARTITION BY g) FROM t WHERE g = 1": "[[1.5] [1.5]]",
		"SELECT i FROM t ORDER BY i":                             "[[NULL] [-2] [-1] [1] [2]]",
		"SELECT i FROM t ORDER BY i DESC":                        "[[2] [1] [-1] [-2] [NULL]]",
	} {
		res, err := d.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := rowsString(res); got != want {
			t.Errorf("%s: %s, want %s", q, got, want)
		}
	}
}

func rowsString(r *Result) string {
	s := "["
	for i, row := range r.Rows {
		if i > 0 {
			s += " "
		}
		s += "["
		for j, v := range row {
			if j > 0 {
				s += " "
			}
			s += v.String()
		}
		s += "]"
	}
	return s + "]"
}
