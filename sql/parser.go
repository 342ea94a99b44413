package sql

import (
	"strconv"
	"strings"
)

// MaxDepth bounds how deep a statement's syntax tree may be, so that hostile
// input gets an error instead of exhausting the stack: parsing, binding,
// optimizing and compiling all recurse over the tree. It counts nesting
// (parentheses, subqueries, NOT, unary minus, types) and every link of a
// left-associative chain (a + b + c, a OR b OR c, UNION chains, joins),
// since a chain of n links builds a tree n deep.
const MaxDepth = 1000

// MaxParams bounds a statement's parameters (? or $n), as Postgres' wire
// protocol does: each is a field of the parameter schema a prepare sends
// back, and 450,000 made a 23 MB answer that clients refuse.
const MaxParams = 65535

// MaxTables bounds the table references (tables, subqueries, VALUES,
// functions in FROM) of one statement: join ordering and the optimizer's
// rules cost more than linear time in them (900 tables took minutes to
// plan; 256 take seconds), and no query we know needs more (TPC-DS's
// largest has 25).
const MaxTables = 256

// reserved words cannot be used as bare aliases or column names; quoting
// them (`from`) always works.
var reserved = map[string]bool{
	"select": true, "from": true, "where": true, "group": true, "having": true, "order": true,
	"limit": true, "offset": true, "fetch": true, "union": true, "intersect": true, "except": true,
	"minus": true, "join": true, "inner": true, "left": true, "right": true, "full": true,
	"cross": true, "natural": true, "on": true, "using": true, "as": true, "and": true, "or": true,
	"not": true, "in": true, "is": true, "like": true, "between": true, "case": true, "when": true,
	"then": true, "else": true, "end": true, "null": true, "true": true, "false": true, "with": true,
	"values": true, "into": true, "window": true, "for": true, "set": true, "distinct": true,
	"all": true, "exists": true, "cast": true, "interval": true, "table": true, "lateral": true,
	"by": true, "over": true, "partition": true, "create": true, "drop": true, "alter": true,
	"insert": true, "update": true, "delete": true, "outer": true, "escape": true, "filter": true,
	"overwrite": true, "unknown": true, "similar": true, "ilike": true,
}

// niladic functions are called without parentheses.
var niladic = map[string]bool{
	"current_date": true, "current_timestamp": true, "current_time": true, "localtimestamp": true, "localtime": true,
}

type parser struct {
	src    string
	toks   []token
	i      int
	depth  int
	tables int // table references seen (MaxTables)
	nQmark int // ? placeholders seen, numbered left to right
	dollar bool
	// isQuery memoizes speculative parses by token index, so nested
	// parentheses cost linear time.
	isQuery map[int]bool
}

type bailout struct{ err *Error }

// Parse parses one or more statements separated by semicolons.
func Parse(src string) (stmts []Statement, err error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	defer p.recover(&err)
	for {
		for p.acceptP(";") {
		}
		if p.peek().kind == tEOF {
			break
		}
		stmts = append(stmts, p.parseStatement())
		if p.peek().kind != tEOF && !p.isP(";") {
			p.failf(p.peek().pos, "unexpected %s after statement", p.describe(p.peek()))
		}
	}
	if len(stmts) == 0 {
		return nil, StateErrorf(StateSyntax, Pos{Line: 1, Col: 1}, "empty statement")
	}
	return stmts, nil
}

// ParseOne parses exactly one statement (a trailing semicolon is allowed).
func ParseOne(src string) (Statement, error) {
	stmts, err := Parse(src)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, StateErrorf(StateSyntax, stmts[1].Position(), "expected one statement, got %d", len(stmts))
	}
	return stmts[0], nil
}

// NumParams returns the number of placeholders in a statement: the count of
// `?` or the highest `$n`.
func NumParams(s Statement) int {
	n := 0
	Walk(s, func(node Node) bool {
		if p, ok := node.(*Param); ok && p.Index > n {
			n = p.Index
		}
		return true
	})
	return n
}

func newParser(src string) (*parser, error) {
	p := &parser{src: src}
	lx := newLexer(src)
	for {
		t := lx.next()
		if t.kind == tBadUnclosed {
			return nil, Errorf(t.pos, "%s", t.text)
		}
		p.toks = append(p.toks, t)
		if t.kind == tEOF {
			return p, nil
		}
	}
}

func (p *parser) recover(err *error) {
	if r := recover(); r != nil {
		b, ok := r.(bailout)
		if !ok {
			panic(r)
		}
		*err = b.err
	}
}

func (p *parser) failf(pos Pos, format string, args ...any) {
	panic(bailout{StateErrorf(StateSyntax, pos, format, args...)})
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekN(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) nextTok() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tString:
		return "string '" + t.text + "'"
	case tQuotedIdent:
		return "identifier \"" + t.text + "\""
	case tIdent:
		return "\"" + t.raw + "\""
	case tHint:
		return "hint"
	}
	return "\"" + t.text + "\""
}

// isK reports whether the current token is keyword kw (lower case).
func (p *parser) isK(kw string) bool { t := p.peek(); return t.kind == tIdent && t.text == kw }
func (p *parser) isKAt(k int, kw string) bool {
	t := p.peekN(k)
	return t.kind == tIdent && t.text == kw
}
func (p *parser) isP(op string) bool { t := p.peek(); return t.kind == tPunct && t.text == op }

func (p *parser) acceptK(kws ...string) bool {
	for i, kw := range kws {
		if !p.isKAt(i, kw) {
			return false
		}
	}
	p.i += len(kws)
	return true
}

