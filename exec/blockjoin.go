package exec

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// blockJoin runs a nested-loop join whose build side passed the memory
// budget: the build side goes to disk and comes back in blocks of half the
// budget, each joined with the whole probe side, which a Spool replays.
// Per probe row flags, set by the block joins, give the unmatched (left,
// full, anti) or matched (semi) probe rows in a last pass.
type blockJoin struct {
	j        *joinOp
	right    BatchSource // the build side on disk
	spool    *Spool
	keeper   Operator // a spool reader held open until Close so that the spool lives
	subTyp   JoinType
	flags    bool   // the join needs per probe row match flags
	matched  []bool // per probe row
	pos      int    // probe rows the current block's join has passed
	sub      *joinOp
	final    Operator // the last pass over the probe side
	rightEOF bool
	cur      current
}

// startBlocks switches j to block mode with the build batches read so far
// (owned) and the rest of the build side.
func (j *joinOp) startBlocks(ctx context.Context, batches []arrow.RecordBatch) error {
	f, err := newSpillFile(j.ec, j.right.Schema())
	if err != nil {
		releaseBatches(batches)
		return err
	}
	for _, b := range batches {
		if err == nil {
			err = f.write(b)
		}
		b.Release()
	}
	for err == nil {
		var b arrow.RecordBatch
		if b, err = Next(ctx, j.right); err == nil {
			err = f.write(b)
		}
	}
	if errors.Is(err, io.EOF) {
		err = f.finish()
	}
	if err != nil {
		f.remove()
		return err
	}
	bj := &blockJoin{j: j, right: f.source(), spool: NewSpool(j.ec, j.left)}
	bj.keeper = bj.spool.Reader()
	switch j.typ {
	case InnerJoin, LeftJoin:
		bj.subTyp = InnerJoin
	case RightJoin, FullJoin:
		bj.subTyp = RightJoin
	default: // semi, anti: only the flags count
		bj.subTyp = SemiJoin
	}
	bj.flags = j.typ == LeftJoin || j.typ == FullJoin || j.typ.leftOnly()
	j.block = bj
	return nil
}

// nextBlock starts the join of the next build block; false at the end.
func (bj *blockJoin) nextBlock(ctx context.Context) (bool, error) {
	ec := bj.j.ec
	var blk []arrow.RecordBatch
	var held int64
	// A block takes half the budget, and its join concatenates it: the
	// pool reserves it twice, and a block holds at least one batch.
	for (ec.MemoryLimit <= 0 || held <= ec.MemoryLimit/2) && (len(blk) == 0 || bj.j.mem.reservation(ec).TryResize(2*held)) {
		b, err := bj.right.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			releaseBatches(blk)
			return false, err
		}
		b.Retain()
		blk = append(blk, b)
		held += batchBytes(b)
	}
	if len(blk) == 0 {
		return false, nil
	}
	list := &batchList{batches: blk}
	right := NewSource(ec, bj.j.right.Schema(), func(context.Context) (BatchSource, error) { return list, nil })
	sub, err := newJoinOp(ec, bj.spool.Reader(), right, bj.subTyp, nil, nil, bj.j.residual)
	if err != nil {
		list.Close()
		return false, err
	}
	sub.depth = maxSpillDepth // a block fits: no blocks within blocks
	if bj.flags {
		bj.pos = 0
		sub.leftSeen = func(m []bool) {
			bj.matched = growTo(bj.matched, bj.pos+len(m))
			for i, x := range m {
				bj.matched[bj.pos+i] = bj.matched[bj.pos+i] || x
			}
			bj.pos += len(m)
		}
	}
	bj.sub = sub
	return true, sub.Open(ctx)
}

func (bj *blockJoin) next(ctx context.Context) (arrow.RecordBatch, error) {
	j := bj.j
	for !bj.rightEOF {
		if bj.sub == nil {
			ok, err := bj.nextBlock(ctx)
			if err != nil {
				return nil, err
			}
			if !ok {
				bj.rightEOF = true
				break
			}
		}
		b, err := Next(ctx, bj.sub)
		if errors.Is(err, io.EOF) {
			err = bj.sub.Close()
			bj.sub = nil
			if err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if !j.typ.leftOnly() {
			return bj.cur.set(array.NewRecordBatch(j.schema, b.Columns(), b.NumRows())), nil
		}
	}
	if !bj.flags {
		return nil, io.EOF
	}
	if bj.final == nil {
		bj.final, bj.pos = bj.spool.Reader(), 0
	}
	for {
		b, err := Next(ctx, bj.final)
		if err != nil {
			return nil, err
		}
		if out, err := bj.lastPass(ctx, b); out != nil || err != nil {
			return out, err
		}
	}
}

// lastPass returns the rows of probe batch b that the join adds after the
// blocks (nil: none): unmatched rows for left, full and anti joins (with
// NULL build columns for the first two), matched rows for semi joins.
func (bj *blockJoin) lastPass(ctx context.Context, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	j, n := bj.j, int(b.NumRows())
	bj.matched = growTo(bj.matched, bj.pos+n)
	want, cnt := make([]bool, n), 0
	for i, m := range bj.matched[bj.pos : bj.pos+n] {
		if m == (j.typ == SemiJoin) {
			want[i] = true
			cnt++
		}
	}
	bj.pos += n
	if cnt == 0 {
		return nil, nil
	}
	left, err := vectorized.FilterBatch(ctx, j.ec.Mem, b, want, cnt)
	if err != nil || j.typ.leftOnly() {
		return bj.cur.set(left), err
	}
	defer left.Release()
	cols := append([]arrow.Array(nil), left.Columns()...)
	for _, c := range cols {
		c.Retain()
	}
	for _, f := range j.right.Schema().Fields() {
		cols = append(cols, vectorized.NullArray(j.ec.Mem, f.Type, cnt))
	}
	out := array.NewRecordBatch(j.schema, cols, int64(cnt))
	releaseArrays(cols)
	return bj.cur.set(out), nil
}

func (bj *blockJoin) close() error {
	bj.cur.release()
	var errs []error
	if bj.sub != nil {
		errs = append(errs, bj.sub.Close())
	}
	for _, op := range []Operator{bj.final, bj.keeper} {
		if op != nil {
			errs = append(errs, op.Close())
		}
	}
	bj.sub, bj.final, bj.keeper = nil, nil, nil
	errs = append(errs, bj.right.Close())
	return errors.Join(errs...)
}

// batchList lends owned batches one after another and releases them on
// Close.
type batchList struct {
	batches []arrow.RecordBatch
	pos     int
}

func (l *batchList) Next(context.Context) (arrow.RecordBatch, error) {
	if l.pos >= len(l.batches) {
		return nil, io.EOF
	}
	l.pos++
	return l.batches[l.pos-1], nil
}

func (l *batchList) Close() error {
	releaseBatches(l.batches)
	l.batches = nil
	return nil
}
