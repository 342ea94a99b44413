package plan

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/lookup"
	"github.com/flightd/flightd/tablestore"
)

// choiceLookupScan reads a primary-key table by key through its lookup
// index when a scan's filter fixes every key column.
const choiceLookupScan = "lookup_scan"

// choiceLookupJoin joins a temporal join's probe rows with the rows of its
// table through the table's lookup index, a batch of probe keys at a time.
const choiceLookupJoin = "lookup_join"

// maxLookupKeys bounds the keys a filter of constants may name for the
// scan to become a lookup (the cross product of the key columns' lists).
const maxLookupKeys = 100_000

// LookupCatalog is a Catalog that reads primary-key tables by key through
// shared lookup indexes (package lookup); without it every read scans.
type LookupCatalog interface {
	// LookupIndex returns the lookup index of t, shared with other
	// readers, and the func that ends this use of it.
	LookupIndex(ctx context.Context, t *tablestore.Table) (x *lookup.Index, release func(), err error)
}

// LookupScan reads the rows of a primary-key table whose keys the scan's
// filter fixes (every key column `=` or IN constants or parameters)
// through the table's lookup index instead of scanning (choice
// lookup_scan). Its logical node is the ScanNode.
type LookupScan struct {
	physical
	Scan *ScanNode
	// Values[i] are the constants and parameters key column i (primary
	// key order) is compared with; the keys read are their cross product,
	// per parameter row.
	Values [][]Expr
	// Exact: the filter is only these conditions, so the rows read are
	// the answer and the filter is not applied again.
	Exact bool
	cat   LookupCatalog
}

func (n *LookupScan) Children() []PhysicalNode { return nil }

// lookupScan plans n as a LookupScan when its filter fixes the table's
// whole primary key; nil otherwise.
func (pp *physicalPlanner) lookupScan(n *ScanNode) *LookupScan {
	if pp.lookups == nil || !pp.enabled(choiceLookupScan) || n.Stream != nil || n.Tag != "" || n.Read != ReadRows || n.Filter == nil {
		return nil
	}
	t := n.Table
	if lookup.Check(t) != nil {
		return nil
	}
	pk := t.PrimaryKey()
	values := make([][]Expr, len(pk))
	exact := true
	for _, c := range conjuncts(n.Filter) {
		name, vals, ok := keyCondition(c, n)
		i := slices.Index(pk, name)
		if !ok || i < 0 || values[i] != nil {
			exact = false
			continue
		}
		values[i] = vals
	}
	keys := 1
	for i, v := range values {
		if v == nil {
			return nil
		}
		// Floats compare equal across encodings (0.0 and -0.0) that
		// lookups tell apart.
		switch t.Schema().Field(t.Schema().FieldIndices(pk[i])[0]).Type.ID() {
		case arrow.FLOAT32, arrow.FLOAT64:
			return nil
		}
		if keys *= len(v); keys > maxLookupKeys {
			return nil
		}
	}
	return &LookupScan{physical: physicalOf(n), Scan: n, Values: values, Exact: exact, cat: pp.lookups}
}

// keyCondition matches `col = v`, `v = col` and `col IN (v, ...)` where
// every v is a constant or a parameter: the table column and the values.
func keyCondition(e Expr, n *ScanNode) (string, []Expr, bool) {
	value := func(e Expr) bool {
		switch e.(type) {
		case *Const, *ParamRef:
			return true
		}
		return false
	}
	column := func(e Expr) (string, bool) {
		c, ok := e.(*ColRef)
		if !ok {
			return "", false
		}
		for i, sc := range n.Cols {
			if sc.ID == c.ID {
				return n.Names[i], true
			}
		}
		return "", false
	}
	switch x := e.(type) {
	case *Call:
		if x.Fn != "equal" {
			return "", nil, false
		}
		for _, o := range [][2]Expr{{x.Args[0], x.Args[1]}, {x.Args[1], x.Args[0]}} {
			if name, ok := column(o[0]); ok && value(o[1]) {
				return name, []Expr{o[1]}, true
			}
		}
	case *In:
		name, ok := column(x.X)
		if !ok || slices.ContainsFunc(x.List, func(e Expr) bool { return !value(e) }) {
			return "", nil, false
		}
		return name, x.List, true
	}
	return "", nil, false
}