func (p *parser) acceptP(op string) bool {
	if p.isP(op) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectK(kws ...string) Pos {
	pos := p.peek().pos
	for _, kw := range kws {
		if !p.isK(kw) {
			p.failf(p.peek().pos, "expected %s, found %s", strings.ToUpper(kw), p.describe(p.peek()))
		}
		p.i++
	}
	return pos
}

func (p *parser) expectP(op string) Pos {
	t := p.peek()
	if !p.isP(op) {
		p.failf(t.pos, "expected \"%s\", found %s", op, p.describe(t))
	}
	p.i++
	return t.pos
}

// ident reads an identifier (unquoted non-reserved, or quoted).
func (p *parser) ident(what string) (string, Pos) {
	t := p.peek()
	switch {
	case t.kind == tQuotedIdent:
		if t.text == "" {
			p.failf(t.pos, "empty quoted identifier")
		}
		p.i++
		return t.text, t.pos
	case t.kind == tIdent && !reserved[t.text]:
		p.i++
		return t.text, t.pos
	}
	p.failf(t.pos, "expected %s, found %s", what, p.describe(t))
	return "", Pos{}
}

// anyIdent reads an identifier including reserved words (after a dot).
func (p *parser) anyIdent(what string) (string, Pos) {
	t := p.peek()
	if t.kind == tIdent || t.kind == tQuotedIdent {
		p.i++
		return t.text, t.pos
	}
	p.failf(t.pos, "expected %s, found %s", what, p.describe(t))
	return "", Pos{}
}

func (p *parser) isIdentStart() bool {
	t := p.peek()
	return t.kind == tQuotedIdent || t.kind == tIdent && !reserved[t.text]
}

func (p *parser) name(what string) *Name {
	s, pos := p.ident(what)
	n := &Name{Pos: pos, Parts: []string{s}}
	for p.isP(".") {
		p.i++
		s, _ = p.anyIdent(what)
		n.Parts = append(n.Parts, s)
	}
	if len(n.Parts) > 3 {
		p.failf(pos, "%s has too many parts", what)
	}
	return n
}

func (p *parser) identList(what string) []string {
	var out []string
	for {
		s, _ := p.ident(what)
		out = append(out, s)
		if !p.acceptP(",") {
			return out
		}
	}
}

func (p *parser) parenIdentList(what string) []string {
	p.expectP("(")
	l := p.identList(what)
	p.expectP(")")
	return l
}

func (p *parser) str(what string) (string, Pos) {
	t := p.peek()
	if t.kind != tString {
		p.failf(t.pos, "expected %s (a string literal), found %s", what, p.describe(t))
	}
	p.i++
	return t.text, t.pos
}

func (p *parser) enter() {
	p.depth++
	if p.depth > MaxDepth {
		panic(bailout{StateErrorf(StateTooComplex, p.peek().pos, "statement too complex: nested or chained more than %d levels deep (an IN list instead of a long OR chain avoids this)", MaxDepth)})
	}
}
func (p *parser) leave() { p.depth-- }

// endChain, deferred with the depth at the start of a left-associative
// chain, undoes the enter of each of its links.
func (p *parser) endChain(depth int) { p.depth = depth }

// ---- statements

func (p *parser) parseStatement() Statement {
	t := p.peek()
	if t.kind == tPunct && t.text == "(" {
		return p.parseQuery()
	}
	if t.kind != tIdent {
		p.failf(t.pos, "expected a statement, found %s", p.describe(t))
	}
	switch t.text {
	case "select", "with", "values":
		return p.parseQuery()
	case "insert":
		return p.parseInsert()
	case "update":
		return p.parseUpdate()
	case "merge":
		return p.parseMerge()
	case "copy":
		return p.parseCopy()
	case "delete":
		return p.parseDelete()
	case "create":
		return p.parseCreate()
	case "drop":
		return p.parseDrop()
	case "alter":
		return p.parseAlter()
	case "explain":
		p.i++
		e := &Explain{Pos: t.pos}
		if p.isP("(") && p.isKAt(1, "format") {
			p.i += 2
			f, pos := p.ident("plan format")
			if e.Format = strings.ToUpper(f); e.Format != "SUBSTRAIT" {
				p.failf(pos, "unknown EXPLAIN format %s (SUBSTRAIT is the one there is)", f)
			}
			p.expectP(")")
		}
		e.Analyze = e.Format == "" && p.acceptK("analyze")
		p.acceptK("plan", "for")
		if p.isK("explain") {
			p.failf(p.peek().pos, "EXPLAIN cannot be nested")
		}
		e.Stmt = p.parseStatement()
		return e
	case "show":
		return p.parseShow()
	case "stop":
		p.i++
		p.expectK("job")
		id, _ := p.str("job id")
		return &StopJob{Pos: t.pos, ID: id}
	case "truncate":
		p.i++
		p.acceptK("table")
		return &Delete{Pos: t.pos, Table: p.name("table name")}
	case "describe", "desc":
		p.i++
		extended := p.acceptK("extended")
		p.acceptK("table")
		return &Describe{Pos: t.pos, Extended: extended, Name: p.name("table name")}
	case "use":
		p.i++
		p.acceptK("database")
		s, _ := p.ident("database name")
		return &Use{Pos: t.pos, Name: s}
	case "call":
		p.i++
		c := &Call{Pos: t.pos, Name: p.name("procedure name")}
		p.expectP("(")
		for !p.isP(")") {
			if len(c.Args) > 0 {
				p.expectP(",")
			}
			a := &CallArg{Pos: p.peek().pos}
			// A parameter name may be a keyword (Paimon's table => ...).
			if k, n := p.peek().kind, p.peekN(1); (k == tIdent || k == tQuotedIdent) && n.kind == tPunct && n.text == "=>" {
				a.Name, _ = p.anyIdent("parameter name")
				p.expectP("=>")
			}
			a.Value = p.parseExpr()
			c.Args = append(c.Args, a)
		}
		p.expectP(")")
		return c
	case "begin":
		p.i++
		if !p.acceptK("transaction") {
			p.acceptK("work")
		}
		return &Transaction{Pos: t.pos, Kind: Begin}
	case "start":
		p.i++
		p.expectK("transaction")
		return &Transaction{Pos: t.pos, Kind: Begin}
	case "commit":
		p.i++
		p.acceptK("work")
		return &Transaction{Pos: t.pos, Kind: Commit}
	case "rollback":
		p.i++
		p.acceptK("work")
		return &Transaction{Pos: t.pos, Kind: Rollback}
	case "set":
		p.i++
		k, _ := p.str("option key")
		p.expectP("=")
		v, _ := p.str("option value")
		return &SetStmt{Pos: t.pos, Key: k, Value: v}
	}
	p.failf(t.pos, "unknown statement %s", p.describe(t))
	return nil
}

func (p *parser) parseShow() Statement {
	pos := p.expectK("show")
	s := &Show{Pos: pos}
	switch {
	case p.acceptK("tables"):
		s.What = "TABLES"
		if p.acceptK("from") || p.acceptK("in") {
			s.From = p.name("database name")
		}
	case p.acceptK("views"):
		s.What = "VIEWS"
		if p.acceptK("from") || p.acceptK("in") {
			s.From = p.name("database name")
		}
	case p.acceptK("databases"):
		s.What = "DATABASES"
	case p.acceptK("jobs"):
		s.What = "JOBS"
	case p.acceptK("current", "database"):
		s.What = "CURRENT DATABASE"
	case p.acceptK("columns"):
		s.What = "COLUMNS"
		if !p.acceptK("from") {
			p.expectK("in")
		}
		s.From = p.name("table name")
	case p.acceptK("create", "table"):
		s.What = "CREATE TABLE"
		s.From = p.name("table name")
	case p.acceptK("create", "view"):
		s.What = "CREATE VIEW"
		s.From = p.name("view name")
	case p.acceptK("materialized", "tables"):
		s.What = "MATERIALIZED TABLES"
		if p.acceptK("from") || p.acceptK("in") {
			s.From = p.name("database name")
		}
	case p.acceptK("create", "materialized", "table"):
		s.What = "CREATE MATERIALIZED TABLE"
		s.From = p.name("table name")
	default:
		p.failf(p.peek().pos, "expected TABLES, VIEWS, MATERIALIZED TABLES, DATABASES, CURRENT DATABASE, COLUMNS, CREATE TABLE, CREATE VIEW, CREATE MATERIALIZED TABLE or JOBS after SHOW, found %s", p.describe(p.peek()))
	}
	if p.acceptK("like") {
		s.Like, _ = p.str("pattern")
	}
	return s
}

func (p *parser) parseInsert() Statement {
	pos := p.expectK("insert")
	ins := &Insert{Pos: pos}
	if p.acceptK("overwrite") {
		ins.Overwrite = true
		p.acceptK("table")
	} else {
		p.expectK("into")
		p.acceptK("table")
	}
	ins.Table = p.name("table name")
	ins.Hints = p.hints()
	if p.acceptK("partition") {
		ins.Partition = p.partitionSpec()
	}
	if p.isP("(") && p.isIdentStartAt(1) && !p.isQueryStartAt(1) {
		ins.Columns = p.parenIdentList("column name")
	}
	ins.Source = p.parseQuery()
	return ins
}

// partitionSpec parses "(col = value, ...)" after PARTITION.
func (p *parser) partitionSpec() []*PartitionValue {
	var l []*PartitionValue
	p.expectP("(")
	for {
		c, cpos := p.ident("partition column")
		pv := &PartitionValue{Pos: cpos, Column: c}
		p.expectP("=")
		pv.Value = p.parsePrimary()
		l = append(l, pv)
		if !p.acceptP(",") {
			break
		}
	}
	p.expectP(")")
	return l
}

func (p *parser) isIdentStartAt(k int) bool {
	t := p.peekN(k)
	return t.kind == tQuotedIdent || t.kind == tIdent && !reserved[t.text]
}

// queryInParens reports whether, just after an opening parenthesis, a
// query follows that is closed by ")". A leading "(" is ambiguous between
// a parenthesized query and an expression or join, so that case is
// decided by a speculative parse.
func (p *parser) queryInParens() bool {
	if !p.isQueryStartAt(0) {
		return false
	}
	if !p.isP("(") {
		return true
	}
	if r, ok := p.isQuery[p.i]; ok {
		return r
	}
	start, nq, dollar, depth := p.i, p.nQmark, p.dollar, p.depth
	ok := func() (ok bool) {
		defer func() {
			if r := recover(); r != nil {
				if _, isBail := r.(bailout); !isBail {
					panic(r)
				}
				ok = false
			}
		}()
		p.parseQuery()
		return p.isP(")")
	}()
	p.i, p.nQmark, p.dollar, p.depth = start, nq, dollar, depth
	if p.isQuery == nil {
		p.isQuery = map[int]bool{}
	}
	p.isQuery[start] = ok
	return ok
}

func (p *parser) queryInParensAt1() bool {
	p.i++
	defer func() { p.i-- }()
	return p.queryInParens()
}

func (p *parser) isQueryStartAt(k int) bool {
	for p.peekN(k).kind == tPunct && p.peekN(k).text == "(" {
		k++
	}
	return p.isKAt(k, "select") || p.isKAt(k, "with") || p.isKAt(k, "values")
}

func (p *parser) optAlias() string {
	if p.acceptK("as") {
		s, _ := p.ident("alias")
		return s
	}
	if p.isIdentStart() {
		s, _ := p.ident("alias")
		return s
	}
	return ""
}

func (p *parser) parseUpdate() Statement {
	pos := p.expectK("update")
	u := &Update{Pos: pos, Table: p.name("table name")}
	u.Alias = p.optAlias()
	p.expectK("set")
	u.Sets = p.assignments()
	if p.acceptK("where") {
		u.Where = p.parseExpr()
	}
	return u
}

func (p *parser) parseMerge() Statement {
	pos := p.expectK("merge")
	p.expectK("into")
	m := &Merge{Pos: pos, Table: p.name("table name")}
	m.Alias = p.optAlias()
	p.expectK("using")
	m.Source = p.parseTablePrimary()
	p.expectK("on")
	m.On = p.parseExpr()
	for p.isK("when") {
		w := &MergeWhen{Pos: p.peek().pos}
		p.i++
		w.Matched = !p.acceptK("not")
		p.expectK("matched")
		if p.acceptK("and") {
			w.Cond = p.parseExpr()
		}
		p.expectK("then")
		switch {
		case w.Matched && p.acceptK("update"):
			w.Action = "UPDATE"
			p.expectK("set")
			w.Sets = p.assignments()
		case w.Matched && p.acceptK("delete"):
			w.Action = "DELETE"
		case !w.Matched && p.acceptK("insert"):
			w.Action = "INSERT"
			if p.isP("(") {
				w.Columns = p.parenIdentList("column name")
			}
			p.expectK("values")
			p.expectP("(")
			for {
				w.Values = append(w.Values, p.parseExpr())
				if !p.acceptP(",") {
					break
				}
			}
			p.expectP(")")
		case w.Matched:
			p.failf(p.peek().pos, "expected UPDATE or DELETE after WHEN MATCHED THEN, found %s", p.describe(p.peek()))
		default:
			p.failf(p.peek().pos, "expected INSERT after WHEN NOT MATCHED THEN, found %s", p.describe(p.peek()))
		}
		m.Whens = append(m.Whens, w)
	}
	if len(m.Whens) == 0 {
		p.failf(p.peek().pos, "MERGE needs a WHEN [NOT] MATCHED clause, found %s", p.describe(p.peek()))
	}
	return m
}

// assignments parses col = expr, ... (UPDATE's SET list).
func (p *parser) assignments() []*Assignment {
	var out []*Assignment
	for {
		c, cpos := p.ident("column name")
		p.expectP("=")
		out = append(out, &Assignment{Pos: cpos, Column: c, Value: p.parseExpr()})
		if !p.acceptP(",") {
			return out
		}
	}
}

func (p *parser) parseDelete() Statement {
	pos := p.expectK("delete")
	p.expectK("from")
	d := &Delete{Pos: pos, Table: p.name("table name")}
	d.Alias = p.optAlias()
	if p.acceptK("where") {
		d.Where = p.parseExpr()
	}
	return d
}

func (p *parser) ifNotExists() bool {
	if p.acceptK("if") {
		p.expectK("not", "exists")
		return true
	}
	return false
}

func (p *parser) ifExists() bool {
	if p.acceptK("if") {
		p.expectK("exists")
		return true
	}
	return false
}

func (p *parser) parseCreate() Statement {
	pos := p.expectK("create")
	orReplace, orAlter := false, false
	if p.acceptK("or") {
		if orAlter = p.acceptK("alter"); !orAlter {
			p.expectK("replace")
			orReplace = true
		}
	}
	if orAlter && !p.isK("materialized") {
		p.failf(p.peek().pos, "expected MATERIALIZED TABLE after CREATE OR ALTER, found %s", p.describe(p.peek()))
	}
	temp := p.acceptK("temporary")
	if !temp {
		p.acceptK("temp")
	}
	if orReplace && !p.isK("view") && !p.isK("table") {
		p.failf(p.peek().pos, "expected VIEW or TABLE after CREATE OR REPLACE, found %s", p.describe(p.peek()))
	}
	switch {
	case p.acceptK("view"):
		v := &CreateView{Pos: pos, OrReplace: orReplace, Temporary: temp, IfNotExists: p.ifNotExists(), Name: p.name("view name")}
		if p.isP("(") {
			v.Columns = p.parenIdentList("column name")
		}
		p.expectK("as")
		v.As = p.parseQuery()
		return v
	case p.acceptK("function"):
		f := &CreateFunction{Pos: pos, Temporary: temp, Name: p.name("function name")}
		p.expectK("as")
		f.Class, _ = p.str("function class")
		if p.acceptK("language") {
			l, _ := p.anyIdent("language")
			f.Language = strings.ToUpper(l)
		}
		return f
	}
	if temp {
		p.failf(p.peek().pos, "expected VIEW or FUNCTION after CREATE TEMPORARY, found %s", p.describe(p.peek()))
	}
	switch {
	case p.acceptK("database") || p.acceptK("schema"):
		c := &CreateDatabase{Pos: pos, IfNotExists: p.ifNotExists()}
		c.Name, _ = p.ident("database name")
		if p.acceptK("comment") {
			c.Comment, _ = p.str("comment")
		}
		if p.acceptK("with") {
			c.With = p.properties()
		}
		return c
	case p.acceptK("materialized"):
		p.expectK("table")
		return p.parseCreateMaterialized(pos, orAlter)
	case p.acceptK("table"):
		return p.parseCreateTable(pos, orReplace)
	}
	p.failf(p.peek().pos, "expected TABLE, MATERIALIZED TABLE or DATABASE after CREATE, found %s", p.describe(p.peek()))
	return nil
}

func (p *parser) parseCreateTable(pos Pos, orReplace bool) Statement {
	c := &CreateTable{Pos: pos, OrReplace: orReplace, IfNotExists: p.ifNotExists()}
	if c.OrReplace && c.IfNotExists {
		p.failf(pos, "CREATE OR REPLACE TABLE cannot have IF NOT EXISTS: one replaces the table, the other keeps it")
	}
	c.Name = p.name("table name")
	if p.acceptP("(") {
		c.Columns, c.PrimaryKey, c.PrimaryKeyPos, c.Watermark = p.tableElements()
	}
	c.Comment, c.PartitionedBy, c.With = p.tableTail()
	if p.acceptK("as") {
		c.As = p.parseQuery()
	}
	if c.Columns == nil && c.As == nil {
		p.failf(p.peek().pos, "CREATE TABLE needs a column list or AS query")
	}
	return c
}

// tableElements parses a table's column list after its "(", through its
// ")": columns (computed ones too), PRIMARY KEY and WATERMARK.
func (p *parser) tableElements() (cols []*ColumnDef, pk []string, pkPos Pos, wm *Watermark) {
	for {
		switch {
		case p.isK("primary") || p.isK("constraint"):
			if p.acceptK("constraint") {
				p.ident("constraint name")
			}
			if pk != nil {
				p.failf(p.peek().pos, "multiple primary keys")
			}
			pkPos = p.expectK("primary", "key")
			pk = p.parenIdentList("column name")
			p.notEnforced()
		case p.isK("watermark"):
			wpos := p.expectK("watermark", "for")
			col, _ := p.ident("column name")
			p.expectK("as")
			wm = &Watermark{Pos: wpos, Column: col, Expr: p.parseExpr()}
		default:
			col := p.columnDef(true)
			if p.isK("primary") {
				if pk != nil {
					p.failf(p.peek().pos, "multiple primary keys")
				}
				pkPos = p.expectK("primary", "key")
				pk = []string{col.Name}
				p.notEnforced()
			}
			if p.acceptK("comment") && col.Comment == "" {
				col.Comment, _ = p.str("comment")
			}
			cols = append(cols, col)
		}
		if !p.acceptP(",") {
			break
		}
	}
	p.expectP(")")
	return cols, pk, pkPos, wm
}

// tableTail parses the optional COMMENT, PARTITIONED BY and WITH clauses
// after a table's name and column list (the formatter's tableTail).
func (p *parser) tableTail() (comment string, partitionedBy []string, with []*Property) {
	if p.acceptK("comment") {
		comment, _ = p.str("comment")
	}
	if p.acceptK("partitioned", "by") {
		partitionedBy = p.parenIdentList("partition column")
	}
	if p.acceptK("with") {
		with = p.properties()
	}
	return comment, partitionedBy, with
}

func (p *parser) notEnforced() {
	if !p.acceptK("not", "enforced") {
		p.failf(p.peek().pos, "expected NOT ENFORCED after PRIMARY KEY (flightd does not validate keys; declare them NOT ENFORCED)")
	}
}

func (p *parser) columnDef(allowComputed bool) *ColumnDef {
	name, pos := p.ident("column name")
	col := &ColumnDef{Pos: pos, Name: name}
	if allowComputed && p.acceptK("as") {
		col.Computed = p.parseExpr()
		return col
	}
	col.Type = p.parseType()
	if p.acceptK("not", "null") {
		col.NotNull = true
	} else {
		p.acceptK("null")
	}
	if p.acceptK("comment") {
		col.Comment, _ = p.str("comment")
	}
	return col
}

func (p *parser) properties() []*Property {
	p.expectP("(")
	var props []*Property
	if p.acceptP(")") {
		return props
	}
	for {
		k, pos := p.str("option key")
		p.expectP("=")
		v, _ := p.str("option value")
		props = append(props, &Property{Pos: pos, Key: k, Value: v})
		if !p.acceptP(",") {
			break
		}
	}
	p.expectP(")")
	return props
}

func (p *parser) parseDrop() Statement {
	pos := p.expectK("drop")
	temp := p.acceptK("temporary")
	if p.acceptK("view") {
		return &DropView{Pos: pos, Temporary: temp, IfExists: p.ifExists(), Name: p.name("view name")}
	}
	if temp {
		p.failf(p.peek().pos, "expected VIEW after DROP TEMPORARY, found %s", p.describe(p.peek()))
	}
	switch {
	case p.acceptK("database") || p.acceptK("schema"):
		d := &DropDatabase{Pos: pos, IfExists: p.ifExists()}
		d.Name, _ = p.ident("database name")
		if p.acceptK("cascade") {
			d.Cascade = true
		} else {
			p.acceptK("restrict")
		}
		return d
	case p.acceptK("materialized"):
		p.expectK("table")
		return &DropTable{Pos: pos, Materialized: true, IfExists: p.ifExists(), Name: p.name("table name")}
	case p.acceptK("table"):
		return &DropTable{Pos: pos, IfExists: p.ifExists(), Name: p.name("table name")}
	}
	p.failf(p.peek().pos, "expected TABLE or DATABASE after DROP, found %s", p.describe(p.peek()))
	return nil
}

func (p *parser) parseAlter() Statement {
	pos := p.expectK("alter")
	if p.acceptK("materialized") {
		p.expectK("table")
		return p.parseAlterMaterialized(pos)
	}
	if p.acceptK("database") || p.acceptK("schema") {
		a := &AlterDatabase{Pos: pos}
		a.Name, _ = p.ident("database name")
		p.expectK("set")
		a.Set = p.properties()
		return a
	}
	if !p.isK("table") {
		p.failf(p.peek().pos, "expected TABLE, MATERIALIZED TABLE or DATABASE after ALTER, found %s", p.describe(p.peek()))
	}
	p.expectK("table")
	a := &AlterTable{Pos: pos, Name: p.name("table name")}
	for {
		t := p.peek()
		switch {
		case p.acceptK("add"):
			p.acceptK("column")
			if p.acceptP("(") {
				for {
					a.Actions = append(a.Actions, &AddColumn{Pos: t.pos, Column: p.columnDef(false)})
					if !p.acceptP(",") {
						break
					}
				}
				p.expectP(")")
			} else {
				a.Actions = append(a.Actions, &AddColumn{Pos: t.pos, Column: p.columnDef(false)})
			}
		case p.acceptK("drop"):
			p.acceptK("column")
			c, _ := p.ident("column name")
			a.Actions = append(a.Actions, &DropColumn{Pos: t.pos, Name: c})
		case p.acceptK("rename"):
			if p.acceptK("to") {
				a.Actions = append(a.Actions, &RenameTable{Pos: t.pos, Name: p.name("table name")})
				break
			}
			p.acceptK("column")
			old, _ := p.ident("column name")
			p.expectK("to")
			nw, _ := p.ident("column name")
			a.Actions = append(a.Actions, &RenameColumn{Pos: t.pos, Old: old, New: nw})
		case p.acceptK("modify"):
			p.acceptK("column")
			c, _ := p.ident("column name")
			act := &AlterColumnType{Pos: t.pos, Column: c, Type: p.parseType()}
			act.NotNull = p.acceptK("not", "null")
			a.Actions = append(a.Actions, act)
		case p.acceptK("alter"):
			p.acceptK("column")
			c, _ := p.ident("column name")
			if !p.acceptK("type") {
				p.expectK("set", "data", "type")
			}
			act := &AlterColumnType{Pos: t.pos, Column: c, Type: p.parseType()}
			act.NotNull = p.acceptK("not", "null")
			a.Actions = append(a.Actions, act)
		case p.acceptK("set"):
			a.Actions = append(a.Actions, &SetOptions{Pos: t.pos, Options: p.properties()})
		case p.acceptK("reset"):
			p.expectP("(")
			r := &ResetOptions{Pos: t.pos}
			for {
				k, _ := p.str("option key")
				r.Keys = append(r.Keys, k)
				if !p.acceptP(",") {
					break
				}
			}
			p.expectP(")")
			a.Actions = append(a.Actions, r)
		default:
			p.failf(t.pos, "expected ADD, DROP, RENAME, MODIFY, ALTER, SET or RESET, found %s", p.describe(t))
		}
		if !p.acceptP(",") {
			return a
		}
	}
}

// ---- types

var typeAliases = map[string]string{
	"bool": "BOOLEAN", "boolean": "BOOLEAN", "tinyint": "TINYINT", "smallint": "SMALLINT",
	"int": "INT", "integer": "INT", "bigint": "BIGINT", "float": "FLOAT", "real": "FLOAT",
	"double": "DOUBLE", "decimal": "DECIMAL", "dec": "DECIMAL", "numeric": "DECIMAL",
	"char": "CHAR", "character": "CHAR", "varchar": "VARCHAR", "string": "STRING",
	"text": "STRING", "binary": "BINARY", "varbinary": "VARBINARY", "bytes": "BYTES",
	"date": "DATE", "time": "TIME", "timestamp": "TIMESTAMP", "timestamp_ltz": "TIMESTAMP_LTZ",
	"interval": "INTERVAL", "array": "ARRAY", "map": "MAP", "row": "ROW", "multiset": "MULTISET",
}

func (p *parser) parseType() *TypeName {
	p.enter()
	defer p.leave()
	t := p.peek()
	if t.kind != tIdent {
		p.failf(t.pos, "expected a type name, found %s", p.describe(t))
	}
	name, ok := typeAliases[t.text]
	if !ok {
		p.failf(t.pos, "unknown type %s", p.describe(t))
	}
	p.i++
	tn := &TypeName{Pos: t.pos, Name: name}
	switch name {
	case "DOUBLE":
		p.acceptK("precision")
	case "CHAR":
		if p.acceptK("varying") {
			tn.Name = "VARCHAR"
		}
	case "ARRAY", "MULTISET":
		p.expectP("<")
		tn.Elems = []*TypeName{p.elemType()}
		p.expectP(">")
		return tn
	case "MAP":
		p.expectP("<")
		tn.Elems = []*TypeName{p.elemType()}
		p.expectP(",")
		tn.Elems = append(tn.Elems, p.elemType())
		p.expectP(">")
		return tn
	case "ROW":
		open, closeTok := "<", ">"
		if p.isP("(") {
			open, closeTok = "(", ")"
		}
		p.expectP(open)
		for {
			tn.Fields = append(tn.Fields, p.columnDef(false))
			if !p.acceptP(",") {
				break
			}
		}
		p.expectP(closeTok)
		return tn
	case "INTERVAL":
		return tn
	}
	if p.acceptP("(") {
		for {
			nt := p.peek()
			if nt.kind != tNumber {
				p.failf(nt.pos, "expected a number in type parameters, found %s", p.describe(nt))
			}
			v, err := strconv.Atoi(nt.text)
			if err != nil || v < 0 {
				p.failf(nt.pos, "invalid type parameter %s", nt.text)
			}
			p.i++
			tn.Params = append(tn.Params, v)
			if !p.acceptP(",") {
				break
			}
		}
		p.expectP(")")
	}
	if name == "TIMESTAMP" || name == "TIME" {
		if p.acceptK("with", "local", "time", "zone") {
			if name == "TIME" {
				p.failf(t.pos, "TIME WITH LOCAL TIME ZONE is not supported")
			}
			tn.Name = "TIMESTAMP_LTZ"
		} else {
			p.acceptK("without", "time", "zone")
		}
	}
	return tn
}

// elemType is an element type of ARRAY or MAP: T [NOT NULL | NULL].
func (p *parser) elemType() *TypeName {
	t := p.parseType()
	if p.acceptK("not", "null") {
		t.NotNull = true
	} else {
		p.acceptK("null")
	}
	return t
}

// ---- queries

func (p *parser) parseQuery() *Query {
	p.enter()
	defer p.leave()
	q := &Query{Pos: p.peek().pos}
	if p.acceptK("with") {
		q.Recursive = p.acceptK("recursive")
		for {
			name, pos := p.ident("CTE name")
			cte := &CTE{Pos: pos, Name: name}
			if p.isP("(") {
				cte.Columns = p.parenIdentList("column name")
			}
			p.expectK("as")
			p.expectP("(")
			cte.Query = p.parseQuery()
			p.expectP(")")
			q.With = append(q.With, cte)
			if !p.acceptP(",") {
				break
			}
		}
	}
	q.Body = p.parseSetExpr(0)
	if p.acceptK("order", "by") {
		q.OrderBy = p.orderItems()
	}
	p.parseLimit(q)
	return q
}

func (p *parser) parseLimit(q *Query) {
	for {
		switch {
		case q.Limit == nil && p.acceptK("limit"):
			q.Limit = p.parsePrimary()
			if p.acceptP(",") { // LIMIT offset, count
				q.Offset = q.Limit
				q.Limit = p.parsePrimary()
			}
		case q.Offset == nil && p.acceptK("offset"):
			q.Offset = p.parsePrimary()
			if !p.acceptK("rows") {
				p.acceptK("row")
			}
		case q.Limit == nil && p.acceptK("fetch"):
			if !p.acceptK("first") {
				p.expectK("next")
			}
			if p.isK("row") || p.isK("rows") {
				q.Limit = &Literal{Pos: p.peek().pos, Kind: LitNumber, Value: "1"}
			} else {
				q.Limit = p.parsePrimary()
			}
			if !p.acceptK("rows") {
				p.expectK("row")
			}
			p.expectK("only")
		default:
			return
		}
	}
}

func (p *parser) orderItems() []*OrderItem {
	var items []*OrderItem
	for {
		it := &OrderItem{Pos: p.peek().pos, Expr: p.parseExpr()}
		if p.acceptK("desc") {
			it.Desc = true
		} else {
			p.acceptK("asc")
		}
		if p.acceptK("nulls") {
			first := p.acceptK("first")
			if !first {
				p.expectK("last")
			}
			it.NullsFirst = &first
		}
		items = append(items, it)
		if !p.acceptP(",") {
			return items
		}
	}
}

// parseSetExpr parses set operations; INTERSECT binds tighter than UNION
// and EXCEPT.
func (p *parser) parseSetExpr(minPrec int) SetExpr {
	defer p.endChain(p.depth)
	left := p.parseSetPrimary()
	for {
		p.enter()
		t := p.peek()
		var op string
		var prec int
		switch {
		case p.isK("union"):
			op, prec = "UNION", 1
		case p.isK("except") || p.isK("minus"):
			op, prec = "EXCEPT", 1
		case p.isK("intersect"):
			op, prec = "INTERSECT", 2
		default:
			return left
		}
		if prec <= minPrec {
			return left
		}
		p.i++
		all := p.acceptK("all")
		if !all {
			p.acceptK("distinct")
		}
		right := p.parseSetExpr(prec)
		left = &SetOp{Pos: t.pos, Op: op, All: all, Left: left, Right: right}
	}
}

func (p *parser) parseSetPrimary() SetExpr {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch {
	case p.isP("("):
		p.i++
		q := p.parseQuery()
		p.expectP(")")
		return &ParenQuery{Pos: t.pos, Query: q}
	case p.isK("select"):
		return p.parseSelect()
	case p.isK("values"):
		return p.parseValues()
	}
	p.failf(t.pos, "expected SELECT, VALUES or \"(\", found %s", p.describe(t))
	return nil
}

func (p *parser) parseValues() *Values {
	v := &Values{Pos: p.expectK("values")}
	for {
		p.expectP("(")
		var row []Expr
		for {
			row = append(row, p.parseExpr())
			if !p.acceptP(",") {
				break
			}
		}
		p.expectP(")")
		v.Rows = append(v.Rows, row)
		if !p.acceptP(",") {
			return v
		}
	}
}

func (p *parser) parseSelect() *Select {
	s := &Select{Pos: p.expectK("select")}
	s.Hints = p.hints()
	if p.acceptK("distinct") {
		s.Distinct = true
	} else {
		p.acceptK("all")
	}
	for {
		s.Items = append(s.Items, p.selectItem())
		if !p.acceptP(",") {
			break
		}
	}
	if p.acceptK("from") {
		// The binder joins the FROM list into a tree as deep as it is long.
		defer p.endChain(p.depth)
		for {
			p.enter()
			s.From = append(s.From, p.parseJoinTree())
			if !p.acceptP(",") {
				break
			}
		}
	}
	if p.acceptK("where") {
		s.Where = p.parseExpr()
	}
	if p.acceptK("group", "by") {
		for {
			s.GroupBy = append(s.GroupBy, p.groupItem())
			if !p.acceptP(",") {
				break
			}
		}
	}
	if p.acceptK("having") {
		s.Having = p.parseExpr()
	}
	if p.acceptK("window") {
		for {
			name, pos := p.ident("window name")
			p.expectK("as")
			s.Windows = append(s.Windows, &NamedWindow{Pos: pos, Name: name, Spec: p.windowSpecParen()})
			if !p.acceptP(",") {
				break
			}
		}
	}
	return s
}

func (p *parser) selectItem() *SelectItem {
	t := p.peek()
	if p.acceptP("*") {
		return &SelectItem{Pos: t.pos, Expr: &Star{Pos: t.pos}}
	}
	it := &SelectItem{Pos: t.pos, Expr: p.parseExpr()}
	if p.acceptK("as") {
		if p.peek().kind == tString { // some dialects allow AS 'alias'
			it.Alias, _ = p.str("alias")
		} else {
			it.Alias, _ = p.ident("alias")
		}
	} else if p.isIdentStart() {
		it.Alias, _ = p.ident("alias")
	}
	return it
}

func (p *parser) groupItem() Expr {
	t := p.peek()
	switch {
	case p.isK("rollup") && p.peekN(1).text == "(":
		p.i += 2
		r := &Rollup{Pos: t.pos, Exprs: p.exprList()}
		p.expectP(")")
		return r
	case p.isK("cube") && p.peekN(1).text == "(":
		p.i += 2
		c := &Cube{Pos: t.pos, Exprs: p.exprList()}
		p.expectP(")")
		return c
	case p.isK("grouping") && p.isKAt(1, "sets"):
		p.i += 2
		p.expectP("(")
		g := &GroupingSets{Pos: t.pos}
		for {
			if p.acceptP("(") {
				var set []Expr
				if !p.isP(")") {
					set = p.exprList()
				}
				p.expectP(")")
				g.Sets = append(g.Sets, set)
			} else {
				g.Sets = append(g.Sets, []Expr{p.parseExpr()})
			}
			if !p.acceptP(",") {
				break
			}
		}
		p.expectP(")")
		return g
	}
	return p.parseExpr()
}

func (p *parser) exprList() []Expr {
	var l []Expr
	for {
		l = append(l, p.parseExpr())
		if !p.acceptP(",") {
			return l
		}
	}
}

func (p *parser) hints() []*Hint {
	var out []*Hint
	for p.peek().kind == tHint {
		t := p.nextTok()
		out = append(out, p.parseHintBody(t)...)
	}
	return out
}

// parseHintBody parses the text of /*+ ... */ with a sub-parser whose
// positions are those of the enclosing source.
func (p *parser) parseHintBody(t token) []*Hint {
	lx := &lexer{src: p.src[:t.pos.Offset+3+len(t.text)], off: t.pos.Offset + 3, line: t.pos.Line, col: t.pos.Col + 3}
	sub := &parser{src: p.src}
	for {
		tk := lx.next()
		if tk.kind == tBadUnclosed {
			p.failf(tk.pos, "%s", tk.text)
		}
		sub.toks = append(sub.toks, tk)
		if tk.kind == tEOF {
			break
		}
	}
	var out []*Hint
	for {
		name, pos := sub.anyIdent("hint name")
		if !plainHintName(name) {
			// It is written back bare: `` or `a b` would not read again.
			p.failf(pos, "hint name %s is not a plain identifier", QuoteIdent(name))
		}
		h := &Hint{Pos: pos, Name: strings.ToUpper(name)}
		if sub.acceptP("(") {
			for !sub.isP(")") {
				if sub.peek().kind == tString && sub.peekN(1).text == "=" {
					k, kpos := sub.str("hint option key")
					sub.expectP("=")
					v, _ := sub.str("hint option value")
					h.Options = append(h.Options, &Property{Pos: kpos, Key: k, Value: v})
				} else if sub.peek().kind == tString {
					s, _ := sub.str("hint argument")
					h.Args = append(h.Args, s)
				} else {
					s, _ := sub.anyIdent("hint argument")
					h.Args = append(h.Args, s)
				}
				if !sub.acceptP(",") {
					break
				}
			}
			sub.expectP(")")
		}
		if h.Options != nil && h.Args != nil {
			p.failf(pos, "hint %s mixes key=value options and plain arguments", h.Name)
		}
		out = append(out, h)
		sub.acceptP(",")
		if sub.peek().kind == tEOF {
			return out
		}
	}
}

// plainHintName reports whether name is letters, digits, _ and $, not
// starting with a digit or $.
func plainHintName(name string) bool {
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case i > 0 && (r >= '0' && r <= '9' || r == '$'):
		default:
			return false
		}
	}
	return name != ""
}

