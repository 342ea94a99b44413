package exec

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/vectorized"
)

// SetOpKind is INTERSECT or EXCEPT.
type SetOpKind int

// Set operations (UNION is NewUnionAll plus NewDistinct).
const (
	Intersect SetOpKind = iota
	Except
)

func (k SetOpKind) String() string { return [...]string{"INTERSECT", "EXCEPT"}[k] }

type setOp struct {
	ec          *Context
	mem         memAccount
	left, right Operator
	op          SetOpKind
	all         bool
	opened      bool
	// counts holds the right rows' keys, each with its index in cnt (their
	// multiplicity, which EXCEPT/INTERSECT ALL count down); emitted the
	// keys given out. BytesTables, not Go maps: the maps' lookups and
	// hashing were a third of q87's CPU.
	counts  *vectorized.BytesTable
	cnt     []int64
	emitted *vectorized.BytesTable
	bytes   int64 // estimated memory of counts and emitted
	enc     vectorized.KeyEncoder
	cur     current

	// Past the memory budget the maps stop growing: rows whose key they do
	// not hold go to hash partitions of both sides (lp, rp), which
	// sub-operators compute partition by partition after the left input.
	// rightSpilled tells whether the right side's counts are incomplete.
	base         int64
	depth        int
	lp, rp       *partitioner
	rightSpilled bool
	leftDone     bool
	subs         subQueue
}

// NewSetOp returns left INTERSECT/EXCEPT [ALL] right. Rows compare with NULL
// equal to NULL, as SQL set operations do; the output has left's schema.
// Without ALL the output has no duplicates. Past Context.MemoryLimit, rows
// of keys not yet held are partitioned to disk and computed partition by
// partition.
func NewSetOp(ec *Context, left, right Operator, op SetOpKind, all bool) (Operator, error) {
	if err := sameTypes(left.Schema(), right.Schema()); err != nil {
		return nil, fmt.Errorf("%w: %s inputs: %v", ErrInvalid, op, err)
	}
	if op != Intersect && op != Except {
		return nil, fmt.Errorf("%w: unknown set operation %d", ErrInvalid, op)
	}
	return &setOp{ec: ec, left: left, right: right, op: op, all: all}, nil
}

func (s *setOp) Schema() *arrow.Schema { return s.left.Schema() }

// freeze starts partitioning (within maxSpillDepth) once over the budget.
func (s *setOp) freeze() error {
	if s.lp != nil || s.depth >= maxSpillDepth || !s.ec.overBudget(&s.mem, s.base, s.bytes, s.bytes) {
		return nil
	}
	seed := maphash.MakeSeed()
	var err error
	if s.lp, err = newPartitioner(s.ec, s.left.Schema(), seed); err != nil {
		return err
	}
	s.rp, err = newPartitioner(s.ec, s.right.Schema(), seed)
	return err
}

func (s *setOp) Open(ctx context.Context) error {
	if s.opened {
		return nil
	}
	s.opened = true
	if err := s.left.Open(ctx); err != nil {
		return err
	}
	if err := s.right.Open(ctx); err != nil {
		return err
	}
	s.counts = vectorized.NewBytesTable(0)
	s.emitted = vectorized.NewBytesTable(0)
	s.base = s.ec.allocated()
	for {
		b, err := Next(ctx, s.right)
		if errors.Is(err, io.EOF) {
			s.rightSpilled = s.rp != nil
			return nil
		}
		if err != nil {
			return err
		}
		n := int(b.NumRows())
		if err := s.enc.Encode(b.Columns(), n); err != nil {
			return err
		}
		var out []bool
		for i := 0; i < n; i++ {
			k := s.enc.Key(i)
			c, ok, spot := s.counts.Find(k, s.counts.Hash(k))
			if ok {
				s.cnt[c]++
				continue
			}
			if s.rp != nil {
				out = markRow(out, n, i)
				continue
			}
			s.counts.Insert(spot, k, int32(len(s.cnt)))
			s.cnt = append(s.cnt, 1)
			s.bytes += int64(len(k)) + tableEntryBytes + 8
		}
		if out != nil {
			if err := s.rp.write(ctx, b, &s.enc, out); err != nil {
				return err
			}
		}
		if err := s.freeze(); err != nil {
			return err
		}
	}
}

