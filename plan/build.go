package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/tablestore"
)

// builder creates the operators of one execution from an immutable plan.
type builder struct {
	ec     *exec.Context
	params arrow.RecordBatch
	// bucket >= 0 restricts scans to one bucket (bucket-by-bucket joins).
	bucket int
	// analyze, when set, instruments every operator (EXPLAIN ANALYZE).
	analyze *analyzeState
	// stripe/stripes > 1: scans read only splits i with i % stripes == stripe,
	// sharing one table scan per TableScan through shared.
	stripe, stripes int
	shared          map[*TableScan]*sharedScan
	// spools are this execution's computed shared CTEs.
	spools *spoolSet
	// ranges are this execution's join key ranges (choice runtime_filter).
	ranges *rangeSet
	// part, when set, restricts its scan to the splits of part partIndex
	// (physical_partition.go); the other scans read everything.
	part      *Partitioning
	partIndex int
}

// rangeSet holds one exec.KeyRange per filter and bucket: a join run
// bucket by bucket publishes each bucket's range to that bucket's scans.
type rangeSet struct {
	mu sync.Mutex
	m  map[rangeKey]*exec.KeyRange
}

type rangeKey struct {
	f      *KeyRangeFilter
	bucket int
}

func (rs *rangeSet) get(f *KeyRangeFilter, bucket int) *exec.KeyRange {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m == nil {
		rs.m = map[rangeKey]*exec.KeyRange{}
	}
	k := rangeKey{f, bucket}
	r := rs.m[k]
	if r == nil {
		r = &exec.KeyRange{}
		rs.m[k] = r
	}
	return r
}

type spoolSet struct {
	mu sync.Mutex
	m  map[*SharedCTE]*exec.Spool
}

func newSpoolSet() *spoolSet { return &spoolSet{m: map[*SharedCTE]*exec.Spool{}} }

// sharedScan is the table scan the stripes of a gathered pipeline share.
type sharedScan struct {
	once sync.Once
	scan *tablestore.Scan
	err  error
	// users counts the stripes built to read it that have not closed
	// their reads; the last one closes the scan. (One never opened leaves
	// it to the scan's cleanup when collected.)
	users atomic.Int32
}

// done is called by a stripe once it has closed its reads of the scan.
func (sh *sharedScan) done() {
	if sh.users.Add(-1) == 0 && sh.scan != nil {
		sh.scan.Close()
	}
}

// analyzeState collects the runtime statistics of one execution.
type analyzeState struct {
	mu    sync.Mutex
	ops   map[PhysicalNode][]*exec.Instrumented
	scans map[*TableScan][]*tablestore.Scan
}

func (a *analyzeState) addScan(n *TableScan, s *tablestore.Scan) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.scans[n] = append(a.scans[n], s)
}

