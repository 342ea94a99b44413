package exec_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/cockroachdb/datadriven"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// sexpr parses the test expression language:
//
//	(fn arg ...)          function call          a          column a
//	(cast x type)         CAST                   12, 1.5    int64, float64 literal
//	(case c v ... [e])    searched CASE          'text'     string literal
//	(in x a b ...)        IN list                v:type     literal v cast to type
//	null, null:type       NULL literal           true false booleans
type sexpr struct {
	toks   []string
	pos    int
	schema *arrow.Schema
}

func tokenize(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '(' || c == ')':
			out = append(out, string(c))
			i++
		case c == '\'':
			j := i + 1
			for j < len(s) && !(s[j] == '\'' && (j+1 >= len(s) || s[j+1] != '\'')) {
				if s[j] == '\'' {
					j++
				}
				j++
			}
			j++ // closing quote
			for j < len(s) && s[j] != ' ' && s[j] != ')' && s[j] != '(' {
				j++ // :type suffix
			}
			if strings.HasSuffix(s[i:j], "decimal") && j < len(s) && s[j] == '(' {
				j += strings.IndexByte(s[j:], ')') + 1
			}
			out = append(out, s[i:j])
			i = j
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n()", rune(s[j])) {
				j++
			}
			if strings.HasSuffix(s[i:j], "decimal") && j < len(s) && s[j] == '(' {
				j += strings.IndexByte(s[j:], ')') + 1 // decimal(p,s)
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

func (p *sexpr) parse() (exec.Expr, error) {
	if p.pos >= len(p.toks) {
		return nil, fmt.Errorf("unexpected end of expression")
	}
	tok := p.toks[p.pos]
	p.pos++
	if tok != "(" {
		return p.atom(tok)
	}
	if p.pos >= len(p.toks) {
		return nil, fmt.Errorf("unexpected end after (")
	}
	head := p.toks[p.pos]
	p.pos++
	var args []exec.Expr
	var typeArg string
	for p.pos < len(p.toks) && p.toks[p.pos] != ")" {
		if head == "cast" && len(args) == 1 {
			typeArg = p.toks[p.pos]
			p.pos++
			continue
		}
		a, err := p.parse()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	p.pos++ // )
	switch head {
	case "cast":
		t, err := exectest.ParseType(typeArg)
		if err != nil {
			return nil, err
		}
		return exec.NewCast(args[0], t)
	case "case":
		var whens []exec.When
		for len(args) >= 2 {
			whens = append(whens, exec.When{Cond: args[0], Then: args[1]})
			args = args[2:]
		}
		var els exec.Expr
		if len(args) == 1 {
			els = args[0]
		}
		return exec.NewCase(whens, els)
	case "in":
		return exec.NewIn(args[0], args[1:])
	}
	return exec.NewCall(head, args...)
}

func (p *sexpr) atom(tok string) (exec.Expr, error) {
	val, typ := tok, ""
	if i := strings.LastIndex(tok, ":"); i > 0 && !strings.HasSuffix(tok, "'") {
		val, typ = tok[:i], tok[i+1:]
	}
	var s scalar.Scalar
	switch {
	case val == "null":
		t := arrow.Null
		if typ != "" {
			var err error
			if t, err = exectest.ParseType(typ); err != nil {
				return nil, err
			}
		}
		return exec.NewLiteral(scalar.MakeNullScalar(t)), nil
	case val == "true" || val == "false":
		s = scalar.NewBooleanScalar(val == "true")
	case strings.HasPrefix(val, "'"):
		s = scalar.NewStringScalar(strings.ReplaceAll(val[1:len(val)-1], "''", "'"))
	case strings.ContainsAny(val[:1], "-0123456789"):
		if strings.Contains(val, ".") || typ != "" {
			s = scalar.NewStringScalar(val)
			if typ == "" {
				typ = "float64"
			}
		} else {
			var n int64
			if _, err := fmt.Sscan(val, &n); err != nil {
				return nil, err
			}
			s = scalar.NewInt64Scalar(n)
		}
	default:
		idx := p.schema.FieldIndices(val)
		if len(idx) == 0 {
			return nil, fmt.Errorf("no column %q", val)
		}
		return exec.NewColumn(idx[0], p.schema.Field(idx[0]).Type, val), nil
	}
	if typ != "" {
		t, err := exectest.ParseType(typ)
		if err != nil {
			return nil, err
		}
		mem := memory.NewGoAllocator()
		a, err := scalar.MakeArrayFromScalar(s, 1, mem)
		if err != nil {
			return nil, err
		}
		defer a.Release()
		c, err := vectorized.Cast(mem, a, t)
		if err != nil {
			return nil, err
		}
		defer c.Release()
		if s, err = scalar.GetScalar(c, 0); err != nil {
			return nil, err
		}
	}
	return exec.NewLiteral(s), nil
}

func TestExprDatadriven(t *testing.T) {
	datadriven.Walk(t, "testdata/expr", func(t *testing.T, path string) {
		var tbl exectest.Table
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "define":
				lines := strings.Split(strings.TrimSpace(td.Input), "\n")
				tbl = exectest.NewTable(t, lines[0], lines[1:]...)
				return ""
			case "eval", "resolve", "show":
				p := &sexpr{toks: tokenize(td.Input), schema: tbl.Schema}
				e, err := p.parse()
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				switch td.Cmd {
				case "resolve":
					return e.DataType().String() + "\n"
				case "show":
					return e.String() + "\n"
				}
				return evalTable(t, tbl, e)
			}
			t.Fatalf("unknown command %s", td.Cmd)
			return ""
		})
	})
}

// evalTable evaluates e over the table as one sliced batch and as single
// rows; both must agree.
func evalTable(t *testing.T, tbl exectest.Table, e exec.Expr) string {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ec.Now = time.Date(2024, 2, 29, 13, 45, 0, 0, time.UTC)
	run := func(lo, hi int) ([]string, error) {
		b, err := tbl.Batch(mem, lo, hi, 2)
		if err != nil {
			return nil, err
		}
		defer b.Release()
		a, err := e.Eval(context.Background(), ec, b)
		if err != nil {
			return nil, err
		}
		defer a.Release()
		if !arrow.TypeEqual(a.DataType(), e.DataType()) {
			return nil, fmt.Errorf("result type %s differs from declared %s", a.DataType(), e.DataType())
		}
		one := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "r", Type: a.DataType(), Nullable: true}}, nil), []arrow.Array{a}, int64(a.Len()))
		defer one.Release()
		return exectest.BatchRows(one), nil
	}
	all, err := run(0, len(tbl.Rows))
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	for i := range tbl.Rows {
		row, err := run(i, i+1)
		if err != nil || len(row) != 1 || row[0] != all[i] {
			t.Fatalf("%s: row %d alone gives %q (%v), in batch %q", e, i, row, err, all[i])
		}
	}
	return e.DataType().String() + "\n" + strings.Join(all, "\n") + "\n"
}
