package sql

import (
	"fmt"
	"strconv"
	"strings"
)

// Format prints a node as SQL that parses back to the same AST (positions
// aside). Binary expressions are fully parenthesized, so the output is
// unambiguous rather than pretty.
func Format(n Node) string {
	var f formatter
	f.node(n)
	return f.String()
}

type formatter struct{ strings.Builder }

func (f *formatter) w(parts ...string) {
	for _, s := range parts {
		f.WriteString(s)
	}
}

// QuoteIdent returns s as written in SQL: bare when it reads back the same,
// backtick-quoted otherwise.
func QuoteIdent(s string) string {
	if isBareIdent(s) {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

func isBareIdent(s string) bool {
	if s == "" || reserved[s] || niladic[s] {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r == '_':
		case i > 0 && (r >= '0' && r <= '9' || r == '$'):
		default:
			return false
		}
	}
	return true
}

// QuoteString returns s as a SQL string literal.
func QuoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (f *formatter) ident(s string) { f.w(QuoteIdent(s)) }

func (f *formatter) idents(l []string) {
	for i, s := range l {
		if i > 0 {
			f.w(", ")
		}
		f.ident(s)
	}
}

func (f *formatter) parts(l []string) {
	for i, s := range l {
		if i > 0 {
			f.w(".")
		}
		f.ident(s)
	}
}

func (f *formatter) exprs(l []Expr) {
	for i, e := range l {
		if i > 0 {
			f.w(", ")
		}
		f.node(e)
	}
}

func (f *formatter) props(l []*Property) {
	f.w("(")
	for i, p := range l {
		if i > 0 {
			f.w(", ")
		}
		f.w(QuoteString(p.Key), " = ", QuoteString(p.Value))
	}
	f.w(")")
}

func (f *formatter) hints(l []*Hint) {
	if len(l) == 0 {
		return
	}
	f.w(" /*+ ")
	for i, h := range l {
		if i > 0 {
			f.w(", ")
		}
		f.w(h.Name)
		switch {
		case h.Options != nil:
			f.props(h.Options)
		case h.Args != nil:
			f.w("(")
			for j, a := range h.Args {
				if j > 0 {
					f.w(", ")
				}
				f.w(QuoteString(a))
			}
			f.w(")")
		}
	}
	f.w(" */")
}

func (f *formatter) alias(a string, cols []string) {
	if a == "" {
		return
	}
	f.w(" AS ")
	f.ident(a)
	if cols != nil {
		f.w(" (")
		f.idents(cols)
		f.w(")")
	}
}

func (f *formatter) orderItems(items []*OrderItem) {
	for i, it := range items {
		if i > 0 {
			f.w(", ")
		}
		f.node(it.Expr)
		if it.Desc {
			f.w(" DESC")
		}
		if it.NullsFirst != nil {
			if *it.NullsFirst {
				f.w(" NULLS FIRST")
			} else {
				f.w(" NULLS LAST")
			}
		}
	}
}

func (f *formatter) assignments(sets []*Assignment) {
	for i, a := range sets {
		if i > 0 {
			f.w(", ")
		}
		f.ident(a.Column)
		f.w(" = ")
		f.node(a.Value)
	}
}

func (f *formatter) node(n Node) {
	switch n := n.(type) {
	case *Query:
		if len(n.With) > 0 {
			f.w("WITH ")
			if n.Recursive {
				f.w("RECURSIVE ")
			}
			for i, c := range n.With {
				if i > 0 {
					f.w(", ")
				}
				f.ident(c.Name)
				if c.Columns != nil {
					f.w(" (")
					f.idents(c.Columns)
					f.w(")")
				}
				f.w(" AS (")
				f.node(c.Query)
				f.w(")")
			}
			f.w(" ")
		}
		f.node(n.Body)
		if len(n.OrderBy) > 0 {
			f.w(" ORDER BY ")
			f.orderItems(n.OrderBy)
		}
		if n.Limit != nil {
			f.w(" LIMIT ")
			f.node(n.Limit)
		}
		if n.Offset != nil {
			f.w(" OFFSET ")
			f.node(n.Offset)
		}
	case *Select:
		f.w("SELECT")
		f.hints(n.Hints)
		if n.Distinct {
			f.w(" DISTINCT")
		}
		for i, it := range n.Items {
			if i > 0 {
				f.w(",")
			}
			f.w(" ")
			f.node(it.Expr)
			if it.Alias != "" {
				f.w(" AS ")
				f.ident(it.Alias)
			}
		}
		if len(n.From) > 0 {
			f.w(" FROM ")
			for i, t := range n.From {
				if i > 0 {
					f.w(", ")
				}
				f.node(t)
			}
		}
		if n.Where != nil {
			f.w(" WHERE ")
			f.node(n.Where)
		}
		if len(n.GroupBy) > 0 {
			f.w(" GROUP BY ")
			f.exprs(n.GroupBy)
		}
		if n.Having != nil {
			f.w(" HAVING ")
			f.node(n.Having)
		}
		if len(n.Windows) > 0 {
			f.w(" WINDOW ")
			for i, w := range n.Windows {
				if i > 0 {
					f.w(", ")
				}
				f.ident(w.Name)
				f.w(" AS ")
				f.windowSpec(w.Spec)
			}
		}
	case *SetOp:
		f.node(n.Left)
		f.w(" ", n.Op)
		if n.All {
			f.w(" ALL")
		}
		f.w(" ")
		// The parser only builds a SetOp as a right operand when it binds
		// tighter (INTERSECT under UNION), so no parentheses are needed.
		f.node(n.Right)
	case *Values:
		f.w("VALUES ")
		for i, row := range n.Rows {
			if i > 0 {
				f.w(", ")
			}
			f.w("(")
			f.exprs(row)
			f.w(")")
		}
	case *ParenQuery:
		f.w("(")
		f.node(n.Query)
		f.w(")")
	case *TableName:
		f.parts(n.Name.Parts)
		f.hints(n.Hints)
		if n.SystemTime != nil {
			f.w(" FOR SYSTEM_TIME AS OF ")
			f.node(n.SystemTime)
		}
		f.alias(n.Alias, n.ColAliases)
	case *DerivedTable:
		if n.Lateral {
			f.w("LATERAL ")
		}
		f.w("(")
		f.node(n.Query)
		f.w(")")
		f.alias(n.Alias, n.ColAliases)
	case *Unnest:
		f.w("UNNEST(")
		f.node(n.X)
		f.w(")")
		if n.Ordinality {
			f.w(" WITH ORDINALITY")
		}
		f.alias(n.Alias, n.ColAliases)
	case *TableFunc:
		f.w("TABLE(")
		f.node(n.Call)
		f.w(")")
		f.alias(n.Alias, n.ColAliases)
	case *Join:
		f.node(n.Left)
		f.w(" ")
		if n.Natural {
			f.w("NATURAL ")
		}
		f.w(n.Kind, " JOIN ")
		f.node(n.Right)
		if n.On != nil {
			f.w(" ON ")
			f.node(n.On)
		}
		if n.Using != nil {
			f.w(" USING (")
			f.idents(n.Using)
			f.w(")")
		}
	case *ParenTableRef:
		f.w("(")
		f.node(n.Inner)
		f.w(")")
	case *Ident:
		f.parts(n.Parts)
	case *Star:
		if n.Qualifier != nil {
			f.parts(n.Qualifier)
			f.w(".")
		}
		f.w("*")
	case *Literal:
		switch n.Kind {
		case LitString:
			f.w(QuoteString(n.Value))
		default:
			f.w(n.Value)
		}
	case *TypedLiteral:
		if n.Type == "X" {
			f.w("X", QuoteString(n.Value))
			break
		}
		f.w(n.Type, " ", QuoteString(n.Value))
	case *IntervalLiteral:
		f.w("INTERVAL ")
		if n.Negative {
			f.w("-")
		}
		f.w(QuoteString(n.Value), " ", n.Unit)
		if n.ToUnit != "" {
			f.w(" TO ", n.ToUnit)
		}
	case *Param:
		f.w("$", strconv.Itoa(n.Index))
	case *Unary:
		f.w("(", n.Op)
		if n.Op == "NOT" {
			f.w(" ")
		}
		f.node(n.X)
		f.w(")")
	case *Binary:
		// A left-associative chain prints inside one pair of parentheses
		// (a + b - c), as the parser builds it: nested parentheses would
		// count against the parser's depth limit when the text is parsed
		// again (views store it), and the chain is walked without
		// recursing.
		var rights []*Binary
		left := Expr(n)
		for b, ok := left.(*Binary); ok && (len(rights) == 0 || opClass[b.Op] == opClass[n.Op]); b, ok = left.(*Binary) {
			rights = append(rights, b)
			left = b.Left
		}
		f.w("(")
		f.node(left)
		for i := len(rights) - 1; i >= 0; i-- {
			f.w(" ", rights[i].Op, " ")
			f.node(rights[i].Right)
		}
		f.w(")")
	case *FuncCall:
		f.funcCall(n)
	case *Cast:
		if n.Try {
			f.w("TRY_CAST(")
		} else {
			f.w("CAST(")
		}
		f.node(n.X)
		f.w(" AS ")
		f.node(n.Type)
		f.w(")")
	case *TypeName:
		f.typeName(n)
	case *Case:
		f.w("CASE")
		if n.Operand != nil {
			f.w(" ")
			f.node(n.Operand)
		}
		for _, w := range n.Whens {
			f.w(" WHEN ")
			f.node(w.Cond)
			f.w(" THEN ")
			f.node(w.Then)
		}
		if n.Else != nil {
			f.w(" ELSE ")
			f.node(n.Else)
		}
		f.w(" END")
	case *Between:
		f.w("(")
		f.node(n.X)
		f.w(not(n.Not), " BETWEEN ")
		f.node(n.Lo)
		f.w(" AND ")
		f.node(n.Hi)
		f.w(")")
	case *InList:
		f.w("(")
		f.node(n.X)
		f.w(not(n.Not), " IN (")
		f.exprs(n.List)
		f.w("))")
	case *InSubquery:
		f.w("(")
		f.node(n.X)
		f.w(not(n.Not), " IN (")
		f.node(n.Query)
		f.w("))")
	case *Exists:
		if n.Not {
			f.w("NOT ")
		}
		f.w("EXISTS (")
		f.node(n.Query)
		f.w(")")
	case *Subquery:
		f.w("(")
		f.node(n.Query)
		f.w(")")
	case *Like:
		f.w("(")
		f.node(n.X)
		if n.Insensitive {
			f.w(not(n.Not), " ILIKE ")
		} else {
			f.w(not(n.Not), " LIKE ")
		}
		f.node(n.Pattern)
		if n.Escape != nil {
			f.w(" ESCAPE ")
			f.node(n.Escape)
		}
		f.w(")")
	case *Is:
		f.w("(")
		f.node(n.X)
		f.w(" IS")
		if n.Not {
			f.w(" NOT")
		}
		f.w(" ", n.What)
		if n.Y != nil {
			f.w(" ")
			f.node(n.Y)
		}
		f.w(")")
	case *Extract:
		f.w("EXTRACT(", n.Field, " FROM ")
		f.node(n.X)
		f.w(")")
	case *Subscript:
		f.node(n.X)
		f.w("[")
		f.node(n.Index)
		f.w("]")
	case *FieldAccess:
		f.w("(")
		f.node(n.X)
		f.w(").")
		f.ident(n.Field)
	case *Collection:
		f.w(n.Kind, "[")
		for i, e := range n.Elems {
			if i > 0 {
				f.w(", ")
			}
			f.node(e)
		}
		f.w("]")
	case *GroupingSets:
		f.w("GROUPING SETS (")
		for i, s := range n.Sets {
			if i > 0 {
				f.w(", ")
			}
			f.w("(")
			f.exprs(s)
			f.w(")")
		}
		f.w(")")
	case *Rollup:
		f.w("ROLLUP(")
		f.exprs(n.Exprs)
		f.w(")")
	case *Cube:
		f.w("CUBE(")
		f.exprs(n.Exprs)
		f.w(")")
	case *TableArg:
		f.w("TABLE ")
		f.parts(n.Name.Parts)
		f.hints(n.Hints)
		if n.PartitionBy != nil {
			f.w(" PARTITION BY (")
			f.exprs(n.PartitionBy)
			f.w(")")
		}
	case *Descriptor:
		f.w("DESCRIPTOR(")
		f.idents(n.Columns)
		f.w(")")
	case *NamedArg:
		f.ident(n.Name)
		f.w(" => ")
		f.node(n.Value)
	case *CreateTable:
		f.createTable(n)
	case *CreateMaterializedTable:
		f.createMaterialized(n)
	case *AlterMaterializedTable:
		f.alterMaterialized(n)
	case *DropTable:
		f.w("DROP ")
		if n.Materialized {
			f.w("MATERIALIZED ")
		}
		f.w("TABLE ")
		if n.IfExists {
			f.w("IF EXISTS ")
		}
		f.parts(n.Name.Parts)
	case *AlterTable:
		f.w("ALTER TABLE ")
		f.parts(n.Name.Parts)
		for i, a := range n.Actions {
			if i > 0 {
				f.w(",")
			}
			f.w(" ")
			f.node(a)
		}
	case *AddColumn:
		f.w("ADD COLUMN ")
		f.columnDef(n.Column)
	case *DropColumn:
		f.w("DROP COLUMN ")
		f.ident(n.Name)
	case *RenameColumn:
		f.w("RENAME COLUMN ")
		f.ident(n.Old)
		f.w(" TO ")
		f.ident(n.New)
	case *RenameTable:
		f.w("RENAME TO ")
		f.parts(n.Name.Parts)
	case *AlterColumnType:
		f.w("ALTER COLUMN ")
		f.ident(n.Column)
		f.w(" TYPE ")
		f.node(n.Type)
		if n.NotNull {
			f.w(" NOT NULL")
		}
	case *SetOptions:
		f.w("SET ")
		f.props(n.Options)
	case *ResetOptions:
		f.w("RESET (")
		for i, k := range n.Keys {
			if i > 0 {
				f.w(", ")
			}
			f.w(QuoteString(k))
		}
		f.w(")")
	case *Insert:
		if n.Overwrite {
			f.w("INSERT OVERWRITE ")
		} else {
			f.w("INSERT INTO ")
		}
		f.parts(n.Table.Parts)
		f.hints(n.Hints)
		if n.Partition != nil {
			f.partitionSpec(n.Partition)
		}
		if n.Columns != nil {
			f.w(" (")
			f.idents(n.Columns)
			f.w(")")
		}
		f.w(" ")
		f.node(n.Source)
	case *Update:
		f.w("UPDATE ")
		f.parts(n.Table.Parts)
		f.alias(n.Alias, nil)
		f.w(" SET ")
		f.assignments(n.Sets)
		f.where(n.Where)
	case *Copy:
		f.copyStmt(n)
	case *Merge:
		f.w("MERGE INTO ")
		f.parts(n.Table.Parts)
		f.alias(n.Alias, nil)
		f.w(" USING ")
		f.node(n.Source)
		f.w(" ON ")
		f.node(n.On)
		for _, w := range n.Whens {
			f.w(" WHEN ")
			if !w.Matched {
				f.w("NOT ")
			}
			f.w("MATCHED")
			if w.Cond != nil {
				f.w(" AND ")
				f.node(w.Cond)
			}
			f.w(" THEN ", w.Action)
			switch w.Action {
			case "UPDATE":
				f.w(" SET ")
				f.assignments(w.Sets)
			case "INSERT":
				if w.Columns != nil {
					f.w(" (")
					f.idents(w.Columns)
					f.w(")")
				}
				f.w(" VALUES (")
				for i, v := range w.Values {
					if i > 0 {
						f.w(", ")
					}
					f.node(v)
				}
				f.w(")")
			}
		}
	case *Delete:
		f.w("DELETE FROM ")
		f.parts(n.Table.Parts)
		f.alias(n.Alias, nil)
		f.where(n.Where)
	case *CreateDatabase:
		f.w("CREATE DATABASE ")
		if n.IfNotExists {
			f.w("IF NOT EXISTS ")
		}
		f.ident(n.Name)
		if n.Comment != "" {
			f.w(" COMMENT ", QuoteString(n.Comment))
		}
		if n.With != nil {
			f.w(" WITH ")
			f.props(n.With)
		}
	case *AlterDatabase:
		f.w("ALTER DATABASE ")
		f.ident(n.Name)
		f.w(" SET ")
		f.props(n.Set)
	case *DropDatabase:
		f.w("DROP DATABASE ")
		if n.IfExists {
			f.w("IF EXISTS ")
		}
		f.ident(n.Name)
		if n.Cascade {
			f.w(" CASCADE")
		}
	case *StopJob:
		f.w("STOP JOB ", QuoteString(n.ID))
	case *Use:
		f.w("USE ")
		f.ident(n.Name)
	case *Call:
		f.w("CALL ")
		f.parts(n.Name.Parts)
		f.w("(")
		for i, a := range n.Args {
			if i > 0 {
				f.w(", ")
			}
			if a.Name != "" {
				f.ident(a.Name)
				f.w(" => ")
			}
			f.node(a.Value)
		}
		f.w(")")
	case *Explain:
		f.w("EXPLAIN ")
		if n.Format != "" {
			f.w("(FORMAT ", n.Format, ") ")
		}
		if n.Analyze {
			f.w("ANALYZE ")
		}
		f.node(n.Stmt)
	case *Show:
		f.w("SHOW ", n.What)
		if n.From != nil {
			if strings.HasPrefix(n.What, "CREATE ") {
				f.w(" ")
			} else {
				f.w(" FROM ")
			}
			f.parts(n.From.Parts)
		}
		if n.Like != "" {
			f.w(" LIKE ", QuoteString(n.Like))
		}
	case *Describe:
		f.w("DESCRIBE ")
		if n.Extended {
			f.w("EXTENDED ")
		}
		f.parts(n.Name.Parts)
	case *Transaction:
		f.w([...]string{"BEGIN", "COMMIT", "ROLLBACK"}[n.Kind])
	case *SetStmt:
		f.w("SET ", QuoteString(n.Key), " = ", QuoteString(n.Value))
	case *CreateView:
		f.w("CREATE ")
		if n.OrReplace {
			f.w("OR REPLACE ")
		}
		if n.Temporary {
			f.w("TEMPORARY ")
		}
		f.w("VIEW ")
		if n.IfNotExists {
			f.w("IF NOT EXISTS ")
		}
		f.parts(n.Name.Parts)
		if n.Columns != nil {
			f.w(" (")
			f.idents(n.Columns)
			f.w(")")
		}
		f.w(" AS ")
		f.node(n.As)
	case *DropView:
		f.w("DROP ")
		if n.Temporary {
			f.w("TEMPORARY ")
		}
		f.w("VIEW ")
		if n.IfExists {
			f.w("IF EXISTS ")
		}
		f.parts(n.Name.Parts)
	case *CreateFunction:
		f.w("CREATE ")
		if n.Temporary {
			f.w("TEMPORARY ")
		}
		f.w("FUNCTION ")
		f.parts(n.Name.Parts)
		f.w(" AS ", QuoteString(n.Class))
		if n.Language != "" {
			f.w(" LANGUAGE ", n.Language)
		}
	case *Name:
		f.parts(n.Parts)
	default:
		f.w(fmt.Sprintf("<unknown node %T>", n))
	}
}

func not(b bool) string {
	if b {
		return " NOT"
	}
	return ""
}

func (f *formatter) where(e Expr) {
	if e != nil {
		f.w(" WHERE ")
		f.node(e)
	}
}

func (f *formatter) funcCall(n *FuncCall) {
	f.w(n.Name) // names come from unquoted identifiers, so they print bare
	f.w("(")
	switch {
	case n.Star:
		f.w("*")
	default:
		if n.Distinct {
			f.w("DISTINCT ")
		}
		f.exprs(n.Args)
	}
	f.w(")")
	if n.Filter != nil {
		f.w(" FILTER (WHERE ")
		f.node(n.Filter)
		f.w(")")
	}
	if n.Over != nil {
		f.w(" OVER ")
		if n.Over.Ref != "" && n.Over.PartitionBy == nil && n.Over.OrderBy == nil && n.Over.Frame == nil {
			f.ident(n.Over.Ref)
		} else {
			f.windowSpec(n.Over)
		}
	}
}

func (f *formatter) windowSpec(w *WindowSpec) {
	f.w("(")
	sep := ""
	if w.Ref != "" {
		f.ident(w.Ref)
		sep = " "
	}
	if w.PartitionBy != nil {
		f.w(sep, "PARTITION BY ")
		f.exprs(w.PartitionBy)
		sep = " "
	}
	if w.OrderBy != nil {
		f.w(sep, "ORDER BY ")
		f.orderItems(w.OrderBy)
		sep = " "
	}
	if w.Frame != nil {
		f.w(sep, w.Frame.Unit, " ")
		if w.Frame.End != nil {
			f.w("BETWEEN ")
			f.frameBound(w.Frame.Start)
			f.w(" AND ")
			f.frameBound(w.Frame.End)
		} else {
			f.frameBound(w.Frame.Start)
		}
	}
	f.w(")")
}

func (f *formatter) frameBound(b *FrameBound) {
	if b.Offset != nil {
		f.node(b.Offset)
		f.w(" ")
	}
	f.w(b.Kind)
}

func (f *formatter) elemType(t *TypeName) {
	f.typeName(t)
	if t.NotNull {
		f.w(" NOT NULL")
	}
}

func (f *formatter) typeName(t *TypeName) {
	switch t.Name {
	case "ARRAY", "MULTISET":
		f.w(t.Name, "<")
		f.elemType(t.Elems[0])
		f.w(">")
		return
	case "MAP":
		f.w("MAP<")
		f.elemType(t.Elems[0])
		f.w(", ")
		f.elemType(t.Elems[1])
		f.w(">")
		return
	case "ROW":
		f.w("ROW<")
		for i, c := range t.Fields {
			if i > 0 {
				f.w(", ")
			}
			f.columnDef(c)
		}
		f.w(">")
		return
	}
	f.w(t.Name)
	if len(t.Params) > 0 {
		f.w("(")
		for i, p := range t.Params {
			if i > 0 {
				f.w(", ")
			}
			f.w(strconv.Itoa(p))
		}
		f.w(")")
	}
}

func (f *formatter) columnDef(c *ColumnDef) {
	f.ident(c.Name)
	if c.Computed != nil {
		f.w(" AS ")
		f.node(c.Computed)
		return
	}
	f.w(" ")
	f.typeName(c.Type)
	if c.NotNull {
		f.w(" NOT NULL")
	}
	if c.Comment != "" {
		f.w(" COMMENT ", QuoteString(c.Comment))
	}
}

func (f *formatter) createTable(n *CreateTable) {
	f.w("CREATE ")
	if n.OrReplace {
		f.w("OR REPLACE ")
	}
	f.w("TABLE ")
	if n.IfNotExists {
		f.w("IF NOT EXISTS ")
	}
	f.parts(n.Name.Parts)
	f.tableElements(n.Columns, n.PrimaryKey, n.Watermark)
	f.tableTail(n.Comment, n.PartitionedBy, n.With)
	if n.As != nil {
		f.w(" AS ")
		f.node(n.As)
	}
}

// tableElements writes a table's column list (the parser's
// tableElements), if it has one.
func (f *formatter) tableElements(cols []*ColumnDef, pk []string, wm *Watermark) {
	if cols == nil && pk == nil && wm == nil {
		return
	}
	f.w(" (")
	sep := ""
	for _, c := range cols {
		f.w(sep)
		f.columnDef(c)
		sep = ", "
	}
	if wm != nil {
		f.w(sep, "WATERMARK FOR ")
		f.ident(wm.Column)
		f.w(" AS ")
		f.node(wm.Expr)
		sep = ", "
	}
	if pk != nil {
		f.w(sep, "PRIMARY KEY (")
		f.idents(pk)
		f.w(") NOT ENFORCED")
	}
	f.w(")")
}

// partitionSpec writes " PARTITION (col = value, ...)".
func (f *formatter) partitionSpec(l []*PartitionValue) {
	f.w(" PARTITION (")
	for i, pv := range l {
		if i > 0 {
			f.w(", ")
		}
		f.ident(pv.Column)
		f.w(" = ")
		f.node(pv.Value)
	}
	f.w(")")
}

func (f *formatter) tableTail(comment string, partitionedBy []string, with []*Property) {
	if comment != "" {
		f.w(" COMMENT ", QuoteString(comment))
	}
	if partitionedBy != nil {
		f.w(" PARTITIONED BY (")
		f.idents(partitionedBy)
		f.w(")")
	}
	if with != nil {
		f.w(" WITH ")
		f.props(with)
	}
}

// opClass groups the binary operators the parser chains at one precedence
// level.
var opClass = map[string]int{
	"OR": 1, "AND": 2,
	"=": 3, "<>": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
	"||": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6,
}