// report renders the plan with estimated and actual figures.
func (a *analyzeState) report(root PhysicalNode) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var sb strings.Builder
	var walk func(n PhysicalNode, depth int)
	walk = func(n PhysicalNode, depth int) {
		sb.WriteString(strings.Repeat("  ", depth))
		sb.WriteString(physicalLine(n))
		fmt.Fprintf(&sb, " (rows=%s)", fmtRows(n.Rows()))
		var st exec.OpStats
		for _, in := range a.ops[n] {
			s := in.Stats()
			st.Rows += s.Rows
			st.Batches += s.Batches
			st.Wall += s.Wall
		}
		if len(a.ops[n]) > 0 {
			fmt.Fprintf(&sb, " actual: rows=%d batches=%d time=%s", st.Rows, st.Batches, st.Wall.Round(time.Microsecond))
		}
		if sn, ok := n.(*TableScan); ok && len(a.scans[sn]) > 0 {
			scans := a.scans[sn]
			var ss tablestore.ScanStats
			for _, s := range scans {
				x := s.Stats()
				ss.PartitionsTotal += x.PartitionsTotal
				ss.PartitionsSelected += x.PartitionsSelected
				ss.FilesTotal += x.FilesTotal
				ss.FilesSelected += x.FilesSelected
				ss.RowGroupsRead += x.RowGroupsRead
				ss.RowGroupsSkipped += x.RowGroupsSkipped
			}
			fmt.Fprintf(&sb, " partitions=%d/%d files=%d/%d rowgroups read=%d skipped=%d",
				ss.PartitionsSelected, ss.PartitionsTotal, ss.FilesSelected, ss.FilesTotal, ss.RowGroupsRead, ss.RowGroupsSkipped)
		}
		sb.WriteString("\n")
		for _, c := range n.Children() {
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	explainSpools(&sb, root, func(_ *strings.Builder, n PhysicalNode, depth int) { walk(n, depth) })
	return sb.String()
}

func (bd *builder) compile(e Expr, cols []Column) (exec.Expr, error) {
	return compile(e, layoutOf(cols), bd.params)
}

func (bd *builder) compileAll(es []Expr, cols []Column) ([]exec.Expr, error) {
	return compileAll(es, layoutOf(cols), bd.params)
}

// intValue evaluates a LIMIT/OFFSET value: a constant or a parameter.
func (bd *builder) intValue(e Expr, def int64) (int64, error) {
	if e == nil {
		return def, nil
	}
	s, err := bd.int64Value(e)
	if err != nil {
		return 0, fmt.Errorf("LIMIT/OFFSET: %w", err)
	}
	v, ok := s.(*scalar.Int64)
	if !ok || !v.Valid || v.Value < 0 {
		return 0, fmt.Errorf("%w: LIMIT/OFFSET %s must be a non-negative integer", ErrParams, s)
	}
	return v.Value, nil
}

// int64Value evaluates a constant or a parameter as a BIGINT (NULL stays
// NULL).
func (bd *builder) int64Value(e Expr) (scalar.Scalar, error) {
	var s scalar.Scalar
	switch x := e.(type) {
	case *Const:
		s = x.Value
	case *Cast:
		return bd.int64Value(x.X)
	case *ParamRef:
		v, err := paramValue(bd.params, 0, x)
		if err != nil {
			return nil, err
		}
		s = v
	default:
		return nil, fmt.Errorf("%w: %s must be a constant or a parameter", errInternal, e)
	}
	if s.IsValid() && s.DataType().ID() != arrow.INT64 {
		c, err := s.CastTo(arrow.PrimitiveTypes.Int64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not an integer", ErrParams, s)
		}
		s = c
	}
	return s, nil
}

func (bd *builder) build(n PhysicalNode) (exec.Operator, error) {
	op, err := bd.buildNode(n)
	if err != nil || bd.analyze == nil {
		return op, err
	}
	in := exec.Instrument(op, physicalLine(n)).(*exec.Instrumented)
	bd.analyze.mu.Lock()
	bd.analyze.ops[n] = append(bd.analyze.ops[n], in)
	bd.analyze.mu.Unlock()
	return in, nil
}

func (bd *builder) buildNode(n PhysicalNode) (exec.Operator, error) {
	switch n := n.(type) {
	case *TableScan:
		return bd.scan(n)
	case *LookupScan:
		return bd.lookupScan(n)
	case *MergeJoin:
		if n.Buckets > 1 && bd.bucket < 0 {
			return bd.bucketJoin(n)
		}
	case *Gather:
		return bd.gather(n)
	case *SpoolScan:
		return bd.cteScan(n)
	}
	// Operators with inputs: build the inputs first and close them if this
	// operator cannot be made.
	inputs := n.Children()
	ops := make([]exec.Operator, 0, len(inputs))
	for _, in := range inputs {
		op, err := bd.build(in)
		if err != nil {
			closeAll(ops)
			return nil, err
		}
		ops = append(ops, op)
	}
	op, err := bd.buildWith(n, ops)
	if err != nil {
		closeAll(ops)
		return nil, err
	}
	return op, nil
}

func closeAll(ops []exec.Operator) {
	for _, op := range ops {
		_ = op.Close()
	}
}

func (bd *builder) buildWith(n PhysicalNode, in []exec.Operator) (exec.Operator, error) {
	switch n := n.(type) {
	case *LookupJoin:
		return bd.lookupJoin(n, in[0])
	case *PlainOp:
		return bd.plainOp(n.logical, in)
	case *HashJoin:
		return bd.hashJoin(n, in[0], in[1])
	case *MergeJoin:
		return bd.mergeJoin(n, in[0], in[1])
	case *NestedLoopJoin:
		return bd.nestedLoopJoin(n, in[0], in[1])
	case *HashAggregate:
		return bd.aggregate(n.Agg, in[0], exec.NewHashAggregate)
	case *SortAggregate:
		return bd.aggregate(n.Agg, in[0], exec.NewSortAggregate)
	case *ParallelHashAggregate:
		return bd.aggregate(n.Agg, in[0], exec.NewParallelHashAggregate)
	case *TopN:
		keys, err := bd.sortKeys(n.Sort.Keys, n.Sort.Input.Columns())
		if err != nil {
			return nil, err
		}
		off, err := bd.intValue(n.Limit.Offset, 0)
		if err != nil {
			return nil, err
		}
		cnt, err := bd.intValue(n.Limit.Count, -1)
		if err != nil {
			return nil, err
		}
		return exec.NewTopN(bd.ec, in[0], keys, off, cnt), nil
	}
	return nil, fmt.Errorf("%w: cannot build %T", errInternal, n)
}

// plainOp builds the operator of a logical node with one implementation.
func (bd *builder) plainOp(n Node, in []exec.Operator) (exec.Operator, error) {
	ec := bd.ec
	switch n := n.(type) {
	case *FileScanNode:
		return exec.NewSource(ec, schemaOf(n.Cols), n.open), nil
	case *SeriesNode:
		s, err := bd.series(n)
		if err != nil {
			return nil, err
		}
		return exec.NewSeries(ec, n.Cols[0].Name, s), nil
	case *ValuesNode:
		rows := make([][]exec.Expr, len(n.Values))
		for i, r := range n.Values {
			x, err := bd.compileAll(r, nil)
			if err != nil {
				return nil, err
			}
			rows[i] = x
		}
		return exec.NewValues(ec, schemaOf(n.Cols), rows), nil
	case *FilterNode:
		p, err := bd.compile(n.Pred, n.Input.Columns())
		if err != nil {
			return nil, err
		}
		return exec.NewFilter(ec, in[0], p), nil
	case *ProjectNode:
		exprs, err := bd.compileAll(n.Exprs, n.Input.Columns())
		if err != nil {
			return nil, err
		}
		names := make([]string, len(n.Cols))
		for i, c := range n.Cols {
			names[i] = c.Name
		}
		return exec.NewProject(ec, in[0], exprs, names), nil
	case *LimitNode:
		off, err := bd.intValue(n.Offset, 0)
		if err != nil {
			return nil, err
		}
		cnt, err := bd.intValue(n.Count, -1)
		if err != nil {
			return nil, err
		}
		return exec.NewLimit(ec, in[0], off, cnt), nil
	case *SortNode:
		keys, err := bd.sortKeys(n.Keys, n.Input.Columns())
		if err != nil {
			return nil, err
		}
		return exec.NewSort(ec, in[0], keys), nil
	case *DistinctNode:
		if n.Partial {
			return exec.NewPartialDistinct(ec, in[0]), nil
		}
		return exec.NewDistinct(ec, in[0]), nil
	case *SetOpNode:
		switch {
		case n.Kind == Union:
			u, err := exec.NewUnionAll(ec, in...)
			if err != nil || n.All {
				return u, err
			}
			return exec.NewDistinct(ec, u), nil
		case n.Kind == Intersect:
			return exec.NewSetOp(ec, in[0], in[1], exec.Intersect, n.All)
		}
		return exec.NewSetOp(ec, in[0], in[1], exec.Except, n.All)
	case *Max1RowNode:
		if n.PerKeyCount != nil {
			idx := layoutOf(n.Input.Columns())[n.PerKeyCount.ID]
			return exec.NewFilter(ec, in[0], &maxOneCheck{col: idx}), nil
		}
		return &max1Row{ec: ec, child: in[0]}, nil
	case *WindowNode:
		return bd.window(n, in[0])
	case *UnnestNode:
		return bd.unnest(n, in[0])
	}
	return nil, fmt.Errorf("%w: cannot build %T", errInternal, n)
}

func (bd *builder) sortKeys(keys []SortKey, cols []Column) ([]exec.SortKey, error) {
	out := make([]exec.SortKey, len(keys))
	for i, k := range keys {
		e, err := bd.compile(k.Expr, cols)
		if err != nil {
			return nil, err
		}
		out[i] = exec.SortKey{Expr: e, Descending: k.Desc, NullsFirst: k.NullsFirst}
	}
	return out, nil
}

func (bd *builder) window(n *WindowNode, in exec.Operator) (exec.Operator, error) {
	cols := n.Input.Columns()
	parts, err := bd.compileAll(n.PartitionBy, cols)
	if err != nil {
		return nil, err
	}
	keys, err := bd.sortKeys(n.OrderBy, cols)
	if err != nil {
		return nil, err
	}
	funcs := make([]exec.WindowFunc, len(n.Funcs))
	for i, f := range n.Funcs {
		args, err := bd.compileAll(f.Args, cols)
		if err != nil {
			return nil, err
		}
		funcs[i] = exec.WindowFunc{Func: f.Fn, Args: args, Frame: f.Frame, Name: f.Col.Name}
	}
	return exec.NewWindow(bd.ec, in, parts, keys, funcs)
}

// newAggregate is the signature of exec's aggregation constructors.
type newAggregate func(ec *exec.Context, in exec.Operator, groups []exec.Expr, names []string, specs []exec.AggregateSpec, sets [][]int) (exec.Operator, error)

func (bd *builder) aggregate(n *AggNode, in exec.Operator, newAgg newAggregate) (exec.Operator, error) {
	cols := n.Input.Columns()
	groups, err := bd.compileAll(n.Groups, cols)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(n.GroupCols))
	for i, c := range n.GroupCols {
		names[i] = c.Name
	}
	specs := make([]exec.AggregateSpec, len(n.Aggs))
	for i, a := range n.Aggs {
		args, err := bd.compileAll(a.Args, cols)
		if err != nil {
			return nil, err
		}
		var filter exec.Expr
		if a.Filter != nil {
			if filter, err = bd.compile(a.Filter, cols); err != nil {
				return nil, err
			}
		}
		specs[i] = exec.AggregateSpec{Func: a.Fn, Args: args, Distinct: a.Distinct, Filter: filter, Name: a.Col.Name}
	}
	return newAgg(bd.ec, in, groups, names, specs, n.Sets)
}