func (s *setOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if !s.opened {
		return nil, fmt.Errorf("%w: set operation read before Open", ErrInvalid)
	}
	for !s.leftDone {
		b, err := Next(ctx, s.left)
		if errors.Is(err, io.EOF) {
			s.leftDone = true
			if err := s.partitionSubs(); err != nil {
				return nil, err
			}
			break
		}
		if err != nil {
			return nil, err
		}
		n := int(b.NumRows())
		if err := s.enc.Encode(b.Columns(), n); err != nil {
			return nil, err
		}
		mask := make([]bool, n)
		var out []bool
		cnt := 0
		for i := 0; i < n; i++ {
			k := s.enc.Key(i)
			ci, held, _ := s.counts.Find(k, s.counts.Hash(k))
			var c int64
			if held {
				c = s.cnt[ci]
			}
			var keep bool
			switch {
			case !held && s.lp != nil && (s.rightSpilled || !s.all && s.op == Except):
				// The key's right rows may be on disk, or (EXCEPT) it
				// would grow emitted: its partition decides.
				if _, done := s.emitted.Get(k); !done {
					out = markRow(out, n, i)
				}
			case s.all && s.op == Intersect:
				keep = c > 0
				if keep {
					s.cnt[ci]--
				}
			case s.all: // EXCEPT ALL
				keep = c == 0
				if !keep {
					s.cnt[ci]--
				}
			default:
				if (c > 0) != (s.op == Intersect) {
					break
				}
				if _, done, spot := s.emitted.Find(k, s.emitted.Hash(k)); !done {
					keep = true
					s.emitted.Insert(spot, k, 0)
					s.bytes += int64(len(k)) + tableEntryBytes
				}
			}
			if keep {
				mask[i] = true
				cnt++
			}
		}
		if out != nil {
			if err := s.lp.write(ctx, b, &s.enc, out); err != nil {
				return nil, err
			}
		}
		if !s.all && s.op == Except {
			// Only EXCEPT's emitted grows with the left input: INTERSECT's
			// holds keys of counts.
			if err := s.freeze(); err != nil {
				return nil, err
			}
		}
		if cnt == 0 {
			continue
		}
		res, err := vectorized.FilterBatch(ctx, s.ec.Mem, b, mask, cnt)
		if err != nil {
			return nil, err
		}
		return s.cur.set(res), nil
	}
	return s.subs.next(ctx, s.Schema(), &s.cur)
}

// partitionSubs turns the partitions, if any, into one set operation each.
func (s *setOp) partitionSubs() error {
	if s.lp == nil {
		return nil
	}
	lp, rp := s.lp, s.rp
	s.lp, s.rp = nil, nil
	if err := lp.finish(); err != nil {
		lp.remove()
		rp.remove()
		return err
	}
	if err := rp.finish(); err != nil {
		lp.remove()
		rp.remove()
		return err
	}
	for p, lf := range lp.files {
		rf := rp.files[p]
		if lf.rows == 0 { // neither operation returns anything
			lf.remove()
			rf.remove()
			continue
		}
		sub := &setOp{ec: s.ec, left: spillOperator(s.ec, lf), right: spillOperator(s.ec, rf), op: s.op, all: s.all, depth: s.depth + 1}
		s.subs.ops = append(s.subs.ops, sub)
	}
	return nil
}

func (s *setOp) Close() error {
	s.cur.release()
	s.counts, s.cnt, s.emitted = nil, nil, nil
	for _, p := range []*partitioner{s.lp, s.rp} {
		if p != nil {
			p.remove()
		}
	}
	s.lp, s.rp = nil, nil
	s.mem.free()
	return errors.Join(s.left.Close(), s.right.Close(), s.subs.close())
}

type distinctOp struct {
	ec    *Context
	child Operator
	set   *spillSet
	base  int64
	enc   vectorized.KeyEncoder
	cur   current
	eof   bool
	subs  subQueue

	// A partial distinct (NewPartialDistinct) counts the rows it saw and
	// kept, and passes rows through once deduplicating does not pay.
	partial     bool
	seen, kept  int64
	passThrough bool
}

