package exec

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// maxReduceRows bounds the probe side a hash join reads ahead to reduce
// its build side (reduceBuild): past it the join builds as usual, having
// held this many rows.
const maxReduceRows = 8192

// reducible reports whether build rows that match no probe row can be
// dropped before the build: they produce no output in an inner, left,
// semi or anti join (the null-aware anti join needs a NULL build key,
// right and full joins the unmatched build rows), and no probe scan waits
// for the build's key ranges.
func (j *joinOp) reducible() bool {
	switch j.typ {
	case InnerJoin, LeftJoin, SemiJoin, AntiJoin:
	default:
		return false
	}
	return len(j.leftKeys) > 0 && j.merge == nil && j.ranges == nil
}

// reduceBuild reads the probe side ahead; if it ends within maxReduceRows,
// the build side is filtered to the rows whose key one of those rows has
// (a semi-join reduction): q95's IN (SELECT ws_order_number FROM ws_wh)
// built a hash table of 6.6M rows for 192 probe rows. Either way the rows
// read are replayed to the probe. The rows held count against the memory
// budget: past a quarter of Context.MemoryLimit, or past what the pool
// grants, the join stops reading ahead and builds as usual (wide rows:
// 8192 of them may be gigabytes).
func (j *joinOp) reduceBuild(ctx context.Context) error {
	var held []arrow.RecordBatch
	res := j.ec.NewReservation(true)
	rows, bytes, ended := 0, int64(0), false
	for rows <= maxReduceRows {
		b, err := Next(ctx, j.left)
		if errors.Is(err, io.EOF) {
			ended = true
			break
		}
		if err != nil {
			releaseBatches(held)
			res.Free()
			return err
		}
		b.Retain()
		held = append(held, b)
		rows += int(b.NumRows())
		bytes += batchBytes(b)
		if limit := j.ec.MemoryLimit; limit > 0 && bytes > limit/4 || !res.TryResize(bytes) {
			break
		}
	}
	replay := &replayOp{child: j.left, held: held, rest: !ended, res: res}
	j.left = replay
	if !ended {
		return nil
	}
	keyCols := make([][]arrow.Array, len(held))
	defer func() {
		for _, k := range keyCols {
			releaseArrays(k)
		}
	}()
	for i, b := range held {
		k, err := evalAll(ctx, j.ec, j.leftKeys, b)
		if err != nil {
			return err
		}
		keyCols[i] = k
	}
	keys, err := concatKeys(j.ec, replay.Schema(), held, keyCols, j.leftKeys)
	if err != nil {
		return err
	}
	defer releaseArrays(keys)
	set, _, err := newHashIndex(keys, rows)
	if err != nil {
		return err
	}
	j.right = &keyFilterOp{ec: j.ec, child: j.right, keys: j.rightKeys, set: &hashProbe{hashIndex: set}}
	return nil
}

// replayOp returns the batches read ahead from its opened child (held,
// retained), then, if rest, the child's remaining batches.
type replayOp struct {
	child Operator
	held  []arrow.RecordBatch
	res   *Reservation // held's bytes, until replayed
	rest  bool
	cur   current
}

func (r *replayOp) Schema() *arrow.Schema { return r.child.Schema() }

func (r *replayOp) Open(context.Context) error { return nil }

func (r *replayOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if len(r.held) > 0 {
		b := r.held[0]
		r.held = r.held[1:]
		return r.cur.set(b), nil
	}
	r.cur.release()
	r.res.Free()
	r.res = nil // Free takes the pool's lock: once, not per batch of the rest
	if !r.rest {
		return nil, io.EOF
	}
	return Next(ctx, r.child)
}

func (r *replayOp) Close() error {
	r.cur.release()
	releaseBatches(r.held)
	r.held = nil
	r.res.Free()
	return r.child.Close()
}

// keyFilterOp passes the rows of child whose keys set has.
type keyFilterOp struct {
	ec    *Context
	child Operator
	keys  []Expr
	set   *hashProbe
	nulls []bool
	rows  []int64
	cur   current
}

func (f *keyFilterOp) Schema() *arrow.Schema { return f.child.Schema() }

func (f *keyFilterOp) Open(ctx context.Context) error { return f.child.Open(ctx) }

func (f *keyFilterOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	f.cur.release()
	for {
		b, err := Next(ctx, f.child)
		if err != nil {
			return nil, err
		}
		n := int(b.NumRows())
		keys, err := evalAll(ctx, f.ec, f.keys, b)
		if err != nil {
			return nil, err
		}
		f.nulls = resized(f.nulls, n)
		err = f.set.lookup(keys, n, f.nulls)
		releaseArrays(keys)
		if err != nil {
			return nil, err
		}
		f.rows = f.rows[:0]
		for i, p := range f.set.probe[:n] {
			if p >= 0 {
				f.rows = append(f.rows, int64(i))
			}
		}
		switch len(f.rows) {
		case 0:
			continue
		case n:
			return b, nil
		}
		cols, err := vectorized.TakeColumns(ctx, f.ec.Mem, b.Columns(), f.rows)
		if err != nil {
			return nil, err
		}
		out := array.NewRecordBatch(b.Schema(), cols, int64(len(f.rows)))
		releaseArrays(cols)
		return f.cur.set(out), nil
	}
}

func (f *keyFilterOp) Close() error {
	f.cur.release()
	return f.child.Close()
}