func (bd *builder) nestedLoopJoin(n *NestedLoopJoin, l, r exec.Operator) (exec.Operator, error) {
	j := n.Join
	var cond exec.Expr
	if j.Cond != nil {
		var err error
		if cond, err = bd.compile(j.Cond, concatCols(j.Left.Columns(), j.Right.Columns())); err != nil {
			return nil, err
		}
	}
	return exec.NewNestedLoopJoin(bd.ec, l, r, exec.JoinType(j.Kind), cond)
}

// joinKeys compiles the keys and residual of an equi-join.
func (bd *builder) joinKeys(j *JoinNode) (lk, rk []exec.Expr, res exec.Expr, err error) {
	lc, rc := j.Left.Columns(), j.Right.Columns()
	if lk, err = bd.compileAll(j.LeftKeys, lc); err != nil {
		return nil, nil, nil, err
	}
	if rk, err = bd.compileAll(j.RightKeys, rc); err != nil {
		return nil, nil, nil, err
	}
	if j.Residual != nil {
		if res, err = bd.compile(j.Residual, concatCols(lc, rc)); err != nil {
			return nil, nil, nil, err
		}
	}
	return lk, rk, res, nil
}

func (bd *builder) mergeJoin(n *MergeJoin, l, r exec.Operator) (exec.Operator, error) {
	lk, rk, res, err := bd.joinKeys(n.Join)
	if err != nil {
		return nil, err
	}
	return exec.NewMergeJoin(bd.ec, l, r, exec.JoinType(n.Join.Kind), lk, rk, res)
}

