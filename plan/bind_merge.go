package plan

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// Merge is MERGE INTO a table, one commit. Rows yields, for each source
// row that a WHEN clause takes, the clause's number (column 0, from 1) and
// the target row it writes (the table's columns, from 1). Clause i writes
// its row with Kinds[i-1]; Matched[i-1] says it acts on a matched target
// row (UPDATE, DELETE), which no two source rows may match.
//
// Into an append table (Append) the statement rewrites the table, as
// UPDATE and DELETE do there: Rows then yields, after the clause number
// (0: none taken), the number of the target row (column 1, NULL for the
// rows INSERT clauses write) and the row to keep, update, delete or
// insert (the table's columns, from 2), ordered by target row, then by
// clause descending, so the row a clause takes comes first among the
// source rows matching its target row.
type Merge struct {
	Table   *tablestore.Table
	Rows    *Query
	Kinds   []tablestore.RowKind
	Matched []bool
	Append  bool
}

func (*Merge) boundStmt() {}

// bindMerge binds MERGE INTO t USING s ON cond WHEN ... as one query over
// s LEFT JOIN t ON cond (a primary-key table: a source row is matched when
// the target's first key column is not NULL, key columns being NOT NULL)
// or s FULL JOIN t ON cond (an append table, whose every row is written
// again: see bindAppendMerge); each source row takes the first WHEN clause
// whose kind and condition fit.
func (b *binder) bindMerge(s *sql.Merge) Statement {
	t, _ := b.table(s.Table)
	b.refuseMaterializedWrite(s.Pos, t, "MERGE")
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
	pk := t.PrimaryKey()
	if len(pk) == 0 {
		return b.bindAppendMerge(s, t, qual)
	}
	from := &sql.Join{Pos: s.Pos, Kind: "LEFT", Left: s.Source,
		Right: &sql.TableName{Pos: s.Table.Pos, Name: s.Table, Alias: s.Alias}, On: s.On}
	node, sc := b.bindFrom(from, nil, &scope{})
	target := b.mergeTarget(s, t, sc, qual)
	schema := t.Schema()
	key := target[schema.FieldIndices(pk[0])[0]]
	m := &Merge{Table: t}
	action, cols := b.mergeClauses(s, m, sc, &node, target, b.call(s.Pos, "is_not_null", key), b.call(s.Pos, "is_null", key))
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

// bindAppendMerge binds MERGE INTO an append table t: the source, marked
// as present, FULL JOIN the target's rows, numbered, ON cond. Every
// target row comes out (as it is, updated, or to be dropped) and every
// source row matching none that an INSERT clause takes; the engine keeps
// per target row the row of the clause taken, or the row as it is when
// none is (Merge).
func (b *binder) bindAppendMerge(s *sql.Merge, t *tablestore.Table, qual string) Statement {
	src, ls := b.bindFrom(s.Source, nil, &scope{})
	srcCols := src.Columns()
	present := b.newCol("_merge_source", boolType, false)
	var pass []Expr
	for _, c := range srcCols {
		pass = append(pass, colRef(c))
	}
	src = &ProjectNode{Input: src, Exprs: append(pass, &Const{Value: boolScalar(true)}), Cols: append(slices.Clone(srcCols), present)}
	tgt, rs := b.bindFrom(&sql.TableName{Pos: s.Table.Pos, Name: s.Table, Alias: s.Alias}, nil, &scope{})
	row := b.newCol("_merge_row", arrow.PrimitiveTypes.Int64, true)
	tgt = &WindowNode{Input: tgt, Funcs: []WindowFunc{{Fn: "row_number", Col: row}}}
	sc := &scope{cols: append(append([]scopeCol{}, ls.cols...), rs.cols...)}
	jn := &JoinNode{Kind: FullJoin, Left: src, Right: tgt}
	var node Node = jn
	jn.Cond = b.bindPredicate(s.On, sc, &node, "MERGE ON")
	if node != Node(jn) {
		b.notImplemented(s.On.Position(), "a subquery in MERGE ON")
	}
	target := b.mergeTarget(s, t, sc, qual)
	hasRow := b.call(s.Pos, "is_not_null", colRef(row))
	matched := andAll([]Expr{b.call(s.Pos, "is_not_null", colRef(present)), hasRow})
	m := &Merge{Table: t, Append: true}
	action, cols := b.mergeClauses(s, m, sc, &node, target, matched, b.call(s.Pos, "is_null", colRef(row)))
	exprs := []Expr{action, colRef(row)}
	out := []Column{b.newCol("_merge_clause", action.Typ, false), b.newCol("_merge_row", row.Type, true)}
	for i, f := range t.Schema().Fields() {
		exprs = append(exprs, cols[i])
		out = append(out, b.newCol(f.Name, f.Type, true))
	}
	proj := &ProjectNode{Input: node, Exprs: exprs, Cols: out}
	taken := b.call(s.Pos, "not_equal", colRef(out[0]), &Const{Value: scalar.NewInt32Scalar(0)})
	kept := &FilterNode{Input: proj, Pred: b.call(s.Pos, "or", b.call(s.Pos, "is_not_null", colRef(out[1])), taken)}
	b.defaultParamTypes()
	m.Rows = b.finishQuery(&SortNode{Input: kept, Keys: []SortKey{{Expr: colRef(out[1]), NullsFirst: true}, {Expr: colRef(out[0]), Desc: true}}})
	return m
}

// mergeTarget are the target row's columns in scope sc.
func (b *binder) mergeTarget(s *sql.Merge, t *tablestore.Table, sc *scope, qual string) []Expr {
	schema := t.Schema()
	target := make([]Expr, schema.NumFields())
	for i, f := range schema.Fields() {
		target[i] = b.lookup(sc, &sql.Ident{Pos: s.Pos, Parts: []string{qual, f.Name}})
	}
	return target
}

// mergeClauses binds the WHEN clauses into m: the number of the clause
// each joined row takes (0: none) and the row it writes (target's columns
// when none).
func (b *binder) mergeClauses(s *sql.Merge, m *Merge, sc *scope, node *Node, target []Expr, matched, notMatched Expr) (*Case, []*Case) {
	t := m.Table
	action := &Case{Else: &Const{Value: scalar.NewInt32Scalar(0)}, Typ: arrow.PrimitiveTypes.Int32}
	cols := make([]*Case, len(target))
	for i, f := range t.Schema().Fields() {
		cols[i] = &Case{Else: target[i], Typ: f.Type}
	}
	for n, w := range s.Whens {
		cond := matched
		if !w.Matched {
			cond = notMatched
		}
		if w.Cond != nil {
			cond = andAll([]Expr{cond, b.bindPredicate(w.Cond, sc, node, "WHEN")})
		}
		action.Whens = append(action.Whens, CaseWhen{Cond: cond, Then: &Const{Value: scalar.NewInt32Scalar(int32(n + 1))}})
		row := b.mergeRow(t, w, sc, node, target)
		for i := range cols {
			cols[i].Whens = append(cols[i].Whens, CaseWhen{Cond: cond, Then: row[i]})
		}
		kind := map[string]tablestore.RowKind{"UPDATE": tablestore.UpdateAfter, "DELETE": tablestore.Delete, "INSERT": tablestore.Insert}[w.Action]
		m.Kinds = append(m.Kinds, kind)
		m.Matched = append(m.Matched, w.Matched)
	}
	return action, cols
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