// batchesParams reports whether p reads all of its parameters' rows at
// once: projections without parameters over an exact lookup, whose keys
// of every row are read in one batch, in row order.
func batchesParams(p PhysicalNode) bool {
	switch x := p.(type) {
	case *LookupScan:
		return x.Exact
	case *PlainOp:
		pr, ok := x.logical.(*ProjectNode)
		if !ok || slices.ContainsFunc(pr.Exprs, hasParam) {
			return false
		}
		return batchesParams(x.Inputs[0])
	}
	return false
}

// lookupScan builds the key lookup of one execution.
func (bd *builder) lookupScan(n *LookupScan) (exec.Operator, error) {
	s := n.Scan
	t := s.Table
	fields := make([]arrow.Field, len(s.Cols))
	for i, c := range s.Cols {
		fields[i] = arrow.Field{Name: s.Names[i], Type: c.Type, Nullable: c.Nullable}
	}
	cols, err := tableColumns(s)
	if err != nil {
		return nil, err
	}
	keys, err := bd.lookupKeys(n)
	if err != nil {
		return nil, err
	}
	snapshot := s.Snapshot
	op := exec.NewKeyLookup(bd.ec, arrow.NewSchema(fields, nil), keys, func(ctx context.Context) (exec.KeyReader, error) {
		r, err := openIndexReader(ctx, n.cat, t, cols, snapshot, false)
		if err != nil {
			return nil, err
		}
		return r, nil
	})
	if n.Exact {
		return op, nil
	}
	return bd.filtered(op, s)
}