// NewDistinct removes duplicate rows (NULL equal to NULL), streaming: the
// first occurrence of each row is emitted as soon as it is seen. Past
// Context.MemoryLimit, rows not seen yet go to hash partitions that hash
// aggregations deduplicate after the input.
func NewDistinct(ec *Context, child Operator) Operator {
	return &distinctOp{ec: ec, child: child}
}

// NewPartialDistinct removes duplicate rows as far as it pays, for a
// distinct above that removes the rest (the planner's eager distinct, below
// a join): after partialProbeRows rows, if it kept more than half of them,
// and whenever its set passes the memory budget, it frees the set and
// passes every further row through. It never spills.
func NewPartialDistinct(ec *Context, child Operator) Operator {
	return &distinctOp{ec: ec, child: child, partial: true}
}

// partialProbeRows is how many rows a partial distinct sees before it
// judges its reduction: a few batches, so that a pass-through costs little.
const partialProbeRows = 1 << 16

// stopDeduplicating is the partial distinct's switch to passing rows
// through: the set is freed, its budget returned.
func (d *distinctOp) stopDeduplicating() {
	d.passThrough = true
	d.set.remove()
	d.set.seen, d.set.bytes = nil, 0
}

func (d *distinctOp) Schema() *arrow.Schema { return d.child.Schema() }

func (d *distinctOp) Open(ctx context.Context) error {
	if d.set == nil {
		d.set = newSpillSet(d.ec, d.child.Schema(), 0)
		d.base = d.ec.allocated()
	}
	return d.child.Open(ctx)
}

func (d *distinctOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for !d.eof {
		b, err := Next(ctx, d.child)
		if errors.Is(err, io.EOF) {
			d.eof = true
			if err := d.partitionSubs(); err != nil {
				return nil, err
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if d.passThrough {
			b.Retain()
			return d.cur.set(b), nil
		}
		n := int(b.NumRows())
		if err := d.enc.Encode(b.Columns(), n); err != nil {
			return nil, err
		}
		mask := make([]bool, n)
		var out []bool
		cnt := 0
		for i := 0; i < n; i++ {
			switch d.set.admit(d.enc.Key(i)) {
			case keyFresh:
				mask[i] = true
				cnt++
			case keySpill:
				out = markRow(out, n, i)
			}
		}
		if out != nil {
			if err := d.set.write(ctx, b, &d.enc, out); err != nil {
				return nil, err
			}
		}
		if d.partial {
			d.seen, d.kept = d.seen+int64(n), d.kept+int64(cnt)
			if d.seen >= partialProbeRows && 2*d.kept > d.seen || d.ec.overBudget(&d.set.mem, d.base, d.set.bytes, d.set.bytes) {
				d.stopDeduplicating()
			}
		} else if d.ec.overBudget(&d.set.mem, d.base, d.set.bytes, d.set.bytes) {
			if err := d.set.freeze(); err != nil {
				return nil, err
			}
		}
		if cnt == 0 {
			continue
		}
		res, err := vectorized.FilterBatch(ctx, d.ec.Mem, b, mask, cnt)
		if err != nil {
			return nil, err
		}
		return d.cur.set(res), nil
	}
	return d.subs.next(ctx, d.Schema(), &d.cur)
}

// partitionSubs hands the partitions, if any, to hash aggregations on all
// columns (which spill in turn).
func (d *distinctOp) partitionSubs() error {
	p := d.set.spill
	if p == nil {
		return nil
	}
	d.set.spill = nil
	if err := p.finish(); err != nil {
		p.remove()
		return err
	}
	schema := d.child.Schema()
	cols := make([]Expr, schema.NumFields())
	names := make([]string, len(cols))
	for i, f := range schema.Fields() {
		cols[i], names[i] = NewColumn(i, f.Type, f.Name), f.Name
	}
	for i, f := range p.files {
		if f.rows == 0 {
			f.remove()
			continue
		}
		sub, err := NewHashAggregate(d.ec, spillOperator(d.ec, f), cols, names, nil, nil)
		if err != nil {
			for _, g := range p.files[i:] {
				g.remove()
			}
			return err
		}
		sub.(*hashAggOp).depth = d.set.depth + 1
		d.subs.ops = append(d.subs.ops, sub)
	}
	return nil
}

func (d *distinctOp) Close() error {
	d.cur.release()
	if d.set != nil {
		d.set.remove()
	}
	return errors.Join(d.subs.close(), d.child.Close())
}
