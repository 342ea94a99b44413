package sql

// ParseExpr parses one scalar expression, all of src: callers that take a
// condition from a client (a change stream ticket's filter) put it into an
// AST without pasting it into statement text, so it cannot close a
// parenthesis or comment out the rest. Positions are within src.
func ParseExpr(src string) (e Expr, err error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	defer p.recover(&err)
	if p.peek().kind == tEOF {
		return nil, StateErrorf(StateSyntax, Pos{Line: 1, Col: 1}, "empty expression")
	}
	e = p.parseExpr()
	if t := p.peek(); t.kind != tEOF {
		p.failf(t.pos, "unexpected %s after expression", p.describe(t))
	}
	return e, nil
}