func (bd *builder) hashJoin(n *HashJoin, l, r exec.Operator) (exec.Operator, error) {
	lk, rk, res, err := bd.joinKeys(n.Join)
	if err != nil {
		return nil, err
	}
	op, err := exec.NewHashJoin(bd.ec, l, r, exec.JoinType(n.Join.Kind), lk, rk, res)
	if err != nil {
		return nil, err
	}
	if n.KeepOrder {
		op = exec.KeepLeftOrder(op)
	}
	if n.Ranges == nil {
		return op, nil
	}
	ranges := make([]*exec.KeyRange, len(n.Ranges))
	for i, f := range n.Ranges {
		if f != nil {
			ranges[i] = bd.ranges.get(f, bd.bucket)
		}
	}
	return exec.WithKeyRanges(op, ranges), nil
}

func (bd *builder) scan(ts *TableScan) (exec.Operator, error) {
	n := ts.Scan
	fields := make([]arrow.Field, len(n.Cols))
	for i, c := range n.Cols {
		fields[i] = arrow.Field{Name: n.Names[i], Type: c.Type, Nullable: c.Nullable}
	}
	schema := arrow.NewSchema(fields, nil)
	spec, err := scanSpec(n, bd.params)
	if err != nil {
		return nil, err
	}
	t := n.Table
	bucket := bd.bucket
	an := bd.analyze
	stripe, stripes := bd.stripe, bd.stripes
	part, parts := -1, 0
	if bd.part != nil && bd.part.scan == ts {
		part, parts = bd.partIndex, bd.part.parts
	}
	var shared *sharedScan
	if bd.shared != nil {
		if shared = bd.shared[ts]; shared == nil {
			shared = &sharedScan{}
			bd.shared[ts] = shared
		}
		shared.users.Add(1)
	}
	var ranges []*exec.KeyRange
	for _, r := range ts.Ranges {
		ranges = append(ranges, bd.ranges.get(r.Filter, bucket))
	}
	src := exec.NewSource(bd.ec, schema, func(ctx context.Context) (exec.BatchSource, error) {
		spec := spec
		spec.Filter = withKeyRanges(spec.Filter, ts.Ranges, ranges)
		spec.Parallelism = bd.ec.Workers()
		var s *tablestore.Scan
		var err error
		var done func()
		if shared != nil {
			// The first stripe to open plans the scan for all of them.
			shared.once.Do(func() {
				shared.scan, shared.err = t.NewScan(ctx, spec)
				if shared.err == nil && an != nil {
					an.addScan(ts, shared.scan)
				}
			})
			s, err, done = shared.scan, shared.err, shared.done
		} else {
			s, err = t.NewScan(ctx, spec)
			if err == nil {
				done = s.Close
				if an != nil {
					an.addScan(ts, s)
				}
			}
		}
		if err != nil {
			if done != nil {
				done()
			}
			return nil, fmt.Errorf("scan %s: %w", t.Ident(), err)
		}
		splits := n.Read.splits(s)
		if bucket >= 0 {
			splits = slices.DeleteFunc(slices.Clone(splits), func(sp tablestore.Split) bool { return sp.Bucket() != bucket })
		}
		if parts > 0 {
			splits = partSplits(splits, part, parts)
		}
		if stripes > 1 {
			splits = partSplits(splits, stripe, stripes)
		}
		return &splitChain{splits: splits, done: done}, nil
	})
	// The rows no build key matches go before they reach the joins.
	var keySets []*exec.KeySetExpr
	for i, r := range ts.Ranges {
		if c := slices.Index(n.Names, r.Column); c >= 0 {
			keySets = append(keySets, &exec.KeySetExpr{Index: c, Name: r.Column, Range: ranges[i]})
		}
	}
	switch len(keySets) {
	case 0:
		return bd.filtered(src, n)
	case 1:
		return bd.filtered(src, n, keySets[0])
	}
	return bd.filtered(src, n, exec.NewKeySets(keySets))
}