// ---- FROM

func (p *parser) parseJoinTree() TableRef {
	p.enter()
	defer p.leave()
	defer p.endChain(p.depth)
	left := p.parseTablePrimary()
	for {
		p.enter()
		t := p.peek()
		j := &Join{Pos: t.pos}
		j.Natural = p.acceptK("natural")
		switch {
		case p.acceptK("join"):
			j.Kind = "INNER"
		case p.acceptK("inner", "join"):
			j.Kind = "INNER"
		case p.acceptK("left"):
			p.acceptK("outer")
			p.expectK("join")
			j.Kind = "LEFT"
		case p.acceptK("right"):
			p.acceptK("outer")
			p.expectK("join")
			j.Kind = "RIGHT"
		case p.acceptK("full"):
			p.acceptK("outer")
			p.expectK("join")
			j.Kind = "FULL"
		case p.acceptK("cross", "join"):
			j.Kind = "CROSS"
		default:
			if j.Natural {
				p.failf(p.peek().pos, "expected JOIN after NATURAL, found %s", p.describe(p.peek()))
			}
			return left
		}
		j.Left = left
		j.Right = p.parseTablePrimary()
		if j.Kind != "CROSS" && !j.Natural {
			switch {
			case p.acceptK("on"):
				j.On = p.parseExpr()
			case p.acceptK("using"):
				j.Using = p.parenIdentList("column name")
			default:
				p.failf(p.peek().pos, "expected ON or USING after %s JOIN, found %s", j.Kind, p.describe(p.peek()))
			}
		}
		left = j
	}
}

