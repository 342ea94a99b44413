package plan

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/sql"
)

// temporalTable returns the table of a processing-time temporal join, `...
// JOIN d FOR SYSTEM_TIME AS OF s.pt ON ...` (a column, not a constant time,
// after AS OF), or nil.
func temporalTable(j *sql.Join) *sql.TableName {
	tn, ok := j.Right.(*sql.TableName)
	if !ok || tn.SystemTime == nil {
		return nil
	}
	if _, ok := tn.SystemTime.(*sql.Ident); !ok {
		return nil
	}
	return tn
}

// checkTemporal checks a temporal join as bound (jn, the left side's scope
// ls) and marks it: the join is INNER or LEFT, the right side is a
// primary-key table, read as a snapshot when AS OF names a PROCTIME()
// attribute of the left side (else see checkRowtimeTemporal), and the
// condition fixes its whole key with equalities on left-side expressions.
func (b *binder) checkTemporal(j *sql.Join, tn *sql.TableName, jn *JoinNode, ls *scope) {
	if jn.Kind != InnerJoin && jn.Kind != LeftJoin || j.Kind == "CROSS" {
		b.fail(j.Pos, "a temporal join (FOR SYSTEM_TIME AS OF) is INNER or LEFT, not %s", j.Kind)
	}
	scan, ok := jn.Right.(*ScanNode)
	if !ok {
		b.notImplemented(tn.Pos, "a temporal join with a view or a table with computed columns")
	}
	if b.eventTimeAsOf(tn, jn.Left, ls) {
		b.checkRowtimeTemporal(tn, jn, scan, ls)
	} else if scan.Stream != nil {
		b.fail(tn.Pos, "a temporal join looks rows of %s up as of each row: it cannot read it as a stream (scan.mode)", scan.Label)
	}
	pk := scan.Table.PrimaryKey()
	if len(pk) == 0 {
		b.fail(tn.Pos, "table %s has no primary key: a temporal join (FOR SYSTEM_TIME AS OF) looks its rows up by key", scan.Label)
	}
	left := colSet(jn.Left.Columns())
	var missing []string
	for _, k := range pk {
		if temporalKey(jn.Cond, scan, k, left) == nil {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		pos := j.Pos
		if j.On != nil {
			pos = j.On.Position()
		}
		b.fail(pos, "a temporal join looks rows of %s up by its primary key (%s): the join condition needs `<expression of the left side> = %s` for %s", scan.Label, strings.Join(pk, ", "), missing[0], strings.Join(missing, ", "))
	}
	jn.Temporal = true
}

// temporalKey finds in cond the conjunct `e = key` (either way round) where
// key reads the scan's column named key and e only the left side's
// columns, and returns e; nil when there is none.
func temporalKey(cond Expr, scan *ScanNode, key string, left map[ColumnID]bool) Expr {
	for _, c := range conjuncts(cond) {
		call, ok := c.(*Call)
		if !ok || call.Fn != "equal" {
			continue
		}
		for _, o := range [][2]Expr{{call.Args[0], call.Args[1]}, {call.Args[1], call.Args[0]}} {
			if scanColumn(o[1], scan) == key && onlyColumns(o[0], left) {
				return o[0]
			}
		}
	}
	return nil
}

// scanColumn is the table column e reads (through casts), or "".
func scanColumn(e Expr, scan *ScanNode) string {
	for {
		c, ok := e.(*Cast)
		if !ok {
			break
		}
		e = c.X
	}
	r, ok := e.(*ColRef)
	if !ok {
		return ""
	}
	if i := slices.IndexFunc(scan.Cols, func(c Column) bool { return c.ID == r.ID }); i >= 0 {
		return scan.Names[i]
	}
	return ""
}

func colSet(cols []Column) map[ColumnID]bool {
	out := make(map[ColumnID]bool, len(cols))
	for _, c := range cols {
		out[c.ID] = true
	}
	return out
}

// onlyColumns reports whether e reads columns, all of them in cols.
func onlyColumns(e Expr, cols map[ColumnID]bool) bool {
	reads, ok := false, true
	walkExpr(e, func(x Expr) {
		if r, isRef := x.(*ColRef); isRef {
			reads = true
			ok = ok && cols[r.ID]
		}
	})
	return reads && ok
}

// isProctime reports whether column id of n is a PROCTIME() attribute:
// computed by PROCTIME() and passed on unchanged.
func isProctime(n Node, id ColumnID) bool {
	if p, ok := n.(*ProjectNode); ok {
		for i, c := range p.Cols {
			if c.ID != id {
				continue
			}
			switch e := p.Exprs[i].(type) {
			case *Call:
				return e.Fn == "proctime"
			case *ColRef:
				return isProctime(p.Input, e.ID)
			}
			return false
		}
		return false
	}
	for _, in := range n.Inputs() {
		if colSet(in.Columns())[id] {
			return isProctime(in, id)
		}
	}
	return false
}

// lookupJoin splits a temporal join for reading its right side by key: the
// scan of the table, per primary-key column the left-side expression its
// value comes from (cast to the column's type), and what else the rows
// must satisfy (the other conditions and the scan's filter, over the
// join's columns; nil: nothing). ok is false when the optimized join is no
// longer of that shape.
func lookupJoin(j *JoinNode) (scan *ScanNode, keys []Expr, residual Expr, ok bool) {
	scan, ok = j.Right.(*ScanNode)
	if !j.Temporal || !ok || scan.Stream != nil || scan.Tag != "" {
		return nil, nil, nil, false
	}
	left := colSet(j.Left.Columns())
	used := map[int]bool{}
	tschema := scan.Table.Schema()
	for _, k := range scan.Table.PrimaryKey() {
		i := slices.IndexFunc(j.RightKeys, func(e Expr) bool { return scanColumn(e, scan) == k })
		if i < 0 || !onlyColumns(j.LeftKeys[i], left) {
			return nil, nil, nil, false
		}
		used[i] = true
		e := j.LeftKeys[i]
		if typ := tschema.Field(tschema.FieldIndices(k)[0]).Type; !arrow.TypeEqual(e.Type(), typ) {
			e = &Cast{X: e, Typ: typ}
		}
		keys = append(keys, e)
	}
	var rest []Expr
	for i := range j.LeftKeys {
		if !used[i] {
			rest = append(rest, &Call{Fn: "equal", Args: []Expr{j.LeftKeys[i], j.RightKeys[i]}, Typ: arrow.FixedWidthTypes.Boolean})
		}
	}
	rest = append(rest, conjuncts(j.Residual)...)
	rest = append(rest, conjuncts(scan.Filter)...)
	return scan, keys, andAll(rest), true
}