// scanSpec is what a scan of n reads, with the pushed conditions on
// parameters taking their values from params.
func scanSpec(n *ScanNode, params arrow.RecordBatch) (tablestore.ScanSpec, error) {
	pushed, err := pushedFilter(n, params, 0)
	if err != nil {
		return tablestore.ScanSpec{}, err
	}
	spec := tablestore.ScanSpec{SnapshotID: n.Snapshot, Columns: n.Read.columns(n), Filter: pushed}
	if n.Tag != "" {
		spec.SnapshotID, spec.Tag = 0, n.Tag
	}
	return spec, nil
}

// withKeyRanges adds to a scan's pushed predicate the join key ranges
// published by now (the joins open their probe side after publishing).
func withKeyRanges(p tablestore.Predicate, fs []ScanRange, rs []*exec.KeyRange) tablestore.Predicate {
	for i, r := range fs {
		f := r.Filter
		lo, hi, ok := rs[i].Get()
		if !ok {
			continue
		}
		if lo > hi { // no build key: nothing can match
			lo, hi = 1, 0
		}
		var bounds [2]tablestore.Predicate
		for j, b := range []struct {
			op tablestore.CmpOp
			v  int64
		}{{tablestore.GE, lo}, {tablestore.LE, hi}} {
			var v scalar.Scalar = scalar.NewDate32Scalar(arrow.Date32(b.v))
			if f.Type.ID() != arrow.DATE32 {
				var err error
				if v, err = scalar.NewInt64Scalar(b.v).CastTo(f.Type); err != nil {
					return p // a range the column cannot hold: no skipping
				}
			}
			bounds[j] = tablestore.Compare{Column: r.Column, Op: b.op, Value: v}
		}
		if p == nil {
			p = tablestore.And{bounds[0], bounds[1]}
		} else {
			p = tablestore.And{p, bounds[0], bounds[1]}
		}
	}
	return p
}

