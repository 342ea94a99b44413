package exec

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/internal/arrowshare"
	"github.com/flightd/flightd/vectorized"
)

// current holds the batch an operator returned last, released on the next
// call or on Close (the borrowed-batch contract).
type current struct{ b arrow.RecordBatch }

func (c *current) set(b arrow.RecordBatch) arrow.RecordBatch {
	c.release()
	c.b = b
	return b
}

func (c *current) release() {
	if c.b != nil {
		c.b.Release()
		c.b = nil
	}
}

// BatchSource yields batches; it has the shape of tablestore.BatchReader.
type BatchSource interface {
	// Next returns the next batch (borrowed until the next call) or io.EOF.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	Close() error
}

type sourceOp struct {
	ec     *Context
	schema *arrow.Schema
	open   func(ctx context.Context) (BatchSource, error)
	src    BatchSource
	cur    current
}

// NewSource adapts a batch source, opened at Open, to an Operator.
func NewSource(ec *Context, schema *arrow.Schema, open func(ctx context.Context) (BatchSource, error)) Operator {
	return &sourceOp{ec: ec, schema: schema, open: open}
}

func (s *sourceOp) Schema() *arrow.Schema { return s.schema }

func (s *sourceOp) Open(ctx context.Context) error {
	if s.src != nil {
		return nil
	}
	src, err := s.open(ctx)
	if err != nil {
		return err
	}
	s.src = src
	return nil
}

func (s *sourceOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.src == nil {
		return nil, fmt.Errorf("%w: source read before Open", ErrInvalid)
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := s.src.Next(ctx)
		if err != nil {
			return nil, err
		}
		if b.NumRows() == 0 {
			continue
		}
		if int(b.NumCols()) != s.schema.NumFields() {
			return nil, fmt.Errorf("%w: source produced %d columns, schema has %d", ErrInvalid, b.NumCols(), s.schema.NumFields())
		}
		return b, nil
	}
}

func (s *sourceOp) Close() error {
	s.cur.release()
	if s.src == nil {
		return nil
	}
	err := s.src.Close()
	s.src = nil
	return err
}

// batchesOp emits a fixed list of batches it owns (used by Values and by
// operators that materialize their output).
type batchesOp struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	pos     int
	cur     current
}

func (b *batchesOp) next() (arrow.RecordBatch, error) {
	if b.pos >= len(b.batches) {
		return nil, io.EOF
	}
	out := b.batches[b.pos]
	b.batches[b.pos] = nil
	b.pos++
	return b.cur.set(out), nil
}

func (b *batchesOp) close() {
	b.cur.release()
	for _, x := range b.batches[b.pos:] {
		if x != nil {
			x.Release()
		}
	}
	b.batches, b.pos = nil, 0
}

type valuesOp struct {
	ec     *Context
	rows   [][]Expr
	opened bool
	out    batchesOp
	held   Working // the batches built at Open, until Close
}

// NewValues returns the rows of a VALUES list; each Expr is evaluated once
// and converted to the schema's column type.
func NewValues(ec *Context, schema *arrow.Schema, rows [][]Expr) Operator {
	return &valuesOp{ec: ec, rows: rows, out: batchesOp{schema: schema}}
}

func (v *valuesOp) Schema() *arrow.Schema { return v.out.schema }

func (v *valuesOp) Open(ctx context.Context) error {
	if v.opened {
		return nil
	}
	v.opened = true
	v.held = v.ec.Working()
	schema := v.out.schema
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	rb := array.NewRecordBuilder(v.ec.Mem, schema)
	defer rb.Release()
	var pending int64 // bytes appended since the last flush
	flush := func() {
		if rb.Field(0).Len() > 0 {
			v.out.batches = append(v.out.batches, rb.NewRecordBatch())
		}
		pending = 0
	}
	if schema.NumFields() == 0 {
		// Zero columns: emit row-count-only batches.
		for len(v.rows) > 0 {
			n := min(len(v.rows), v.ec.batchSize())
			v.out.batches = append(v.out.batches, array.NewRecordBatch(schema, nil, int64(n)))
			v.rows = v.rows[n:]
		}
		return nil
	}
	for r, row := range v.rows {
		if len(row) != schema.NumFields() {
			return fmt.Errorf("%w: VALUES row %d has %d values, expected %d", ErrInvalid, r+1, len(row), schema.NumFields())
		}
		vals := make([]arrow.Array, len(row))
		var size int64
		for c, e := range row {
			a, err := e.Eval(ctx, v.ec, one)
			if err != nil {
				releaseArrays(vals)
				return fmt.Errorf("VALUES row %d column %d: %w", r+1, c+1, err)
			}
			ca, err := vectorized.Cast(v.ec.Mem, a, schema.Field(c).Type)
			a.Release()
			if err == nil {
				// The copy appended stays until Close: ca's bytes count for it.
				if err = v.held.Hold(e, ca); err != nil {
					ca.Release()
				}
			}
			if err != nil {
				releaseArrays(vals)
				return fmt.Errorf("VALUES row %d column %d: %w", r+1, c+1, err)
			}
			vals[c] = ca
			size += arrowshare.Bytes(ca.Data())
		}
		// A new batch past what one function may compute for a batch: a
		// string column's offsets are 32 bits (40 strings of 60 MB in one
		// VALUES overflowed them and panicked).
		if rb.Field(0).Len() >= v.ec.batchSize() || pending > 0 && pending+size > vectorized.MaxComputedStrings {
			flush()
		}
		for c, ca := range vals {
			vectorized.AppendValue(rb.Field(c), ca, 0)
		}
		releaseArrays(vals)
		pending += size
	}
	flush()
	return nil
}

func (v *valuesOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return v.out.next()
}