// lookupKeys makes the keys of n for each parameter row (one execution
// without parameters): the cross product of each key column's distinct
// values, in the table's key types. A value that is NULL or that the key
// type cannot hold matches nothing and is left out.
func (bd *builder) lookupKeys(n *LookupScan) ([]arrow.Array, error) {
	t := n.Scan.Table
	pk := t.PrimaryKey()
	types := make([]arrow.DataType, len(pk))
	for i, k := range pk {
		types[i] = t.Schema().Field(t.Schema().FieldIndices(k)[0]).Type
	}
	rows := 1
	if bd.params != nil {
		rows = int(bd.params.NumRows())
	}
	cols := make([][]scalar.Scalar, len(pk))
	for r := range rows {
		per := make([][]scalar.Scalar, len(pk))
		for i, vals := range n.Values {
			for _, e := range vals {
				var v scalar.Scalar
				switch x := e.(type) {
				case *Const:
					v = x.Value
				case *ParamRef:
					var err error
					if v, err = paramValue(bd.params, r, x); err != nil {
						return nil, err
					}
				}
				if !v.IsValid() {
					continue
				}
				v, ok := losslessCast(v, types[i])
				if !ok || slices.ContainsFunc(per[i], func(h scalar.Scalar) bool { return scalar.Equals(h, v) }) {
					continue
				}
				per[i] = append(per[i], v)
			}
		}
		appendProduct(cols, per, nil)
	}
	out := make([]arrow.Array, 0, len(pk))
	for i, vals := range cols {
		a, err := scalarArray(bd.ec, types[i], vals)
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// appendProduct appends to cols every combination of one value per
// column of per, the last column varying fastest.
func appendProduct(cols, per [][]scalar.Scalar, prefix []scalar.Scalar) {
	if len(prefix) == len(per) {
		for i, v := range prefix {
			cols[i] = append(cols[i], v)
		}
		return
	}
	for _, v := range per[len(prefix)] {
		appendProduct(cols, per, append(prefix, v))
	}
}

// scalarArray makes an array of type typ from vals, all of that type.
func scalarArray(ec *exec.Context, typ arrow.DataType, vals []scalar.Scalar) (arrow.Array, error) {
	if len(vals) == 0 {
		return array.MakeArrayOfNull(ec.Mem, typ, 0), nil
	}
	parts := make([]arrow.Array, 0, len(vals))
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for _, v := range vals {
		p, err := scalar.MakeArrayFromScalar(v, 1, ec.Mem)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	return array.Concatenate(parts, ec.Mem)
}

// indexReader reads keys through a lookup index for exec.NewKeyLookup.
type indexReader struct {
	x       *lookup.Index
	release func()
	cols    []int
	// snapshot is the snapshot a batch statement reads: the one it bound,
	// else the latest at its first read, for every batch (0 until then).
	snapshot int64
	// stream: each read is of the latest snapshot (a streaming temporal
	// join sees the table as each change arrives).
	stream bool
}

// openIndexReader takes t's lookup index from cat for one operator's
// reads of columns cols (snapshot and stream: see indexReader).
func openIndexReader(ctx context.Context, cat LookupCatalog, t *tablestore.Table, cols []int, snapshot int64, stream bool) (*indexReader, error) {
	x, release, err := cat.LookupIndex(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", t.Ident(), err)
	}
	return &indexReader{x: x, release: release, cols: cols, snapshot: snapshot, stream: stream}, nil
}

func (r *indexReader) Read(ctx context.Context, keys []arrow.Array) (arrow.RecordBatch, error) {
	snap := r.snapshot
	if snap == 0 {
		// The table's latest snapshot in storage, as a scan reads it, is
		// named: a batch statement reads that one snapshot for every
		// batch.
		latest, err := r.x.Table().LatestSnapshotID(ctx)
		if err != nil {
			return nil, err
		}
		if snap = latest; !r.stream {
			r.snapshot = latest
		}
	}
	b, _, err := r.x.Lookup(ctx, lookup.Request{Keys: keys, Columns: r.cols, SnapshotID: snap})
	return b, err
}

func (r *indexReader) Close() { r.release() }

// LookupJoin is a temporal join (JoinNode.Temporal) that reads the rows of
// its table through the table's lookup index, the keys of each batch of
// its left input at once (choice lookup_join); otherwise a temporal join
// is a hash join with the table's latest snapshot.
type LookupJoin struct {
	physical
	Join *JoinNode
	Left PhysicalNode
	Scan *ScanNode
	// Keys are over Left's columns, one per key column of the table, of
	// its types; Residual is over the join's columns (nil: none).
	Keys     []Expr
	Residual Expr
	cat      LookupCatalog
}

func (n *LookupJoin) Children() []PhysicalNode { return []PhysicalNode{n.Left} }

func (pp *physicalPlanner) lookupJoin(j *JoinNode) *LookupJoin {
	if pp.lookups == nil || !pp.enabled(choiceLookupJoin) {
		return nil
	}
	scan, keys, residual, ok := lookupJoin(j)
	if !ok || lookup.Check(scan.Table) != nil {
		return nil
	}
	return &LookupJoin{physical: physicalOf(j), Join: j, Left: pp.node(j.Left), Scan: scan, Keys: keys, Residual: residual, cat: pp.lookups}
}

func (bd *builder) lookupJoin(n *LookupJoin, left exec.Operator) (exec.Operator, error) {
	keys, err := bd.compileAll(n.Keys, n.Join.Left.Columns())
	if err != nil {
		return nil, err
	}
	var residual exec.Expr
	if n.Residual != nil {
		if residual, err = bd.compile(n.Residual, n.Join.Columns()); err != nil {
			return nil, err
		}
	}
	cols, err := tableColumns(n.Scan)
	if err != nil {
		return nil, err
	}
	ec, cat, t, snapshot := bd.ec, n.cat, n.Scan.Table, n.Scan.Snapshot
	schema := schemaOf(n.Join.Columns())
	outer := n.Join.Kind == LeftJoin
	return exec.NewLookupJoin(ec, left, schema, func(ctx context.Context) (*exec.LookupJoiner, error) {
		// The scan's snapshot: a transaction's, as the hash join reads.
		r, err := openIndexReader(ctx, cat, t, cols, snapshot, false)
		if err != nil {
			return nil, err
		}
		return exec.NewLookupJoiner(ec, r, keys, residual, outer, schema), nil
	}), nil
}

// tableColumns are the table's column indexes of a scan's columns.
func tableColumns(s *ScanNode) ([]int, error) {
	tschema := s.Table.Schema()
	cols := make([]int, len(s.Names))
	for i, name := range s.Names {
		idx := tschema.FieldIndices(name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("%w: lookup of %s: no column %s", errInternal, s.Table.Ident(), name)
		}
		cols[i] = idx[0]
	}
	return cols, nil
}
