package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/vectorized"
)

// predicate evaluates a boolean expression where only TRUE matters (a
// filter, a join residual): the mask (see vectorized.TrueBits) of the rows
// where it is TRUE. The operands of a chain of ANDs or of ORs run one after
// another, each only on the rows still undecided (AND: every operand so far
// is true; OR: none is); once those are at most half of the batch, it is
// narrowed to them and to the columns the later operands read. An operand
// fails only on undecided rows: if it fails on a batch that was not
// narrowed to them, it runs again on them alone.
//
// A predicate caches its narrowed operands: it is not safe for concurrent
// use (each operator builds its own).
type predicate struct {
	leaf  Expr // evaluated whole when set; else a chain:
	and   bool
	exprs []Expr
	ops   []*predicate
	// tails[from] is ops[from:] over only the columns they read.
	tails map[int]*predTail
}

// predTail is a chain's operands from some position on, rewritten over the
// columns cols (schema) of an input of schema in that they read.
type predTail struct {
	in     *arrow.Schema
	cols   []int
	schema *arrow.Schema
	pred   *predicate // nil when the columns are not known
}

func newPredicate(e Expr) *predicate {
	c, ok := e.(*CallExpr)
	if !ok || (c.Name != "and" && c.Name != "or") || len(c.Args) != 2 {
		return &predicate{leaf: e}
	}
	return newChain(c.Name == "and", chain(c.Name, e, nil))
}

// newChain is the predicate of the AND (else OR) chain of exprs.
func newChain(and bool, exprs []Expr) *predicate {
	p := &predicate{and: and, exprs: exprs}
	for _, x := range exprs {
		p.ops = append(p.ops, newPredicate(x))
	}
	return p
}

// chain appends the operands of the chain of calls to name (and, or) that
// e heads to dst, in order.
func chain(name string, e Expr, dst []Expr) []Expr {
	if c, ok := e.(*CallExpr); ok && c.Name == name && len(c.Args) == 2 {
		return chain(name, c.Args[1], chain(name, c.Args[0], dst))
	}
	return append(dst, e)
}

// tail returns the operands from.. narrowed for an input of schema in.
func (p *predicate) tail(in *arrow.Schema, from int) *predTail {
	if t, ok := p.tails[from]; ok && (t.in == in || t.in.Equal(in)) {
		return t
	}
	t := &predTail{in: in}
	// With no column read, a batch of no columns would lose its row count:
	// such operands keep every column.
	if cols, schema, nes, ok := narrowExprs(in, p.exprs[from:]...); ok && len(cols) > 0 {
		t.cols, t.schema = cols, schema
		t.pred = newChain(p.and, nes)
	}
	if p.tails == nil {
		p.tails = map[int]*predTail{}
	}
	p.tails[from] = t
	return t
}

// mask evaluates p over b: the mask of the rows where it is TRUE and their
// count.
func (p *predicate) mask(ctx context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, int, error) {
	if p.leaf == nil {
		s := &shortCircuit{ec: ec, and: p.and, n: int(b.NumRows()), sub: b, cur: p}
		b.Retain()
		defer s.release()
		return s.run(ctx)
	}
	a, err := evalOne(ctx, ec, p.leaf, b)
	if err != nil {
		return nil, 0, err
	}
	defer a.Release()
	if a.DataType().ID() != arrow.BOOL {
		return nil, 0, fmt.Errorf("%w: predicate %s has type %s, not boolean", ErrInvalid, p.leaf, a.DataType())
	}
	m, n := vectorized.TrueBits(ec.Mem, a)
	return m, n, nil
}

// shortCircuit is the evaluation of one chain over a batch of n rows.
type shortCircuit struct {
	ec  *Context
	and bool
	n   int
	sub arrow.RecordBatch // the batch the next operand runs on
	cur *predicate        // the operands, over sub
	// rows maps sub's rows to the batch's once narrowed (nil before).
	rows []int32
	// undecided is the mask of sub's rows the operands so far leave
	// undecided, cnt their count (nil: all of them).
	undecided arrow.Array
	cnt       int
	found     arrow.Array // OR: the mask of the batch's rows found true
	foundN    int
}

func (s *shortCircuit) release() {
	for _, a := range []arrow.Array{s.undecided, s.found} {
		if a != nil {
			a.Release()
		}
	}
	s.sub.Release()
}