func (p *parser) colAliases() []string {
	if p.isP("(") {
		return p.parenIdentList("column alias")
	}
	return nil
}

func (p *parser) parseTablePrimary() TableRef {
	p.enter()
	defer p.leave()
	t := p.peek()
	if p.tables++; p.tables > MaxTables {
		panic(bailout{StateErrorf(StateTooComplex, t.pos, "statement too complex: more than %d tables, subqueries and table functions in FROM clauses", MaxTables)})
	}
	lateral := p.acceptK("lateral")
	switch {
	case p.isP("(") && p.queryInParensAt1():
		p.i++
		q := p.parseQuery()
		p.expectP(")")
		d := &DerivedTable{Pos: t.pos, Lateral: lateral, Query: q}
		d.Alias = p.optAlias()
		if d.Alias != "" {
			d.ColAliases = p.colAliases()
		}
		return d
	case p.isP("(") && !lateral:
		p.i++
		inner := p.parseJoinTree()
		p.expectP(")")
		return &ParenTableRef{Pos: t.pos, Inner: inner}
	case p.isK("unnest") && p.peekN(1).text == "(" && !lateral:
		p.i += 2
		u := &Unnest{Pos: t.pos, X: p.parseExpr()}
		p.expectP(")")
		u.Ordinality = p.acceptK("with", "ordinality")
		u.Alias = p.optAlias()
		if u.Alias != "" {
			u.ColAliases = p.colAliases()
		}
		return u
	case p.isK("table") && p.peekN(1).text == "(", p.isBareTableFunc():
		wrapped := !p.isBareTableFunc()
		if wrapped {
			p.i += 2
		}
		ft := p.peek()
		fn, ok := p.parsePrimary().(*FuncCall)
		if !ok {
			p.failf(ft.pos, "expected a table function call inside TABLE(...)")
		}
		if wrapped {
			p.expectP(")")
		}
		tf := &TableFunc{Pos: t.pos, Call: fn}
		tf.Alias = p.optAlias()
		if tf.Alias != "" {
			tf.ColAliases = p.colAliases()
		}
		return tf
	}
	if lateral {
		p.failf(p.peek().pos, "expected a subquery or TABLE(...) after LATERAL, found %s", p.describe(p.peek()))
	}
	tn := &TableName{Pos: t.pos, Name: p.name("table name")}
	tn.Hints = p.hints()
	if p.acceptK("for") {
		p.expectK("system_time", "as", "of")
		tn.SystemTime = p.parseAdditive()
	}
	tn.Alias = p.optAlias()
	if tn.Alias != "" {
		tn.ColAliases = p.colAliases()
	}
	return tn
}

