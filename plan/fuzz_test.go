package plan_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/slt"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

// FuzzBind binds and runs arbitrary parsable SQL against two small tables:
// no panics, and every bind error is positioned or wraps ErrNotImplemented.
func FuzzBind(f *testing.F) {
	for _, s := range []string{
		"SELECT a, b FROM t WHERE a > 1 ORDER BY a LIMIT 10",
		"SELECT t.b, count(*) FROM t JOIN u ON t.a = u.a GROUP BY t.b HAVING count(*) > 1",
		"SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a) UNION SELECT 2",
		"SELECT b, sum(c) OVER (PARTITION BY b ORDER BY a) FROM t",
		"SELECT (SELECT max(d) FROM u WHERE u.a = t.a), CASE WHEN c IN (1, 2) THEN 'x' END FROM t",
		"WITH x AS (SELECT a FROM t) SELECT * FROM x, u WHERE x.a = u.a AND d LIKE 'o%'",
		"SELECT a, b FROM t GROUP BY ROLLUP(a, b)",
	} {
		f.Add(s)
	}
	mem := memory.NewGoAllocator()
	h, err := slt.NewInProc(context.Background(), f.TempDir(), mem, plan.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer h.Close()
	if err := h.Exec("CREATE TABLE t (a BIGINT NOT NULL, b VARCHAR, c INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('bucket'='2'); " +
		"CREATE TABLE u (a BIGINT, d VARCHAR); INSERT INTO t VALUES (1, 'x', 10), (2, 'y', 20), (3, NULL, NULL); " +
		"INSERT INTO u VALUES (1, 'one'), (3, 'three'), (NULL, NULL)"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		ast, err := sql.ParseOne(src)
		if err != nil {
			return
		}
		switch ast.(type) {
		case *sql.Query, *sql.Explain:
		default:
			return // keep the catalog unchanged
		}
		_, err = plan.Bind(context.Background(), ast, h, plan.Options{})
		if err != nil {
			var se *sql.Error
			if !errors.As(err, &se) && !errors.Is(err, plan.ErrNotImplemented) {
				t.Fatalf("bind error without position: %v\n%s", err, src)
			}
			return
		}
		if strings.Count(strings.ToLower(src), "join")+strings.Count(src, ",") > 12 {
			return // keep cross products small
		}
		_, _, _ = h.Query(src)
	})
}
