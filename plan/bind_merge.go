package plan

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// Merge is MERGE INTO a primary-key table, one commit. Rows yields, for
// each source row that a WHEN clause takes, the clause's number (column 0,
// from 1) and the target row it writes (the table's columns, from 1).
// Clause i writes its row with Kinds[i-1]; Matched[i-1] says it acts on a
// matched target row (UPDATE, DELETE), which no two source rows may match.
type Merge struct {
	Table   *tablestore.Table
	Rows    *Query
	Kinds   []tablestore.RowKind
	Matched []bool
}

func (*Merge) boundStmt() {}

// bindMerge binds MERGE INTO t USING s ON cond WHEN ... as one query over
// s LEFT JOIN t ON cond: a source row is matched when the target's first
// key column is not NULL (key columns are NOT NULL), and takes the first
// WHEN clause whose kind and condition fit.
func (b *binder) bindMerge(s *sql.Merge) Statement {
	t, _ := b.table(s.Table)
	b.refuseMaterializedWrite(s.Pos, t, "MERGE")
	pk := t.PrimaryKey()
	if len(pk) == 0 {
		b.fail(s.Pos, "MERGE INTO %s: the target needs a primary key (MERGE writes rows by key)", t.Ident())
	}
	for _, w := range s.Whens {
		if w.Action == "INSERT" {
			continue
		}
		if err := t.CheckRowLevel(w.Action == "UPDATE"); err != nil {
			b.failWrap(w.Pos, err, "%v", err)
		}
	}
	qual := s.Table.Parts[len(s.Table.Parts)-1]
	if s.Alias != "" {
		qual = s.Alias
	}
	from := &sql.Join{Pos: s.Pos, Kind: "LEFT", Left: s.Source,
		Right: &sql.TableName{Pos: s.Table.Pos, Name: s.Table, Alias: s.Alias}, On: s.On}
	node, sc := b.bindFrom(from, nil, &scope{})
	schema := t.Schema()
	target := make([]Expr, schema.NumFields())
	for i, f := range schema.Fields() {
		target[i] = b.lookup(sc, &sql.Ident{Pos: s.Pos, Parts: []string{qual, f.Name}})
	}
	matched := b.call(s.Pos, "is_not_null", target[schema.FieldIndices(pk[0])[0]])
	notMatched := b.call(s.Pos, "is_null", target[schema.FieldIndices(pk[0])[0]])

	m := &Merge{Table: t}
	action := &Case{Else: &Const{Value: scalar.NewInt32Scalar(0)}, Typ: arrow.PrimitiveTypes.Int32}
	cols := make([]*Case, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = &Case{Else: target[i], Typ: f.Type}
	}
	for n, w := range s.Whens {
		cond := matched
		if !w.Matched {
			cond = notMatched
		}
		if w.Cond != nil {
			cond = andAll([]Expr{cond, b.bindPredicate(w.Cond, sc, &node, "WHEN")})
		}
		action.Whens = append(action.Whens, CaseWhen{Cond: cond, Then: &Const{Value: scalar.NewInt32Scalar(int32(n + 1))}})
		row := b.mergeRow(t, w, sc, &node, target)
		for i := range cols {
			cols[i].Whens = append(cols[i].Whens, CaseWhen{Cond: cond, Then: row[i]})
		}
		kind := map[string]tablestore.RowKind{"UPDATE": tablestore.UpdateAfter, "DELETE": tablestore.Delete, "INSERT": tablestore.Insert}[w.Action]
		m.Kinds = append(m.Kinds, kind)
		m.Matched = append(m.Matched, w.Matched)
	}
	exprs := []Expr{action}
	out := []Column{b.newCol("_merge_clause", action.Typ, false)}
	for i, f := range schema.Fields() {
		exprs = append(exprs, cols[i])
		out = append(out, b.newCol(f.Name, f.Type, true))
	}
	proj := &ProjectNode{Input: node, Exprs: exprs, Cols: out}
	taken := b.call(s.Pos, "not_equal", colRef(out[0]), &Const{Value: scalar.NewInt32Scalar(0)})
	b.defaultParamTypes()
	m.Rows = b.finishQuery(&FilterNode{Input: proj, Pred: taken})
	return m
}

// mergeRow is the target row WHEN clause w writes: UPDATE's assignments
// over the matched row, DELETE's matched row, INSERT's values (NULL for
// the columns it leaves out).
func (b *binder) mergeRow(t *tablestore.Table, w *sql.MergeWhen, sc *scope, node *Node, target []Expr) []Expr {
	schema := t.Schema()
	row := slices.Clone(target)
	switch w.Action {
	case "UPDATE":
		seen := map[string]bool{}
		for _, a := range w.Sets {
			idx := schema.FieldIndices(a.Column)
			switch {
			case len(idx) == 0:
				b.fail(a.Pos, "column %q not found in table %s", a.Column, t.Ident())
			case slices.Contains(t.PrimaryKey(), a.Column):
				b.fail(a.Pos, "cannot update primary key column %q", a.Column)
			case slices.Contains(t.PartitionKeys(), a.Column):
				b.fail(a.Pos, "cannot update partition column %q", a.Column)
			case seen[a.Column]:
				b.fail(a.Pos, "column %q assigned twice", a.Column)
			}
			seen[a.Column] = true
			f := schema.Field(idx[0])
			v := b.bindScalar(a.Value, sc, node, withHint(f.Type))
			row[idx[0]] = b.assignCast(v, f.Type, a.Pos, f.Name)
		}
	case "INSERT":
		names := w.Columns
		if names == nil {
			for _, f := range schema.Fields() {
				names = append(names, f.Name)
			}
		}
		if len(names) != len(w.Values) {
			b.fail(w.Pos, "INSERT of MERGE has %d columns and %d values", len(names), len(w.Values))
		}
		for i, f := range schema.Fields() {
			row[i] = &Const{Value: scalar.MakeNullScalar(f.Type)}
		}
		seen := map[string]bool{}
		for i, name := range names {
			idx := schema.FieldIndices(name)
			if len(idx) == 0 {
				b.fail(w.Values[i].Position(), "column %q not found in table %s", name, t.Ident())
			}
			if seen[strings.ToLower(name)] {
				b.fail(w.Values[i].Position(), "column %q given twice", name)
			}
			seen[strings.ToLower(name)] = true
			f := schema.Field(idx[0])
			v := b.bindScalar(w.Values[i], sc, node, withHint(f.Type))
			row[idx[0]] = b.assignCast(v, f.Type, w.Values[i].Position(), f.Name)
		}
		for _, k := range t.PrimaryKey() {
			if !seen[strings.ToLower(k)] {
				b.fail(w.Pos, "INSERT of MERGE must give primary key column %q", k)
			}
		}
	}
	return row
}