// ---- expressions

func (p *parser) parseExpr() Expr {
	p.enter()
	defer p.leave()
	return p.parseOr()
}

func (p *parser) parseOr() Expr {
	defer p.endChain(p.depth)
	l := p.parseAnd()
	for p.isK("or") {
		p.enter()
		t := p.nextTok()
		l = &Binary{Pos: t.pos, Op: "OR", Left: l, Right: p.parseAnd()}
	}
	return l
}

func (p *parser) parseAnd() Expr {
	defer p.endChain(p.depth)
	l := p.parseNot()
	for p.isK("and") {
		p.enter()
		t := p.nextTok()
		l = &Binary{Pos: t.pos, Op: "AND", Left: l, Right: p.parseNot()}
	}
	return l
}

func (p *parser) parseNot() Expr {
	if p.isK("not") && !p.isKAt(1, "exists") {
		t := p.nextTok()
		p.enter()
		defer p.leave()
		return &Unary{Pos: t.pos, Op: "NOT", X: p.parseNot()}
	}
	return p.parsePredicate()
}

var compareOps = map[string]string{"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

func (p *parser) parsePredicate() Expr {
	defer p.endChain(p.depth)
	l := p.parseConcat()
	for {
		p.enter()
		t := p.peek()
		if t.kind == tPunct {
			if op, ok := compareOps[t.text]; ok {
				p.i++
				l = &Binary{Pos: t.pos, Op: op, Left: l, Right: p.parseConcat()}
				continue
			}
			return l
		}
		if p.acceptK("is") {
			is := &Is{Pos: t.pos, X: l, Not: p.acceptK("not")}
			switch {
			case p.acceptK("null"):
				is.What = "NULL"
			case p.acceptK("true"):
				is.What = "TRUE"
			case p.acceptK("false"):
				is.What = "FALSE"
			case p.acceptK("unknown"):
				is.What = "UNKNOWN"
			case p.acceptK("distinct", "from"):
				is.What = "DISTINCT FROM"
				is.Y = p.parseConcat()
			case p.acceptK("json"):
				// x IS JSON [VALUE | OBJECT | ARRAY | SCALAR] is the call
				// is_json(x, kind), which formats as one.
				kind := "VALUE"
				for _, k := range []string{"value", "object", "array", "scalar"} {
					if p.acceptK(k) {
						kind = strings.ToUpper(k)
						break
					}
				}
				l = negated(is.Not, t.pos, &FuncCall{Pos: t.pos, Name: "is_json", Args: []Expr{l, &Literal{Pos: t.pos, Kind: LitString, Value: kind}}})
				continue
			default:
				p.failf(p.peek().pos, "expected NULL, TRUE, FALSE, UNKNOWN, DISTINCT FROM or JSON after IS, found %s", p.describe(p.peek()))
			}
			l = is
			continue
		}
		not := false
		if p.isK("not") && (p.isKAt(1, "in") || p.isKAt(1, "between") || p.isKAt(1, "like") || p.isKAt(1, "ilike") || p.isKAt(1, "similar")) {
			p.i++
			not = true
		}
		switch {
		case p.acceptK("in"):
			p.expectP("(")
			if p.queryInParens() {
				q := p.parseQuery()
				p.expectP(")")
				l = &InSubquery{Pos: t.pos, Not: not, X: l, Query: q}
			} else {
				list := p.exprList()
				p.expectP(")")
				l = &InList{Pos: t.pos, Not: not, X: l, List: list}
			}
		case p.acceptK("between"):
			p.acceptK("symmetric")
			lo := p.parseConcat()
			p.expectK("and")
			l = &Between{Pos: t.pos, Not: not, X: l, Lo: lo, Hi: p.parseConcat()}
		case p.isK("like") || p.isK("ilike"):
			insensitive := p.nextTok().text == "ilike"
			lk := &Like{Pos: t.pos, Not: not, Insensitive: insensitive, X: l, Pattern: p.parseConcat()}
			if p.acceptK("escape") {
				lk.Escape = p.parseConcat()
			}
			l = lk
		case p.acceptK("similar", "to"):
			// x SIMILAR TO p [ESCAPE e] is the call similar_to(x, p [, e]).
			f := &FuncCall{Pos: t.pos, Name: "similar_to", Args: []Expr{l, p.parseConcat()}}
			if p.acceptK("escape") {
				f.Args = append(f.Args, p.parseConcat())
			}
			l = negated(not, t.pos, f)
		default:
			return l
		}
	}
}

// negated is NOT x when not is set, else x.
func negated(not bool, pos Pos, x Expr) Expr {
	if not {
		return &Unary{Pos: pos, Op: "NOT", X: x}
	}
	return x
}

func (p *parser) parseConcat() Expr {
	defer p.endChain(p.depth)
	l := p.parseAdditive()
	for p.isP("||") {
		p.enter()
		t := p.nextTok()
		l = &Binary{Pos: t.pos, Op: "||", Left: l, Right: p.parseAdditive()}
	}
	return l
}

func (p *parser) parseAdditive() Expr {
	defer p.endChain(p.depth)
	l := p.parseMultiplicative()
	for p.isP("+") || p.isP("-") {
		p.enter()
		t := p.nextTok()
		l = &Binary{Pos: t.pos, Op: t.text, Left: l, Right: p.parseMultiplicative()}
	}
	return l
}

func (p *parser) parseMultiplicative() Expr {
	defer p.endChain(p.depth)
	l := p.parseUnary()
	for p.isP("*") || p.isP("/") || p.isP("%") {
		p.enter()
		t := p.nextTok()
		l = &Binary{Pos: t.pos, Op: t.text, Left: l, Right: p.parseUnary()}
	}
	return l
}

func (p *parser) parseUnary() Expr {
	if p.isP("-") || p.isP("+") {
		t := p.nextTok()
		p.enter()
		defer p.leave()
		return &Unary{Pos: t.pos, Op: t.text, X: p.parseUnary()}
	}
	return p.parsePostfix(p.parsePrimary())
}

// parsePostfix reads subscripts x[i], field accesses x.f and
// PostgreSQL's casts x::type after a primary.
func (p *parser) parsePostfix(x Expr) Expr {
	defer p.endChain(p.depth)
	for {
		t := p.peek()
		switch {
		case p.acceptP("::"):
			p.enter()
			x = &Cast{Pos: t.pos, X: x, Type: p.parseType()}
		case p.acceptP("["):
			p.enter()
			x = &Subscript{Pos: t.pos, X: x, Index: p.parseExpr()}
			p.expectP("]")
		case p.isP(".") && !isIdent(x):
			p.i++
			p.enter()
			name, _ := p.anyIdent("field name")
			x = &FieldAccess{Pos: t.pos, X: x, Field: name}
		default:
			return x
		}
	}
}

func isIdent(x Expr) bool {
	_, ok := x.(*Ident)
	return ok
}

var intervalUnits = map[string]string{
	"year": "YEAR", "years": "YEAR", "month": "MONTH", "months": "MONTH", "week": "WEEK", "weeks": "WEEK",
	"day": "DAY", "days": "DAY", "hour": "HOUR", "hours": "HOUR", "minute": "MINUTE", "minutes": "MINUTE",
	"second": "SECOND", "seconds": "SECOND", "quarter": "QUARTER", "millisecond": "MILLISECOND",
	"microsecond": "MICROSECOND", "nanosecond": "NANOSECOND", "dow": "DOW", "doy": "DOY",
	"epoch": "EPOCH", "isodow": "ISODOW", "isoyear": "ISOYEAR", "decade": "DECADE", "century": "CENTURY",
	"millennium": "MILLENNIUM",
}

func (p *parser) unit(what string) string {
	t := p.peek()
	if t.kind == tIdent {
		if u, ok := intervalUnits[t.text]; ok {
			p.i++
			return u
		}
	}
	p.failf(t.pos, "expected %s, found %s", what, p.describe(t))
	return ""
}

func (p *parser) parsePrimary() Expr {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch t.kind {
	case tNumber:
		p.i++
		return &Literal{Pos: t.pos, Kind: LitNumber, Value: t.text}
	case tString:
		p.i++
		return &Literal{Pos: t.pos, Kind: LitString, Value: t.text}
	case tParam:
		p.i++
		return p.param(t)
	case tPunct:
		if t.text == "(" {
			p.i++
			if p.queryInParens() {
				q := p.parseQuery()
				p.expectP(")")
				return &Subquery{Pos: t.pos, Query: q}
			}
			e := p.parseExpr()
			if p.acceptP(",") {
				return p.overlaps(t.pos, e)
			}
			p.expectP(")")
			return e
		}
	case tQuotedIdent:
		return p.identOrCall()
	case tIdent:
		return p.keywordPrimary(t)
	}
	p.failf(t.pos, "expected an expression, found %s", p.describe(t))
	return nil
}

// overlaps reads the rest of (start, end) OVERLAPS (start, end), the
// call overlaps(s1, e1, s2, e2), after "(start,".
func (p *parser) overlaps(pos Pos, start Expr) Expr {
	f := &FuncCall{Pos: pos, Name: "overlaps", Args: []Expr{start, p.parseExpr()}}
	p.expectP(")")
	p.expectK("overlaps")
	p.expectP("(")
	f.Args = append(f.Args, p.parseExpr())
	p.expectP(",")
	f.Args = append(f.Args, p.parseExpr())
	p.expectP(")")
	return f
}

func (p *parser) param(t token) Expr {
	if t.text == "?" {
		if p.dollar {
			p.failf(t.pos, "cannot mix ? and $n placeholders")
		}
		if p.nQmark++; p.nQmark > MaxParams {
			panic(bailout{StateErrorf(StateTooLarge, t.pos, "statement too large: more than %d parameters", MaxParams)})
		}
		return &Param{Pos: t.pos, Index: p.nQmark}
	}
	if p.nQmark > 0 {
		p.failf(t.pos, "cannot mix ? and $n placeholders")
	}
	p.dollar = true
	n, err := strconv.Atoi(t.text[1:])
	if err != nil || n < 1 || n > MaxParams {
		p.failf(t.pos, "invalid placeholder %s", t.text)
	}
	return &Param{Pos: t.pos, Index: n}
}

// interval parses "INTERVAL ['-']'n' unit [TO unit]".
func (p *parser) interval() *IntervalLiteral {
	iv := &IntervalLiteral{Pos: p.expectK("interval")}
	if p.acceptP("-") {
		iv.Negative = true
	}
	iv.Value, _ = p.str("interval value")
	iv.Unit = p.unit("an interval unit")
	if p.acceptK("to") {
		iv.ToUnit = p.unit("an interval unit")
	}
	return iv
}

func (p *parser) keywordPrimary(t token) Expr {
	next := p.peekN(1)
	switch t.text {
	case "null":
		p.i++
		return &Literal{Pos: t.pos, Kind: LitNull, Value: "NULL"}
	case "true", "false":
		p.i++
		return &Literal{Pos: t.pos, Kind: LitBool, Value: strings.ToUpper(t.text)}
	case "x":
		// X'DEADBEEF': a binary string literal, the quote right after X.
		if next.kind == tString && next.pos.Offset == t.pos.Offset+1 {
			p.i += 2
			return &TypedLiteral{Pos: t.pos, Type: "X", Value: next.text}
		}
	case "date", "time", "timestamp":
		if next.kind == tString {
			p.i += 2
			return &TypedLiteral{Pos: t.pos, Type: strings.ToUpper(t.text), Value: next.text}
		}
	case "interval":
		return p.interval()
	case "array", "map":
		if next.text == "[" && next.kind == tPunct {
			p.i += 2
			c := &Collection{Pos: t.pos, Kind: strings.ToUpper(t.text)}
			if !p.isP("]") {
				c.Elems = p.exprList()
			}
			p.expectP("]")
			return c
		}
	case "case":
		return p.parseCase()
	case "cast", "try_cast":
		if next.text == "(" {
			p.i += 2
			c := &Cast{Pos: t.pos, Try: t.text == "try_cast", X: p.parseExpr()}
			p.expectK("as")
			c.Type = p.parseType()
			p.expectP(")")
			return c
		}
	case "exists":
		p.i++
		p.expectP("(")
		q := p.parseQuery()
		p.expectP(")")
		return &Exists{Pos: t.pos, Query: q}
	case "not":
		if p.isKAt(1, "exists") {
			p.i += 2
			p.expectP("(")
			q := p.parseQuery()
			p.expectP(")")
			return &Exists{Pos: t.pos, Not: true, Query: q}
		}
	case "extract":
		if next.text == "(" {
			p.i += 2
			e := &Extract{Pos: t.pos, Field: p.unit("a date/time field")}
			p.expectK("from")
			e.X = p.parseExpr()
			p.expectP(")")
			return e
		}
	case "substring", "substr", "overlay":
		// SUBSTRING(s FROM a [FOR b]), OVERLAY(s PLACING r FROM a [FOR b]),
		// or their plain call forms.
		if next.text == "(" {
			p.i += 2
			f := &FuncCall{Pos: t.pos, Name: t.text, Args: []Expr{p.parseExpr()}}
			overlay := t.text == "overlay"
			if overlay && p.acceptK("placing") || !overlay && p.acceptK("from") {
				if overlay {
					f.Args = append(f.Args, p.parseExpr())
					p.expectK("from")
				}
				f.Args = append(f.Args, p.parseExpr())
				if p.acceptK("for") {
					f.Args = append(f.Args, p.parseExpr())
				}
			} else {
				for p.acceptP(",") {
					f.Args = append(f.Args, p.parseExpr())
				}
			}
			p.expectP(")")
			return f
		}
	case "floor", "ceil", "ceiling":
		// FLOOR(ts TO unit) and CEIL(ts TO unit) pass the unit as a string
		// argument: floor(ts, 'day').
		if next.text == "(" {
			save := p.i
			p.i += 2
			x := p.parseExpr()
			if p.acceptK("to") {
				u := p.peek()
				f := &FuncCall{Pos: t.pos, Name: t.text, Args: []Expr{x, &Literal{Pos: u.pos, Kind: LitString, Value: p.unit("a time unit")}}}
				p.expectP(")")
				return f
			}
			p.i = save
			return p.call()
		}
	case "position":
		if next.text == "(" {
			p.i += 2
			sub := p.parseConcat()
			f := &FuncCall{Pos: t.pos, Name: "position", Args: []Expr{sub}}
			if p.acceptK("in") {
				f.Args = append(f.Args, p.parseExpr())
			} else {
				p.expectP(",")
				f.Args = append(f.Args, p.parseExpr())
			}
			p.expectP(")")
			return f
		}
	case "trim":
		if next.text == "(" {
			p.i += 2
			name := "trim"
			switch {
			case p.acceptK("both"):
			case p.acceptK("leading"):
				name = "ltrim"
			case p.acceptK("trailing"):
				name = "rtrim"
			}
			var chars Expr
			if !p.acceptK("from") {
				chars = p.parseExpr()
				if !p.acceptK("from") {
					args := []Expr{chars}
					if p.acceptP(",") {
						args = append(args, p.parseExpr())
					}
					p.expectP(")")
					return &FuncCall{Pos: t.pos, Name: name, Args: args}
				}
			}
			x := p.parseExpr()
			p.expectP(")")
			f := &FuncCall{Pos: t.pos, Name: name, Args: []Expr{x}}
			if chars != nil {
				f.Args = append(f.Args, chars)
			}
			return f
		}
	case "current_date", "current_timestamp", "current_time", "localtimestamp", "localtime":
		if next.text != "(" {
			p.i++
			return &FuncCall{Pos: t.pos, Name: t.text}
		}
	case "left", "right", "if", "replace", "mod", "insert":
		if next.text == "(" {
			return p.call()
		}
	case "json_object", "json_array":
		if next.text == "(" {
			return p.jsonConstructor()
		}
	}
	if reserved[t.text] {
		p.failf(t.pos, "expected an expression, found %s", p.describe(t))
	}
	return p.identOrCall()
}

func (p *parser) parseCase() Expr {
	c := &Case{Pos: p.expectK("case")}
	if !p.isK("when") {
		c.Operand = p.parseExpr()
	}
	for p.isK("when") {
		w := &When{Pos: p.nextTok().pos, Cond: p.parseExpr()}
		p.expectK("then")
		w.Then = p.parseExpr()
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		p.failf(p.peek().pos, "expected WHEN in CASE, found %s", p.describe(p.peek()))
	}
	if p.acceptK("else") {
		c.Else = p.parseExpr()
	}
	p.expectK("end")
	return c
}

func (p *parser) identOrCall() Expr {
	if p.peekN(1).kind == tPunct && p.peekN(1).text == "(" && p.peek().kind == tIdent {
		return p.call()
	}
	t := p.peek()
	s, _ := p.anyIdent("identifier")
	id := &Ident{Pos: t.pos, Parts: []string{s}}
	for p.isP(".") {
		p.i++
		if p.isP("*") {
			st := p.nextTok()
			_ = st
			return &Star{Pos: t.pos, Qualifier: id.Parts}
		}
		s, _ = p.anyIdent("identifier")
		id.Parts = append(id.Parts, s)
	}
	return id
}

// jsonConstructor parses JSON_OBJECT([KEY] k VALUE v, ... [{NULL | ABSENT}
// ON NULL]) and JSON_ARRAY(v, ... [{NULL | ABSENT} ON NULL]). The clause
// that is not the default (NULL ON NULL for objects, ABSENT ON NULL for
// arrays) names another function, json_object_absent_on_null or
// json_array_null_on_null, so that the call formats as a plain one; a
// plain json_object(k, v, ...) reads back the same.
func (p *parser) jsonConstructor() Expr {
	t := p.nextTok()
	p.expectP("(")
	f := &FuncCall{Pos: t.pos, Name: t.text}
	object := t.text == "json_object"
	onNull := func() bool { return (p.isK("null") || p.isK("absent")) && p.isKAt(1, "on") }
	for !p.isP(")") && !onNull() {
		if len(f.Args) > 0 {
			p.expectP(",")
		}
		if object {
			p.acceptK("key")
			f.Args = append(f.Args, p.parseExpr())
			if !p.acceptK("value") {
				p.expectP(",")
			}
		}
		f.Args = append(f.Args, p.parseExpr())
	}
	switch {
	case p.acceptK("null", "on", "null"):
		if !object {
			f.Name = "json_array_null_on_null"
		}
	case p.acceptK("absent", "on", "null"):
		if object {
			f.Name = "json_object_absent_on_null"
		}
	}
	p.expectP(")")
	return f
}

func (p *parser) call() Expr {
	t := p.nextTok()
	p.expectP("(")
	f := &FuncCall{Pos: t.pos, Name: t.text}
	if p.acceptP("*") {
		f.Star = true
	} else if !p.isP(")") {
		if p.acceptK("distinct") {
			f.Distinct = true
		} else {
			p.acceptK("all")
		}
		objectAgg := f.Name == "json_objectagg"
		if objectAgg && p.isK("key") && !p.isKAt(1, "value") && !(p.peekN(1).kind == tPunct && p.peekN(1).text == ",") {
			p.i++
		}
		for {
			f.Args = append(f.Args, p.callArg())
			if objectAgg && len(f.Args) == 1 && p.acceptK("value") {
				continue
			}
			if !p.acceptP(",") {
				break
			}
		}
		p.aggregateNulls(f)
	}
	p.expectP(")")
	if p.isK("filter") && p.peekN(1).text == "(" {
		p.i += 2
		p.expectK("where")
		f.Filter = p.parseExpr()
		p.expectP(")")
	}
	if p.isK("over") {
		p.i++
		if p.isP("(") {
			f.Over = p.windowSpecParen()
		} else {
			ref, pos := p.ident("window name")
			f.Over = &WindowSpec{Pos: pos, Ref: ref}
		}
	}
	return f
}

// aggregateNulls reads Flink's NULL clauses of ARRAY_AGG ({RESPECT |
// IGNORE} NULLS), FIRST_VALUE and LAST_VALUE (IGNORE NULLS), JSON_ARRAYAGG and JSON_OBJECTAGG ({NULL | ABSENT} ON
// NULL). As for JSON_OBJECT, the clause that is not the default names
// another function, so the call formats as a plain one.
func (p *parser) aggregateNulls(f *FuncCall) {
	switch f.Name {
	case "array_agg":
		if p.acceptK("ignore", "nulls") {
			f.Name = "array_agg_ignore_nulls"
		} else {
			p.acceptK("respect", "nulls")
		}
	case "first_value", "last_value":
		// Skipping NULL values is what they do, as in Flink.
		p.acceptK("ignore", "nulls")
	case "json_arrayagg", "json_objectagg":
		switch {
		case p.acceptK("null", "on", "null"):
			if f.Name == "json_arrayagg" {
				f.Name = "json_arrayagg_null_on_null"
			}
		case p.acceptK("absent", "on", "null"):
			if f.Name == "json_objectagg" {
				f.Name = "json_objectagg_absent_on_null"
			}
		}
	}
}

func (p *parser) callArg() Expr {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch {
	case p.isK("table") && p.isIdentStartAt(1):
		p.i++
		a := &TableArg{Pos: t.pos, Name: p.name("table name"), Hints: p.hints()}
		if p.acceptK("partition", "by") {
			if p.acceptP("(") {
				a.PartitionBy = p.exprList()
				p.expectP(")")
			} else { // one key: a comma ends the argument
				a.PartitionBy = []Expr{p.parseExpr()}
			}
		}
		return a
	case p.isK("descriptor") && p.peekN(1).text == "(":
		p.i++
		return &Descriptor{Pos: t.pos, Columns: p.parenIdentList("column name")}
	case (t.kind == tIdent || t.kind == tQuotedIdent) && p.peekN(1).text == "=>":
		p.i += 2
		return &NamedArg{Pos: t.pos, Name: t.text, Value: p.callArg()}
	}
	return p.parseExpr()
}

func (p *parser) windowSpecParen() *WindowSpec {
	w := &WindowSpec{Pos: p.expectP("(")}
	if p.isIdentStart() && !p.isK("partition") && !p.isK("order") && !p.isK("rows") && !p.isK("range") {
		w.Ref, _ = p.ident("window name")
	}
	if p.acceptK("partition", "by") {
		w.PartitionBy = p.exprList()
	}
	if p.acceptK("order", "by") {
		w.OrderBy = p.orderItems()
	}
	if p.isK("rows") || p.isK("range") {
		t := p.nextTok()
		f := &Frame{Pos: t.pos, Unit: strings.ToUpper(t.text)}
		if p.acceptK("between") {
			f.Start = p.frameBound()
			p.expectK("and")
			f.End = p.frameBound()
		} else {
			f.Start = p.frameBound()
		}
		w.Frame = f
	}
	p.expectP(")")
	return w
}

func (p *parser) frameBound() *FrameBound {
	t := p.peek()
	b := &FrameBound{Pos: t.pos}
	switch {
	case p.acceptK("unbounded", "preceding"):
		b.Kind = "UNBOUNDED PRECEDING"
	case p.acceptK("unbounded", "following"):
		b.Kind = "UNBOUNDED FOLLOWING"
	case p.acceptK("current", "row"):
		b.Kind = "CURRENT ROW"
	default:
		b.Offset = p.parseAdditive()
		if p.acceptK("preceding") {
			b.Kind = "PRECEDING"
		} else {
			p.expectK("following")
			b.Kind = "FOLLOWING"
		}
	}
	return b
}