// filtered applies the conditions first (a scan's join key sets), then the
// scan's exact filter, to its source, as one filter: the rows all of them
// keep are copied once (a filter for each copied each one's survivors:
// q25's five key sets on store_sales took half its CPU).
func (bd *builder) filtered(src exec.Operator, n *ScanNode, first ...exec.Expr) (exec.Operator, error) {
	conds := first
	if n.Filter != nil {
		p, err := bd.compile(n.Filter, n.Cols)
		if err != nil {
			_ = src.Close()
			return nil, err
		}
		conds = append(conds, p)
	}
	if len(conds) == 0 {
		return src, nil
	}
	pred := conds[0]
	for _, c := range conds[1:] {
		var err error
		if pred, err = exec.NewCall("and", pred, c); err != nil {
			_ = src.Close()
			return nil, err
		}
	}
	return exec.NewFilter(bd.ec, src, pred), nil
}

// gather builds one copy of the pipeline per core, each reading a stripe
// of the scan's splits.
func (bd *builder) gather(n *Gather) (exec.Operator, error) {
	degree := bd.ec.Workers()
	if degree <= 1 || bd.stripes > 1 || bd.bucket >= 0 {
		return bd.build(n.Input)
	}
	shared := map[*TableScan]*sharedScan{}
	var parts []exec.Operator
	for i := 0; i < degree; i++ {
		sub := *bd
		sub.stripe, sub.stripes, sub.shared = i, degree, shared
		op, err := sub.build(n.Input)
		if err != nil {
			closeAll(parts)
			return nil, err
		}
		parts = append(parts, op)
	}
	g, err := exec.NewGather(bd.ec, parts...)
	if err != nil {
		closeAll(parts)
		return nil, err
	}
	return g, nil
}

