package merge

import (
	"bytes"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Merge engines that build rows (partial-update, aggregation) instead of
// picking one version (Options.Pick). Files hold partial merges that are merged again at
// compaction and read, so every engine here is associative: merging the
// versions of a key in one go or in any consecutive chunks (oldest first)
// gives the same row. A merged row's cells are references to input cells
// (no copy) or computed values appended to side arrays.

// Input exposes the versions of keys to a rowMerger: the arrays of each
// position (the columns merged, as described by newRowMerger's cols), one
// per source, and each row's sequence number and kind.
type Input struct {
	Arrays func(p int) []arrow.Array // the arrays of position p, by source
	Seq    func(Ref) int64
	Kind   func(Ref) RowKind
}

// sideSrc marks a cell computed by the merge (a row of the side array).
const sideSrc = int32(1<<31 - 1)

// output collects merged rows as cell references per position, and the
// values the merge computed; GatherColumn and SysColumns turn them into
// arrays.
type output struct {
	types []arrow.DataType // per position
	seqs  []int64
	kinds []int8
	cells [][]Ref
	side  []array.Builder
}

// newOutput collects rows of positions of the given types.
func newOutput(types []arrow.DataType) *output {
	return &output{types: types, cells: make([][]Ref, len(types)), side: make([]array.Builder, len(types))}
}

// rows is the number of rows collected.
func (o *output) rows() int { return len(o.seqs) }

// kind is the kind of row i.
func (o *output) kind(i int) RowKind { return RowKind(o.kinds[i]) }

// addRow emits input row r whole.
func (o *output) addRow(r Ref, seq int64, kind RowKind) {
	o.seqs = append(o.seqs, seq)
	o.kinds = append(o.kinds, int8(kind))
	for p := range o.cells {
		o.cells[p] = append(o.cells[p], r)
	}
}

// pop drops the last row (side cells it used stay unreferenced).
func (o *output) pop() {
	n := len(o.seqs) - 1
	o.seqs, o.kinds = o.seqs[:n], o.kinds[:n]
	for p := range o.cells {
		o.cells[p] = o.cells[p][:n]
	}
}

// sideBuilder returns position p's side builder after referencing its next
// value from the current row; the caller appends exactly one value.
func (o *output) sideBuilder(mem memory.Allocator, p int) array.Builder {
	if o.side[p] == nil {
		o.side[p] = array.NewBuilder(mem, o.types[p])
	}
	o.cells[p] = append(o.cells[p], Ref{sideSrc, int32(o.side[p].Len())})
	return o.side[p]
}

// gatherColumn builds position p from srcs (the input arrays of p, by
// source) plus its computed values, and resets p's cells.
func (o *output) gatherColumn(mem memory.Allocator, p int, srcs []arrow.Array) arrow.Array {
	refs := o.cells[p]
	if o.side[p] != nil {
		side := o.side[p].NewArray()
		defer side.Release()
		srcs = append(slices.Clip(srcs), side)
		for i := range refs {
			if refs[i].Src == sideSrc {
				refs[i].Src = int32(len(srcs) - 1)
			}
		}
	}
	out := Gather(mem, o.types[p], srcs, refs)
	o.cells[p] = refs[:0]
	return out
}

// sysColumns returns the sequence numbers (Int64) and kinds (Int8) of the
// rows and resets them.
func (o *output) sysColumns(mem memory.Allocator) (arrow.Array, arrow.Array) {
	sb, kb := array.NewInt64Builder(mem), array.NewInt8Builder(mem)
	defer sb.Release()
	defer kb.Release()
	sb.AppendValues(o.seqs, nil)
	kb.AppendValues(o.kinds, nil)
	o.seqs, o.kinds = o.seqs[:0], o.kinds[:0]
	return sb.NewArray(), kb.NewArray()
}

// release frees the computed values.
func (o *output) release() {
	for _, b := range o.side {
		if b != nil {
			b.Release()
		}
	}
	clear(o.side)
}

// rowMerger builds the merged row of the versions of one key
// (partial-update, aggregation).
type rowMerger interface {
	// merge appends the merge of vers (oldest first) to out, or nothing
	// when the versions change nothing. raw: vers are write input (flush),
	// not merged rows.
	merge(in *Input, vers []Ref, raw bool, out *output) error
}

// Merge merges write input with a row-building engine (see
// Options.BuildsRows): keys yields the versions of each key, oldest first,
// keys in order. It returns the merged rows laid out like a data file:
// their sequence numbers (Int64) and kinds (Int8), then the positions of
// cols. table names the table in errors.
func Merge(table string, o *Options, cols []Column, in *Input, keys iter.Seq[[]Ref], mem memory.Allocator) ([]arrow.Array, error) {
	rm := newRowMerger(table, o, cols, mem)
	types := make([]arrow.DataType, len(cols))
	for p, c := range cols {
		types[p] = c.Type
	}
	out := newOutput(types)
	defer out.release()
	for vers := range keys {
		if err := rm.merge(in, vers, true, out); err != nil {
			return nil, err
		}
	}
	res := make([]arrow.Array, 0, 2+len(cols))
	seqs, kinds := out.sysColumns(mem)
	res = append(res, seqs, kinds)
	for p := range cols {
		res = append(res, out.gatherColumn(mem, p, in.Arrays(p)))
	}
	return res, nil
}

// none marks a cell that is NULL in the merged row.
var none = Ref{-1, -1}

// Column describes a position a rowMerger merges.
type Column struct {
	Name string
	Type arrow.DataType
	Key  bool // part of the primary key
}

// newRowMerger returns the row builder of the merge engine o over the
// positions cols, or nil for engines that pick a row (see Options.Pick).
// table names the table in errors.
func newRowMerger(table string, o *Options, cols []Column, mem memory.Allocator) rowMerger {
	b := builderBase{table: table, mem: mem, opts: o, cols: cols, cell: make([]Ref, len(cols))}
	for p, c := range cols {
		if c.Key {
			b.keys = append(b.keys, p)
		}
	}
	switch o.Engine {
	case PartialUpdate:
		pm := &partialMerge{builderBase: b, group: make([]int, len(cols))}
		for p := range cols {
			pm.group[p] = -1
		}
		for gi, g := range o.Groups {
			var pg posGroup
			for _, f := range g.Fields {
				p := slices.IndexFunc(cols, func(c Column) bool { return c.Name == f })
				if p < 0 {
					continue
				}
				pm.group[p] = gi
				if slices.Contains(g.Seq, f) {
					pg.seq = append(pg.seq, p)
				} else {
					pg.fields = append(pg.fields, p)
				}
			}
			pg.all = append(slices.Clone(pg.seq), pg.fields...)
			pm.groups = append(pm.groups, pg)
		}
		return pm
	case Aggregation:
		am := &aggMerge{builderBase: b, fn: make([]string, len(cols)), ignoreRetract: make([]bool, len(cols)), delim: make([]string, len(cols))}
		for p, c := range cols {
			am.fn[p] = o.Function(c.Name)
			am.ignoreRetract[p] = o.IgnoreRetract[c.Name]
			am.delim[p] = ","
			if d, ok := o.Delimiter[c.Name]; ok {
				am.delim[p] = d
			}
		}
		return am
	}
	return nil
}

type builderBase struct {
	table string
	mem   memory.Allocator
	opts  *Options
	cols  []Column
	keys  []int  // key positions
	cell  []Ref  // scratch: the merged row
	a, b  []byte // scratch: normalized cells
}

// cmpCells compares two cells of position p (nulls first).
func (bb *builderBase) cmpCells(in *Input, p int, x, y Ref) int {
	arrs := in.Arrays(p)
	bb.a = AppendNormalized(bb.a[:0], arrs[x.Src], int(x.Row))
	bb.b = AppendNormalized(bb.b[:0], arrs[y.Src], int(y.Row))
	return bytes.Compare(bb.a, bb.b)
}

// emit appends the merged row in bb.cell (key cells from last).
func (bb *builderBase) emit(in *Input, last Ref, kind RowKind, out *output) {
	for _, p := range bb.keys {
		bb.cell[p] = last
	}
	out.seqs = append(out.seqs, in.Seq(last))
	out.kinds = append(out.kinds, int8(kind))
	for p, r := range bb.cell {
		if r == none {
			out.sideBuilder(bb.mem, p).AppendNull()
			continue
		}
		out.cells[p] = append(out.cells[p], r)
	}
}

// partialMerge is partial-update: non-null fields overwrite; the fields of
// a sequence group update together (NULLs included) from rows whose group
// sequence is at least the stored one.
type partialMerge struct {
	builderBase
	group  []int // per position: sequence group, -1 for none
	groups []posGroup
}

// posGroup is a sequence group by positions; all is seq then fields.
type posGroup struct{ seq, fields, all []int }

func (m *partialMerge) merge(in *Input, vers []Ref, raw bool, out *output) error {
	opts := m.opts
	for p := range m.cell {
		m.cell[p] = none
	}
	deleted, reset, changed := false, false, false
	for _, v := range vers {
		k := in.Kind(v)
		if k.IsRetract() {
			switch {
			case len(opts.Groups) > 0:
				// Retract the group's fields, remembering its sequence.
				for _, g := range m.groups {
					if m.newer(in, g, v) {
						for _, p := range g.seq {
							m.cell[p] = v
						}
						for _, p := range g.fields {
							m.cell[p] = none
						}
					}
				}
				changed = true
			case opts.RemoveOnDelete && k == Delete:
				for p := range m.cell {
					m.cell[p] = none
				}
				deleted, reset, changed = true, true, true
			case opts.RemoveOnDelete:
				// -U: the +U that follows carries the change.
			default:
				return fmt.Errorf("%w: table %s has merge-engine partial-update and a %s row it cannot apply", ErrInvalid, m.table, k)
			}
			continue
		}
		if isReset(opts, k, raw) {
			for p := range m.cell {
				m.cell[p] = none
			}
			reset = true
		}
		deleted, changed = false, true
		for p, g := range m.group {
			if g < 0 && !in.Arrays(p)[v.Src].IsNull(int(v.Row)) {
				m.cell[p] = v
			}
		}
		for _, g := range m.groups {
			if m.newer(in, g, v) {
				for _, p := range g.all {
					m.cell[p] = v
				}
			}
		}
	}
	if !changed {
		return nil
	}
	m.emit(in, vers[len(vers)-1], mergedKind(deleted, reset), out)
	return nil
}

// isReset reports whether a merged row of kind k replaces everything
// before it: with remove-record-on-delete, a merged row that follows a -D
// is written as +U, so merging it again drops the versions before the
// delete (write input +U rows are ordinary updates).
func isReset(opts *Options, k RowKind, raw bool) bool {
	return opts.RemoveOnDelete && !raw && k == UpdateAfter
}

// mergedKind is the kind of a merged row: -D when the key ends deleted,
// +U when it was deleted and written again (see isReset), else +I.
func mergedKind(deleted, reset bool) RowKind {
	switch {
	case deleted:
		return Delete
	case reset:
		return UpdateAfter
	}
	return Insert
}

// newer reports whether row v updates group g: its sequence is not NULL
// and at least the stored one.
func (m *partialMerge) newer(in *Input, g posGroup, v Ref) bool {
	if len(g.seq) == 0 {
		return false
	}
	for _, p := range g.seq {
		if in.Arrays(p)[v.Src].IsNull(int(v.Row)) {
			return false
		}
	}
	if m.cell[g.seq[0]] == none {
		return true
	}
	for _, p := range g.seq {
		if c := m.cmpCells(in, p, v, m.cell[p]); c != 0 {
			return c > 0
		}
	}
	return true
}

// aggMerge is the aggregation engine: each non-key column folds its
// versions with its aggregate function.
type aggMerge struct {
	builderBase
	fn            []string
	ignoreRetract []bool
	delim         []string
	sb            strings.Builder
}

func (m *aggMerge) merge(in *Input, vers []Ref, raw bool, out *output) error {
	opts := m.opts
	last := vers[len(vers)-1]
	kind := Insert
	if opts.RemoveOnDelete {
		// A -D removes everything before it (see isReset).
		for i := len(vers) - 1; i >= 0; i-- {
			k := in.Kind(vers[i])
			if k == Delete && i == len(vers)-1 {
				for p := range m.cell {
					m.cell[p] = none
				}
				m.emit(in, last, Delete, out)
				return nil
			}
			if k == Delete || isReset(opts, k, raw) {
				kind = UpdateAfter
				if k == Delete {
					i++
				}
				vers = vers[i:]
				break
			}
		}
	}
	out.seqs = append(out.seqs, in.Seq(last))
	out.kinds = append(out.kinds, int8(kind))
	for p := range m.cols {
		if slices.Contains(m.keys, p) {
			out.cells[p] = append(out.cells[p], last)
			continue
		}
		if err := m.fold(in, p, vers, raw, out); err != nil {
			out.pop()
			return err
		}
	}
	return nil
}

// fold aggregates position p over vers and appends the cell to out.
func (m *aggMerge) fold(in *Input, p int, vers []Ref, raw bool, out *output) error {
	arrs := in.Arrays(p)
	fn := m.fn[p]
	at := func(r Ref) (arrow.Array, int) { return arrs[r.Src], int(r.Row) }
	ref := func(r Ref) {
		if r == none {
			out.sideBuilder(m.mem, p).AppendNull()
			return
		}
		out.cells[p] = append(out.cells[p], r)
	}
	retracts := func(r Ref) (skip, retract bool, err error) {
		if !in.Kind(r).IsRetract() {
			return false, false, nil
		}
		if m.ignoreRetract[p] {
			return true, false, nil
		}
		if !CanRetract(fn, m.cols[p].Type) {
			return true, false, fmt.Errorf("%w: table %s: column %q has aggregate-function %s, which cannot retract a %s row", ErrInvalid, m.table, m.cols[p].Name, fn, in.Kind(r))
		}
		return false, true, nil
	}
	switch fn {
	case "last_value", "last_non_null_value", "first_value", "first_non_null_value", "max", "min":
		cur := none
		for _, v := range vers {
			skip, retract, err := retracts(v)
			if err != nil {
				return err
			}
			if skip {
				continue
			}
			a, i := at(v)
			null := a.IsNull(i)
			switch fn {
			case "last_value":
				cur = v
				if retract {
					cur = none
				}
			case "last_non_null_value":
				if !null {
					cur = v
				}
			case "first_value":
				ref(v)
				return nil
			case "first_non_null_value":
				if !null {
					ref(v)
					return nil
				}
			case "max", "min":
				if null {
					continue
				}
				if cur == none {
					cur = v
				} else if c := m.cmpCells(in, p, v, cur); (fn == "max" && c > 0) || (fn == "min" && c < 0) {
					cur = v
				}
			}
		}
		ref(cur)
		return nil
	case "sum", "product", "count":
		isFloat := !isIntType(m.cols[p].Type)
		var iacc int64
		var facc float64
		set := false
		for _, v := range vers {
			skip, retract, err := retracts(v)
			if err != nil {
				return err
			}
			if skip {
				continue
			}
			a, i := at(v)
			if fn == "count" && raw {
				// Write input counts its non-null values; merged rows
				// hold counts.
				if a.IsNull(i) {
					continue
				}
				d := int64(1)
				if retract {
					d = -1
				}
				iacc += d
				set = true
				continue
			}
			if a.IsNull(i) {
				continue
			}
			iv, fv := numAt(a, i)
			switch {
			case fn == "product" && retract:
				if !set {
					facc = 1
				}
				facc /= fv
			case fn == "product":
				if !set {
					iacc, facc = 1, 1
				}
				iacc, facc = iacc*iv, facc*fv
			case retract:
				iacc, facc = iacc-iv, facc-fv
			default:
				iacc, facc = iacc+iv, facc+fv
			}
			set = true
		}
		b := out.sideBuilder(m.mem, p)
		switch {
		case !set:
			b.AppendNull()
		case isFloat:
			appendFloatValue(b, facc)
		default:
			appendIntValue(b, iacc)
		}
		return nil
	case "listagg", "bool_and", "bool_or":
		m.sb.Reset()
		set, acc := false, fn == "bool_and"
		for _, v := range vers {
			if skip, _, err := retracts(v); err != nil || skip {
				if err != nil {
					return err
				}
				continue
			}
			a, i := at(v)
			if a.IsNull(i) {
				continue
			}
			switch fn {
			case "listagg":
				if set {
					m.sb.WriteString(m.delim[p])
				}
				m.sb.WriteString(a.(*array.String).Value(i))
			case "bool_and":
				acc = acc && a.(*array.Boolean).Value(i)
			default:
				acc = acc || a.(*array.Boolean).Value(i)
			}
			set = true
		}
		b := out.sideBuilder(m.mem, p)
		switch {
		case !set:
			b.AppendNull()
		case fn == "listagg":
			b.(*array.StringBuilder).Append(m.sb.String())
		default:
			b.(*array.BooleanBuilder).Append(acc)
		}
		return nil
	}
	return fmt.Errorf("%w: table %s: unknown aggregate function %q", ErrInvalid, m.table, fn)
}

// numAt reads a numeric cell as an integer and a float.
func numAt(a arrow.Array, i int) (int64, float64) {
	switch a := a.(type) {
	case *array.Int8:
		return int64(a.Value(i)), float64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i)), float64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i)), float64(a.Value(i))
	case *array.Int64:
		return a.Value(i), float64(a.Value(i))
	case *array.Float32:
		return int64(a.Value(i)), float64(a.Value(i))
	case *array.Float64:
		return int64(a.Value(i)), a.Value(i)
	}
	panic("merge: numAt: unsupported type " + a.DataType().String())
}

func appendIntValue(b array.Builder, v int64) {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(v))
	case *array.Int16Builder:
		b.Append(int16(v))
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int64Builder:
		b.Append(v)
	default:
		panic("merge: appendIntValue: unsupported builder")
	}
}

func appendFloatValue(b array.Builder, v float64) {
	switch b := b.(type) {
	case *array.Float32Builder:
		b.Append(float32(v))
	case *array.Float64Builder:
		b.Append(v)
	default:
		panic("merge: appendFloatValue: unsupported builder")
	}
}
