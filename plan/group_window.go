package plan

import (
	"strings"

	"github.com/flightd/flightd/sql"
)

// groupWindowKinds are the legacy group windows (Flink's GROUP BY
// TUMBLE(ts, size), HOP(ts, slide, size), SESSION(ts, gap)) and the
// functions that name their bounds.
var groupWindowKinds = map[string][2]string{
	"tumble":  {"tumble_start", "tumble_end"},
	"hop":     {"hop_start", "hop_end"},
	"session": {"session_start", "session_end"},
}

// rewriteGroupWindow rewrites a SELECT grouped by a legacy group window
// (Nexmark q11: GROUP BY B.bidder, SESSION(B.ts, INTERVAL '10' SECOND)
// with SESSION_START/SESSION_END in the select list) as the window TVF
// it is: FROM TABLE(SESSION(TABLE t PARTITION BY (bidder), DESCRIPTOR(ts),
// gap)) AS B, GROUP BY the other keys, window_start, window_end, and the
// bound functions as B.window_start and B.window_end. The other GROUP BY
// keys partition a SESSION. It returns sel itself when it has no group
// window.
func (b *binder) rewriteGroupWindow(sel *sql.Select) *sql.Select {
	at := -1
	for i, g := range sel.GroupBy {
		if f, ok := g.(*sql.FuncCall); ok && len(f.Args) > 0 {
			if _, ok := groupWindowKinds[f.Name]; ok {
				if at >= 0 {
					b.fail(f.Pos, "GROUP BY has more than one group window")
				}
				at = i
			}
		}
	}
	if at < 0 {
		return sel
	}
	call := sel.GroupBy[at].(*sql.FuncCall)
	if len(sel.From) != 1 {
		b.fail(call.Pos, "a group window (GROUP BY %s(...)) reads one table: FROM names one table", strings.ToUpper(call.Name))
	}
	from, ok := sel.From[0].(*sql.TableName)
	if !ok || from.SystemTime != nil || from.ColAliases != nil {
		b.fail(call.Pos, "a group window (GROUP BY %s(...)) reads one table: FROM names one table", strings.ToUpper(call.Name))
	}
	ts, ok := call.Args[0].(*sql.Ident)
	if !ok {
		b.fail(call.Args[0].Position(), "%s: the first argument of a group window is its time column", strings.ToUpper(call.Name))
	}
	qual := from.Alias
	if qual == "" {
		qual = from.Name.Parts[len(from.Name.Parts)-1]
	}
	data := &sql.TableArg{Pos: from.Pos, Name: from.Name, Hints: from.Hints}
	out := *sel
	out.GroupBy = nil
	for i, g := range sel.GroupBy {
		if i == at {
			continue
		}
		out.GroupBy = append(out.GroupBy, g)
		if call.Name == "session" {
			id, ok := g.(*sql.Ident)
			if !ok {
				b.fail(g.Position(), "SESSION group window: the other GROUP BY keys partition the sessions and must be columns")
			}
			data.PartitionBy = append(data.PartitionBy, &sql.Ident{Pos: id.Pos, Parts: id.Parts[len(id.Parts)-1:]})
		}
	}
	bound := func(name string) *sql.Ident { return &sql.Ident{Pos: call.Pos, Parts: []string{qual, name}} }
	out.GroupBy = append(out.GroupBy, bound("window_start"), bound("window_end"))
	args := append([]sql.Expr{data, &sql.Descriptor{Pos: ts.Pos, Columns: ts.Parts[len(ts.Parts)-1:]}}, call.Args[1:]...)
	out.From = []sql.TableRef{&sql.TableFunc{Pos: from.Pos, Call: &sql.FuncCall{Pos: call.Pos, Name: call.Name, Args: args}, Alias: qual}}
	fns := groupWindowKinds[call.Name]
	replace := func(e sql.Expr) sql.Expr {
		return replaceCalls(e, func(f *sql.FuncCall) sql.Expr {
			switch f.Name {
			case fns[0]:
				return bound("window_start")
			case fns[1]:
				return bound("window_end")
			}
			return nil
		})
	}
	out.Items = make([]*sql.SelectItem, len(sel.Items))
	for i, it := range sel.Items {
		c := *it
		c.Expr = replace(it.Expr)
		out.Items[i] = &c
	}
	if sel.Having != nil {
		out.Having = replace(sel.Having)
	}
	return &out
}

// replaceCalls returns e with the function calls fn maps to an expression
// replaced, through calls, casts and operators.
func replaceCalls(e sql.Expr, fn func(*sql.FuncCall) sql.Expr) sql.Expr {
	switch x := e.(type) {
	case *sql.FuncCall:
		if r := fn(x); r != nil {
			return r
		}
		c := *x
		c.Args = make([]sql.Expr, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = replaceCalls(a, fn)
		}
		return &c
	case *sql.Cast:
		c := *x
		c.X = replaceCalls(x.X, fn)
		return &c
	case *sql.Unary:
		c := *x
		c.X = replaceCalls(x.X, fn)
		return &c
	case *sql.Binary:
		c := *x
		c.Left, c.Right = replaceCalls(x.Left, fn), replaceCalls(x.Right, fn)
		return &c
	}
	return e
}
