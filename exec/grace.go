package exec

import (
	"context"
	"errors"
	"hash/maphash"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/vectorized"
)

// canSpill reports whether the join may go grace. A merge join does too:
// its build side is materialized like a hash join's, and nothing relies on
// the order of its output.
func (j *joinOp) canSpill() bool {
	return j.ec.limited() && len(j.leftKeys) > 0 && j.depth < maxSpillDepth
}

// buildOrSpill reads the build side; if it outgrows the budget it switches
// to grace mode (spilled = true) and prepares the partition joins.
func (j *joinOp) buildOrSpill(ctx context.Context) (*table, bool, error) {
	base := j.ec.allocated()
	var batches []arrow.RecordBatch
	var keyCols [][]arrow.Array
	var held int64
	defer func() {
		releaseBatches(batches)
		for _, k := range keyCols {
			releaseArrays(k)
		}
	}()
	for {
		b, err := Next(ctx, j.right)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, err
		}
		k, err := evalAll(ctx, j.ec, j.rightKeys, b)
		if err != nil {
			return nil, false, err
		}
		b.Retain()
		batches = append(batches, b)
		keyCols = append(keyCols, k)
		held += batchBytes(b)
		if j.ec.overBudget(&j.mem, base, held, 2*held) {
			err := j.grace(ctx, batches, keyCols)
			j.mem.resize(0) // the partition joins reserve their own
			return nil, true, err
		}
	}
	t, err := buildTable(j.ec, j.right.Schema(), batches, keyCols, j.rightKeys)
	if err == nil {
		j.mem.resize(t.bytes())
	}
	return t, false, err
}

// grace partitions the build rows read so far, the rest of the build side
// and the whole probe side, then sets up one join per partition.
func (j *joinOp) grace(ctx context.Context, batches []arrow.RecordBatch, keyCols [][]arrow.Array) error {
	seed := maphash.MakeSeed()
	rp, err := newPartitioner(j.ec, j.right.Schema(), seed)
	if err != nil {
		return err
	}
	lp, err := newPartitioner(j.ec, j.left.Schema(), seed)
	if err != nil {
		rp.remove()
		return err
	}
	ok := false
	defer func() {
		if !ok {
			rp.remove()
			lp.remove()
		}
	}()
	// A null-aware anti join with a build side this big (not empty) returns
	// nothing if a build key is NULL, and no probe row with a NULL key:
	// otherwise it is an anti join, partition by partition.
	naaj := j.typ == NullAwareAntiJoin
	buildNull := false
	write := func(p *partitioner, b arrow.RecordBatch, enc *vectorized.KeyEncoder, probe bool) error {
		var rows []bool
		if naaj {
			n := int(b.NumRows())
			if probe {
				rows = make([]bool, n)
			}
			for i := 0; i < n; i++ {
				if probe {
					rows[i] = !enc.HasNull[i]
				} else if enc.HasNull[i] {
					buildNull = true
				}
			}
		}
		return p.write(ctx, b, enc, rows)
	}
	var enc vectorized.KeyEncoder
	for i, b := range batches {
		if err := enc.Encode(keyCols[i], int(b.NumRows())); err != nil {
			return err
		}
		if err := write(rp, b, &enc, false); err != nil {
			return err
		}
	}
	drain := func(op Operator, keys []Expr, p *partitioner, probe bool) error {
		for {
			b, err := Next(ctx, op)
			if errors.Is(err, io.EOF) {
				return p.finish()
			}
			if err != nil {
				return err
			}
			k, err := evalAll(ctx, j.ec, keys, b)
			if err != nil {
				return err
			}
			err = enc.Encode(k, int(b.NumRows()))
			releaseArrays(k)
			if err == nil {
				err = write(p, b, &enc, probe)
			}
			if err != nil {
				return err
			}
		}
	}
	if err := drain(j.right, j.rightKeys, rp, false); err != nil {
		return err
	}
	if naaj && buildNull {
		return nil
	}
	if j.ranges != nil { // not opened before the build
		if err := j.left.Open(ctx); err != nil {
			return err
		}
	}
	if err := drain(j.left, j.leftKeys, lp, true); err != nil {
		return err
	}
	ok = true
	typ := j.typ
	if naaj {
		typ = AntiJoin
	}
	for p := range rp.files {
		lf, rf := lp.files[p], rp.files[p]
		if lf.rows == 0 && rf.rows == 0 {
			lf.remove()
			rf.remove()
			continue
		}
		sub, err := newJoinOp(j.ec, spillOperator(j.ec, lf), spillOperator(j.ec, rf), typ, j.leftKeys, j.rightKeys, j.residual)
		if err != nil {
			lf.remove()
			rf.remove()
			return err
		}
		sub.depth = j.depth + 1
		j.subs.ops = append(j.subs.ops, sub)
	}
	return nil
}
