package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/tablestore"
)

// TestStoredDeepMapsRefused: a table stored with MAP types nested past
// engine.MaxMapNesting (by another engine on the warehouse, or an older
// flightd) is refused when a statement reads it, SQLSTATE 54001 naming
// the table and column, instead of costing 2^depth per row; its
// neighbour at the limit reads, and DROP TABLE removes it.
func TestStoredDeepMapsRefused(t *testing.T) {
	e := newEngine(t)
	sess := e.NewSession()
	nested := func(depth int) arrow.DataType {
		var typ arrow.DataType = arrow.PrimitiveTypes.Int64
		for range depth {
			typ = arrow.MapOf(arrow.PrimitiveTypes.Int32, typ)
		}
		return typ
	}
	for name, depth := range map[string]int{"deep": engine.MaxMapNesting + 1, "ok": engine.MaxMapNesting} {
		sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "m", Type: nested(depth), Nullable: true}}, nil)
		if _, err := e.Store().CreateTable(context.Background(), tablestore.Ident{Database: "default", Table: name}, tablestore.TableDef{Schema: sch}, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{`SELECT k FROM deep`, `SELECT count(*) FROM deep`, `DELETE FROM deep WHERE k = 1`} {
		var err error
		if strings.HasPrefix(q, "SELECT") {
			_, _, err = query(context.Background(), sess, q)
		} else {
			_, err = exec(context.Background(), sess, nil, q)
		}
		if engine.SQLState(err) != "54001" || !strings.Contains(err.Error(), "column m nests MAP types 9 deep") {
			t.Errorf("%s: want SQLSTATE 54001 naming column m, got %v", q, err)
		}
	}
	if got := rows(t, sess, `SELECT count(*) FROM ok`); got[0][0] != "0" {
		t.Errorf("MAPs 8 deep: %v", got)
	}
	mustExec(t, sess, `DROP TABLE deep`)
}