// bucketJoin runs a merge join per bucket, the buckets in parallel, all
// reading from one scan per table.
func (bd *builder) bucketJoin(n *MergeJoin) (exec.Operator, error) {
	var parts []exec.Operator
	shared := map[*TableScan]*sharedScan{}
	for b := 0; b < n.Buckets; b++ {
		sub := *bd
		sub.bucket, sub.shared = b, shared
		// buildNode: the join is instrumented once, around the union.
		op, err := sub.buildNode(n)
		if err != nil {
			closeAll(parts)
			return nil, err
		}
		parts = append(parts, op)
	}
	// Buckets are independent: join them in parallel.
	u, err := exec.NewGather(bd.ec, parts...)
	if err != nil {
		closeAll(parts)
		return nil, err
	}
	return u, nil
}

// splitChain reads the splits of a scan one after another. done, called
// once at Close, ends its use of the scan, which lets expiry take the
// snapshot read.
type splitChain struct {
	splits []tablestore.Split
	cur    tablestore.BatchReader
	done   func()
}

func (s *splitChain) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if s.cur == nil {
			if len(s.splits) == 0 {
				return nil, io.EOF
			}
			r, err := s.splits[0].Open(ctx)
			if err != nil {
				return nil, err
			}
			s.splits, s.cur = s.splits[1:], r
		}
		b, err := s.cur.Next(ctx)
		if errors.Is(err, io.EOF) {
			err = s.cur.Close()
			s.cur = nil
			if err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if b.NumRows() == 0 {
			continue
		}
		return b, nil
	}
}

func (s *splitChain) Close() error {
	s.splits = nil
	var err error
	if s.cur != nil {
		err = s.cur.Close()
		s.cur = nil
	}
	if s.done != nil {
		s.done()
		s.done = nil
	}
	return err
}

// maxOneCheck is a filter predicate that keeps every row and fails when a
// group count exceeds one.
type maxOneCheck struct{ col int }

func (m *maxOneCheck) DataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (m *maxOneCheck) String() string           { return "max1row" }

func (m *maxOneCheck) Eval(_ context.Context, ec *exec.Context, b arrow.RecordBatch) (arrow.Array, error) {
	counts, ok := b.Column(m.col).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("%w: max1row check over %s", errInternal, b.Column(m.col).DataType())
	}
	for i := 0; i < counts.Len(); i++ {
		if counts.IsValid(i) && counts.Value(i) > 1 {
			return nil, fmt.Errorf("%w: scalar subquery returned more than one row", exec.ErrInvalid)
		}
	}
	bl := array.NewBooleanBuilder(ec.Mem)
	defer bl.Release()
	for i := 0; i < counts.Len(); i++ {
		bl.Append(true)
	}
	return bl.NewArray(), nil
}

// max1Row passes through the single row of a scalar subquery: none yields
// one row of NULLs, more than one is an error.
type max1Row struct {
	ec    *exec.Context
	child exec.Operator
	done  bool
	out   arrow.RecordBatch
}

func (m *max1Row) Schema() *arrow.Schema { return m.child.Schema() }

func (m *max1Row) Open(ctx context.Context) error { return m.child.Open(ctx) }

func (m *max1Row) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if m.done {
		return nil, io.EOF
	}
	m.done = true
	var row arrow.RecordBatch
	for {
		b, err := m.child.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if row != nil {
				row.Release()
			}
			return nil, err
		}
		if row != nil || b.NumRows() > 1 {
			if row != nil {
				row.Release()
			}
			return nil, fmt.Errorf("%w: scalar subquery returned more than one row", exec.ErrInvalid)
		}
		b.Retain()
		row = b
	}
	if row == nil {
		// No row: one row of NULLs.
		schema := m.child.Schema()
		cols := make([]arrow.Array, len(schema.Fields()))
		for i, f := range schema.Fields() {
			cols[i] = array.MakeArrayOfNull(m.ec.Mem, f.Type, 1)
		}
		row = array.NewRecordBatch(schema, cols, 1)
		for _, c := range cols {
			c.Release()
		}
	}
	m.out = row
	return row, nil
}

func (m *max1Row) Close() error {
	if m.out != nil {
		m.out.Release()
		m.out = nil
	}
	return m.child.Close()
}
