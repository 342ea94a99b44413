package sql

import "strings"

// Copy is COPY t FROM 'file' [(options)], COPY t TO 'file' [(options)] or
// COPY (query) TO 'file' [(options)]: rows between a table or query and a
// file on the server (DuckDB's and PostgreSQL's syntax). Options are
// `key value` pairs, separated by commas: FORMAT parquet|csv, HEADER
// true|false, DELIMITER ','.
type Copy struct {
	Pos     Pos
	Table   *Name  // nil when Query is set
	Query   *Query // COPY (query) TO
	From    bool
	Path    string
	PathPos Pos
	Options []*CopyOption
}

// CopyOption is one option of COPY; Key is lower case, Value as written
// (a string literal's content, or an identifier or TRUE/FALSE in lower
// case).
type CopyOption struct {
	Pos   Pos
	Key   string
	Value string
}

func (n *Copy) Position() Pos { return n.Pos }
func (*Copy) stmt()           {}

func (p *parser) parseCopy() Statement {
	c := &Copy{Pos: p.expectK("copy")}
	if p.acceptP("(") {
		c.Query = p.parseQuery()
		p.expectP(")")
	} else {
		c.Table = p.name("table name")
	}
	switch {
	case p.acceptK("from"):
		if c.Query != nil {
			p.failf(c.Pos, "COPY (query) writes a file: use TO, or COPY table FROM")
		}
		c.From = true
	case p.acceptK("to"):
	default:
		p.failf(p.peek().pos, "expected FROM or TO, found %s", p.describe(p.peek()))
	}
	c.Path, c.PathPos = p.str("file path")
	if !p.acceptP("(") {
		return c
	}
	for {
		o := &CopyOption{Pos: p.peek().pos}
		o.Key, _ = p.anyIdent("COPY option")
		o.Key = strings.ToLower(o.Key)
		if t := p.peek(); t.kind == tString {
			o.Value, _ = p.str("option value")
		} else {
			o.Value, _ = p.anyIdent("option value")
			o.Value = strings.ToLower(o.Value)
		}
		c.Options = append(c.Options, o)
		if !p.acceptP(",") {
			break
		}
	}
	p.expectP(")")
	return c
}

func (f *formatter) copyStmt(n *Copy) {
	f.w("COPY ")
	if n.Query != nil {
		f.w("(")
		f.node(n.Query)
		f.w(")")
	} else {
		f.parts(n.Table.Parts)
	}
	if n.From {
		f.w(" FROM ")
	} else {
		f.w(" TO ")
	}
	f.w(QuoteString(n.Path))
	for i, o := range n.Options {
		if i == 0 {
			f.w(" (")
		} else {
			f.w(", ")
		}
		f.w(o.Key, " ", QuoteString(o.Value))
	}
	if len(n.Options) > 0 {
		f.w(")")
	}
}

// isBareTableFunc reports whether a FROM item is read_parquet(...),
// read_csv(...), range(...) or generate_series(...), which need no
// TABLE(...) around them (DuckDB's and Postgres's syntax).
func (p *parser) isBareTableFunc() bool {
	return (p.isK("read_parquet") || p.isK("read_csv") || p.isK("range") || p.isK("generate_series")) && p.peekN(1).kind == tPunct && p.peekN(1).text == "("
}