func (s *shortCircuit) run(ctx context.Context) (arrow.Array, int, error) {
	mem := s.ec.Mem
	for k := 0; k < len(s.cur.ops); k++ {
		m, c, err := s.cur.ops[k].mask(ctx, s.ec, s.sub)
		if err != nil {
			// The failing rows may be decided ones: retry on the others.
			if s.undecided == nil || s.cnt == int(s.sub.NumRows()) || ctx.Err() != nil {
				return nil, 0, err
			}
			if k, err = s.narrow(ctx, k); err != nil {
				return nil, 0, err
			}
			k--
			continue
		}
		if s.and {
			if s.undecided != nil {
				m2, c2 := vectorized.AndMasks(mem, s.undecided, m)
				m.Release()
				m, c = m2, c2
			}
			s.setUndecided(m, c)
		} else {
			s.addFound(m)
			if s.undecided == nil {
				s.setUndecided(vectorized.NotMask(mem, m))
			} else {
				s.setUndecided(vectorized.AndNotMasks(mem, s.undecided, m))
			}
			m.Release()
		}
		if s.cnt == 0 {
			break
		}
		if k+1 < len(s.cur.ops) && 2*s.cnt <= int(s.sub.NumRows()) {
			next, err := s.narrow(ctx, k+1)
			if err != nil {
				return nil, 0, err
			}
			k = next - 1
		}
	}
	if s.and {
		m, c := s.batchMask(s.undecided, s.cnt)
		return m, c, nil
	}
	if s.found == nil { // every operand found nothing
		return vectorized.RowsMask(mem, s.n, nil), 0, nil
	}
	s.found.Retain()
	return s.found, s.foundN, nil
}

func (s *shortCircuit) setUndecided(m arrow.Array, c int) {
	if s.undecided != nil {
		s.undecided.Release()
	}
	s.undecided, s.cnt = m, c
}

// addFound adds the undecided rows of sub that m selects to found.
func (s *shortCircuit) addFound(m arrow.Array) {
	mem := s.ec.Mem
	newly := m
	if s.undecided != nil {
		newly, _ = vectorized.AndMasks(mem, s.undecided, m)
		defer newly.Release()
	}
	nm, c := s.batchMask(newly, -1)
	if s.found == nil {
		s.found, s.foundN = nm, c
		return
	}
	f, c := vectorized.OrMasks(mem, s.found, nm)
	nm.Release()
	s.found.Release()
	s.found, s.foundN = f, c
}

// batchMask maps a mask of sub's rows (cnt of them selected, or -1 when
// not known) to a new mask of the batch's rows.
func (s *shortCircuit) batchMask(m arrow.Array, cnt int) (arrow.Array, int) {
	if s.rows == nil {
		m.Retain()
		if cnt < 0 {
			cnt = vectorized.CountMask(m)
		}
		return m, cnt
	}
	rows := keepRows(s.rows, m)
	return vectorized.RowsMask(s.ec.Mem, s.n, rows), len(rows)
}

// narrow replaces sub by its undecided rows and, when known, only the
// columns the operands from.. read. It returns where those operands start
// in the (possibly new) s.cur.
func (s *shortCircuit) narrow(ctx context.Context, from int) (int, error) {
	t := s.cur.tail(s.sub.Schema(), from)
	in := s.sub
	if t.pred != nil {
		in = vectorized.SelectColumns(s.sub, t.schema, t.cols)
	} else {
		in.Retain()
	}
	next, err := vectorized.FilterMask(ctx, s.ec.Mem, in, s.undecided, s.cnt)
	in.Release()
	if err != nil {
		return 0, err
	}
	if s.rows == nil {
		s.rows = vectorized.MaskRows(s.undecided, make([]int32, 0, s.cnt))
	} else {
		s.rows = keepRows(s.rows, s.undecided)
	}
	s.sub.Release()
	s.sub = next
	s.undecided.Release()
	s.undecided = nil
	if t.pred != nil {
		s.cur = t.pred
		return 0, nil
	}
	return from, nil
}

// keepRows returns the entries of rows that mask selects, in a new slice.
func keepRows(rows []int32, mask arrow.Array) []int32 {
	sel := vectorized.MaskRows(mask, nil)
	for i, r := range sel {
		sel[i] = rows[r]
	}
	return sel
}