func (v *valuesOp) Close() error {
	v.out.close()
	v.held.Release()
	return nil
}

type projectOp struct {
	ec     *Context
	child  Operator
	exprs  []Expr
	schema *arrow.Schema
	cur    current
}

// NewProject computes exprs over each input batch; names name the output
// columns.
func NewProject(ec *Context, child Operator, exprs []Expr, names []string) Operator {
	fields := make([]arrow.Field, len(exprs))
	for i, e := range exprs {
		var name string
		if i < len(names) {
			name = names[i]
		}
		if name == "" {
			// Only then: a constant's rendering can be as long as its value
			// (IN over ten 60 MB strings took 3.9 s to name).
			name = e.String()
		}
		fields[i] = arrow.Field{Name: name, Type: e.DataType(), Nullable: true}
	}
	return &projectOp{ec: ec, child: child, exprs: exprs, schema: arrow.NewSchema(fields, nil)}
}

func (p *projectOp) Schema() *arrow.Schema          { return p.schema }
func (p *projectOp) Open(ctx context.Context) error { return p.child.Open(ctx) }

func (p *projectOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := Next(ctx, p.child)
	if err != nil {
		return nil, err
	}
	// Counted until the batch is made: downstream, batches in flight are
	// outside the budget (see the package documentation).
	w := p.ec.Working()
	defer w.Release()
	cols, err := w.evalAll(ctx, p.exprs, b, nil)
	if err != nil {
		return nil, err
	}
	out := array.NewRecordBatch(p.schema, cols, b.NumRows())
	releaseArrays(cols)
	return p.cur.set(out), nil
}

func (p *projectOp) Close() error {
	p.cur.release()
	return p.child.Close()
}

type limitOp struct {
	ec            *Context
	child         Operator
	offset, count int64
	skipped, sent int64
	cur           current
}

// NewLimit skips offset rows and then returns at most count rows (count < 0:
// no limit). It stops pulling its child once the limit is reached.
func NewLimit(ec *Context, child Operator, offset, count int64) Operator {
	return &limitOp{ec: ec, child: child, offset: max(offset, 0), count: count}
}

func (l *limitOp) Schema() *arrow.Schema          { return l.child.Schema() }
func (l *limitOp) Open(ctx context.Context) error { return l.child.Open(ctx) }

func (l *limitOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if l.count >= 0 && l.sent >= l.count {
			return nil, io.EOF
		}
		b, err := Next(ctx, l.child)
		if err != nil {
			return nil, err
		}
		n := b.NumRows()
		lo := int64(0)
		if l.skipped < l.offset {
			lo = min(l.offset-l.skipped, n)
			l.skipped += lo
		}
		hi := n
		if l.count >= 0 {
			hi = lo + min(n-lo, l.count-l.sent) // lo+count may overflow
		}
		if hi <= lo {
			continue
		}
		l.sent += hi - lo
		if lo == 0 && hi == n {
			b.Retain()
			return l.cur.set(b), nil
		}
		return l.cur.set(b.NewSlice(lo, hi)), nil
	}
}

func (l *limitOp) Close() error {
	l.cur.release()
	return l.child.Close()
}

type unionAllOp struct {
	ec       *Context
	children []Operator
	schema   *arrow.Schema
	idx      int // the child read now
	opened   int // children opened: those before idx, and idx
	cur      current
}

// NewUnionAll concatenates its children's rows; all children must have the
// same column types (names come from the first).
func NewUnionAll(ec *Context, children ...Operator) (Operator, error) {
	if len(children) == 0 {
		return nil, fmt.Errorf("%w: UNION ALL needs at least one input", ErrInvalid)
	}
	s0 := children[0].Schema()
	for i, c := range children[1:] {
		if err := sameTypes(s0, c.Schema()); err != nil {
			return nil, fmt.Errorf("%w: UNION ALL input %d: %v", ErrInvalid, i+2, err)
		}
	}
	fields := make([]arrow.Field, s0.NumFields())
	for i, f := range s0.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: true}
	}
	return &unionAllOp{ec: ec, children: children, schema: arrow.NewSchema(fields, nil)}, nil
}

func sameTypes(a, b *arrow.Schema) error {
	if a.NumFields() != b.NumFields() {
		return fmt.Errorf("%d columns instead of %d", b.NumFields(), a.NumFields())
	}
	for i := range a.Fields() {
		if !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return fmt.Errorf("column %d has type %s instead of %s", i+1, b.Field(i).Type, a.Field(i).Type)
		}
	}
	return nil
}

func (u *unionAllOp) Schema() *arrow.Schema { return u.schema }

// Open opens the first child only, and Next each next child when it comes
// to it: a child that is a Gather runs ahead from its Open, so opening all
// ran every branch at once (250 branches of one scan each took 6.2 GB RSS
// under a 4 GB memory limit).
func (u *unionAllOp) Open(ctx context.Context) error { return u.openCurrent(ctx) }

func (u *unionAllOp) openCurrent(ctx context.Context) error {
	if u.opened > u.idx || u.idx >= len(u.children) {
		return nil
	}
	u.opened = u.idx + 1
	return u.children[u.idx].Open(ctx)
}

func (u *unionAllOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for u.idx < len(u.children) {
		if err := u.openCurrent(ctx); err != nil {
			return nil, err
		}
		b, err := Next(ctx, u.children[u.idx])
		if errors.Is(err, io.EOF) {
			u.idx++
			continue
		}
		if err != nil {
			return nil, err
		}
		return u.cur.set(array.NewRecordBatch(u.schema, b.Columns(), b.NumRows())), nil
	}
	return nil, io.EOF
}

func (u *unionAllOp) Close() error {
	u.cur.release()
	var errs []error
	for _, c := range u.children {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
