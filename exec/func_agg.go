package exec

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/vectorized"
)

// Flink's aggregates beyond the SQL core: ARRAY_AGG, COLLECT,
// JSON_ARRAYAGG, JSON_OBJECTAGG and PERCENTILE. The parser names the
// variants of their NULL clauses (array_agg_ignore_nulls,
// json_arrayagg_null_on_null, json_objectagg_absent_on_null).
//
// Accumulators have no release, so the values they keep are Go copies of
// the Arrow values' bytes (heldValue), never Arrow buffers.
func resolveFlinkAgg(name string, types []arrow.DataType, args []Expr) (*aggDef, error) {
	switch name {
	case "array_agg", "array_agg_ignore_nulls", "collect":
		if len(types) != 1 {
			return nil, fmt.Errorf("takes one argument")
		}
		t := types[0]
		if !heldType(t) {
			return nil, fmt.Errorf("cannot collect values of type %s", t)
		}
		if name == "collect" {
			// A MULTISET is a map from each distinct value to its count,
			// as Flink holds it (MapData); NULLs are left out.
			ret := arrow.MapOf(t, i32Type)
			return &aggDef{ret: ret, arity: 1, make: func() accumulator { return &collectAcc{typ: ret} }}, nil
		}
		ignore := name == "array_agg_ignore_nulls"
		return &aggDef{ret: arrow.ListOf(t), arity: 1, distinctNulls: !ignore, make: func() accumulator {
			return &arrayAggAcc{elem: t, ignoreNulls: ignore}
		}}, nil
	case "json_arrayagg", "json_arrayagg_null_on_null":
		if len(types) != 1 {
			return nil, fmt.Errorf("takes one argument")
		}
		nulls, raw := name == "json_arrayagg_null_on_null", rawJSONValue(args)
		return &aggDef{ret: strType, arity: 1, distinctNulls: nulls, make: func() accumulator { return &jsonAggAcc{nullOnNull: nulls, raw: raw} }}, nil
	case "json_objectagg", "json_objectagg_absent_on_null":
		if len(types) != 2 {
			return nil, fmt.Errorf("takes a key and a value")
		}
		if !vectorized.IsString(types[0]) && types[0].ID() != arrow.NULL {
			return nil, fmt.Errorf("the key must be a string, not %s", types[0])
		}
		absent, raw := name == "json_objectagg_absent_on_null", rawJSONValue(args)
		return &aggDef{ret: strType, arity: 2, make: func() accumulator { return &jsonAggAcc{object: true, nullOnNull: !absent, raw: raw} }}, nil
	case "percentile":
		if len(types) < 2 || len(types) > 3 {
			return nil, fmt.Errorf("takes a value, a percentage or an ARRAY of them, and optionally a frequency")
		}
		if !isNumeric(types[0]) && types[0].ID() != arrow.NULL {
			return nil, fmt.Errorf("the value must be a number, not %s", types[0])
		}
		ret := f64Type
		switch pt := types[1].(type) {
		case *arrow.ListType:
			if !isNumeric(pt.Elem()) {
				return nil, fmt.Errorf("the percentages must be numbers, not %s", pt.Elem())
			}
			ret = arrow.ListOf(f64Type)
		default:
			if !isNumeric(pt) && pt.ID() != arrow.NULL {
				return nil, fmt.Errorf("the percentage must be a number, not %s", pt)
			}
		}
		if len(types) == 3 && !vectorized.IsInteger(types[2]) && types[2].ID() != arrow.NULL {
			return nil, fmt.Errorf("the frequency must be an integer, not %s", types[2])
		}
		return &aggDef{ret: ret, arity: len(types), make: func() accumulator { return &percentileAcc{ret: ret} }}, nil
	}
	return nil, nil
}

// rawJSONValue says whether the value (the last argument) is a JSON
// constructor's result, which JSON_ARRAYAGG and JSON_OBJECTAGG insert as
// JSON, as JSON_ARRAY does.
func rawJSONValue(args []Expr) bool {
	return len(args) > 0 && rawJSONArgs(args[len(args)-1:])[0]
}

// heldValue is a copy of one value's bytes (nil: NULL): the fixed-width
// value as stored, a string's or binary's bytes, or one byte for a BOOLEAN.
type heldValue []byte

// heldType says whether values of t can be held: scalars, not ARRAY, MAP or
// ROW values.
func heldType(t arrow.DataType) bool {
	switch {
	case t.ID() == arrow.BOOL, vectorized.IsString(t), t.ID() == arrow.BINARY:
		return true
	case vectorized.IsNested(t):
		return false
	}
	fw, ok := t.(arrow.FixedWidthDataType)
	return ok && fw.BitWidth()%8 == 0
}

func holdValue(a arrow.Array, i int) heldValue {
	if a.IsNull(i) {
		return nil
	}
	t := a.DataType()
	switch {
	case t.ID() == arrow.BOOL:
		if a.(*array.Boolean).Value(i) {
			return heldValue{1}
		}
		return heldValue{0}
	case vectorized.IsString(t), t.ID() == arrow.BINARY:
		return append(heldValue{}, vectorized.StringAt(a, i)...)
	}
	w := t.(arrow.FixedWidthDataType).BitWidth() / 8
	d := a.Data()
	at := (d.Offset() + i) * w
	return append(heldValue{}, d.Buffers()[1].Bytes()[at:at+w]...)
}

// buildHeld builds an array of type t from held values.
func buildHeld(mem memory.Allocator, t arrow.DataType, vals []heldValue) arrow.Array {
	n := len(vals)
	valid := memory.NewResizableBuffer(mem)
	defer valid.Release()
	valid.Resize(int(bitutil.BytesForBits(int64(n))))
	clear(valid.Bytes())
	nulls := 0
	for i, v := range vals {
		if v == nil {
			nulls++
		} else {
			bitutil.SetBit(valid.Bytes(), i)
		}
	}
	data := memory.NewResizableBuffer(mem)
	defer data.Release()
	bufs := []*memory.Buffer{valid, data}
	switch {
	case t.ID() == arrow.BOOL:
		data.Resize(int(bitutil.BytesForBits(int64(n))))
		clear(data.Bytes())
		for i, v := range vals {
			if len(v) == 1 && v[0] == 1 {
				bitutil.SetBit(data.Bytes(), i)
			}
		}
	case vectorized.IsString(t), t.ID() == arrow.BINARY:
		offsets := memory.NewResizableBuffer(mem)
		defer offsets.Release()
		offsets.Resize(arrow.Int32Traits.BytesRequired(n + 1))
		offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
		size := 0
		for _, v := range vals {
			size += len(v)
		}
		data.Resize(size)
		b := data.Bytes()[:0]
		offs[0] = 0
		for i, v := range vals {
			b = append(b, v...)
			offs[i+1] = int32(len(b))
		}
		bufs = []*memory.Buffer{valid, offsets, data}
	default:
		w := t.(arrow.FixedWidthDataType).BitWidth() / 8
		data.Resize(n * w)
		b := data.Bytes()
		clear(b)
		for i, v := range vals {
			copy(b[i*w:], v)
		}
	}
	d := array.NewData(t, n, bufs, nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// arrayAggAcc is ARRAY_AGG: the group's values in input order (which SQL
// leaves undefined), NULLs kept unless ignoreNulls; NULL for a group
// without rows, as in Flink.
type arrayAggAcc struct {
	elem        arrow.DataType
	ignoreNulls bool
	vals        [][]heldValue
	seen        seen
	size        int64
}

func (a *arrayAggAcc) grow(n int) { a.vals = growTo(a.vals, n); a.seen.grow(n) }

func (a *arrayAggAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	x := args[0]
	for i, g := range groups {
		if (mask != nil && !mask[i]) || a.ignoreNulls && x.IsNull(i) {
			continue
		}
		v := holdValue(x, i)
		a.vals[g] = append(a.vals[g], v)
		a.seen[g] = true
		a.size += int64(len(v)) + 24
	}
	return nil
}

func (a *arrayAggAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	var all []heldValue
	offs := make([]int32, n+1)
	for g := range n {
		if len(all)+len(a.vals[g]) > math.MaxInt32 {
			return nil, fmt.Errorf("%w: an ARRAY of more than %d elements", vectorized.ErrOverflow, math.MaxInt32)
		}
		all = append(all, a.vals[g]...)
		offs[g+1] = int32(len(all))
	}
	child := buildHeld(mem, a.elem, all)
	defer child.Release()
	return listFromOffsets(mem, arrow.ListOf(a.elem), child.Data(), offs, a.seen[:n]), nil
}

// listFromOffsets builds a list (or map) array of n = len(valid) rows over
// child: row g holds child[offs[g]:offs[g+1]], NULL where !valid[g].
func listFromOffsets(mem memory.Allocator, t arrow.DataType, child arrow.ArrayData, offs []int32, valid []bool) arrow.Array {
	n := len(valid)
	vb := memory.NewResizableBuffer(mem)
	defer vb.Release()
	vb.Resize(int(bitutil.BytesForBits(int64(n))))
	clear(vb.Bytes())
	nulls := 0
	for g, ok := range valid {
		if ok {
			bitutil.SetBit(vb.Bytes(), g)
		} else {
			nulls++
		}
	}
	ob := memory.NewResizableBuffer(mem)
	defer ob.Release()
	ob.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	copy(arrow.Int32Traits.CastFromBytes(ob.Bytes()), offs)
	d := array.NewData(t, n, []*memory.Buffer{vb, ob}, []arrow.ArrayData{child}, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// moveTo keeps group from as group to, the last one (callers move to 0),
// and counts only its values from then on.
func (a *arrayAggAcc) moveTo(from, to int) {
	a.vals = moveState(a.vals, from, to)
	a.seen = moveState(a.seen, from, to)
	a.size = 0
	for _, v := range a.vals[to] {
		a.size += int64(len(v)) + 24
	}
}

// copyGroup copies the slice: both groups may grow afterwards.
func (a *arrayAggAcc) copyGroup(from, to int) {
	a.vals[to] = slices.Clone(a.vals[from])
	a.seen[to] = a.seen[from]
	for _, v := range a.vals[to] {
		a.size += int64(len(v)) + 24
	}
}

func (a *arrayAggAcc) bytes() int64 { return a.size }

// collectAcc is COLLECT: each distinct non-NULL value with its count, in
// the order of first appearance; an empty MULTISET for a group without
// any, as in Flink.
type collectAcc struct {
	typ    *arrow.MapType
	keys   [][]heldValue
	counts [][]int32
	index  []map[string]int
	size   int64
}

func (c *collectAcc) grow(n int) {
	c.keys, c.counts, c.index = growTo(c.keys, n), growTo(c.counts, n), growTo(c.index, n)
}

func (c *collectAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	on := activeRows(args[0], mask)
	for i, g := range groups {
		if !on.at(i) {
			continue
		}
		v := holdValue(args[0], i)
		if c.index[g] == nil {
			c.index[g] = map[string]int{}
		}
		if k, ok := c.index[g][string(v)]; ok {
			c.counts[g][k]++
			continue
		}
		c.index[g][string(v)] = len(c.keys[g])
		c.keys[g] = append(c.keys[g], v)
		c.counts[g] = append(c.counts[g], 1)
		c.size += 2*int64(len(v)) + 24 + 4 + mapEntryBytes
	}
	return nil
}

func (c *collectAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	var keys []heldValue
	var counts []int32
	offs := make([]int32, n+1)
	valid := make([]bool, n)
	for g := range n {
		keys, counts = append(keys, c.keys[g]...), append(counts, c.counts[g]...)
		offs[g+1], valid[g] = int32(len(keys)), true
	}
	ka := buildHeld(mem, c.typ.KeyType(), keys)
	defer ka.Release()
	ca := vectorized.NewFixedOut[int32](mem, len(counts))
	copy(ca.Vals, counts)
	cnt := ca.Finish(i32Type, nil, 0)
	defer cnt.Release()
	entries := array.NewData(c.typ.Elem(), len(keys), []*memory.Buffer{nil}, []arrow.ArrayData{ka.Data(), cnt.Data()}, 0, 0)
	defer entries.Release()
	return listFromOffsets(mem, c.typ, entries, offs, valid), nil
}

func (c *collectAcc) moveTo(from, to int) {
	c.keys = moveState(c.keys, from, to)
	c.counts = moveState(c.counts, from, to)
	c.index = moveState(c.index, from, to)
	c.size = 0
	for _, k := range c.keys[to] {
		c.size += 2*int64(len(k)) + 24 + 4 + mapEntryBytes
	}
}

func (c *collectAcc) copyGroup(from, to int) {
	c.keys[to], c.counts[to] = slices.Clone(c.keys[from]), slices.Clone(c.counts[from])
	c.index[to] = make(map[string]int, len(c.index[from]))
	for k, v := range c.index[from] {
		c.index[to][k] = v
		c.size += 2*int64(len(k)) + 24 + 4 + mapEntryBytes
	}
}

func (c *collectAcc) bytes() int64 { return c.size }

// jsonAggAcc is JSON_ARRAYAGG(v) (NULLs left out unless nullOnNull) and
// JSON_OBJECTAGG(k VALUE v) (NULL values written as null unless not
// nullOnNull; a NULL or repeated key is an error, as in Flink). Values are
// written as JSON_ARRAY writes them (a JSON constructor's result as JSON);
// a group without rows gives [] or {}.
type jsonAggAcc struct {
	object     bool
	nullOnNull bool
	raw        bool // the values are JSON constructors' results
	vals       [][]byte
	keys       []map[string]bool
	size       int64
	sb         strings.Builder
}

func (j *jsonAggAcc) grow(n int) {
	j.vals = growTo(j.vals, n)
	if j.object {
		j.keys = growTo(j.keys, n)
	}
}

func (j *jsonAggAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	v := args[len(args)-1]
	for i, g := range groups {
		if (mask != nil && !mask[i]) || !j.nullOnNull && v.IsNull(i) {
			continue
		}
		j.sb.Reset()
		if j.object {
			k := args[0]
			if k.IsNull(i) {
				return fmt.Errorf("%w: JSON_OBJECTAGG key is NULL", vectorized.ErrInvalidValue)
			}
			key := vectorized.StringAt(k, i)
			if j.keys[g][key] {
				return fmt.Errorf("%w: JSON_OBJECTAGG key %q appears twice", vectorized.ErrInvalidValue, key)
			}
			if j.keys[g] == nil {
				j.keys[g] = map[string]bool{}
			}
			j.keys[g][key] = true
			j.size += int64(len(key)) + mapEntryBytes
			jsonString(&j.sb, key)
			j.sb.WriteByte(':')
		}
		jsonText(&j.sb, v, i, j.raw)
		before := cap(j.vals[g])
		if len(j.vals[g]) > 0 {
			j.vals[g] = append(j.vals[g], ',')
		}
		j.vals[g] = append(j.vals[g], j.sb.String()...)
		j.size += int64(cap(j.vals[g]) - before)
		if len(j.vals[g]) > vectorized.MaxComputedString {
			return vectorized.CheckComputedString(j.name(), int64(len(j.vals[g])))
		}
	}
	return nil
}

func (j *jsonAggAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	open, closing := "[", "]"
	if j.object {
		open, closing = "{", "}"
	}
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	for g := range n {
		b.Append(open + string(j.vals[g]) + closing)
	}
	return b.NewArray(), nil
}

func (j *jsonAggAcc) moveTo(from, to int) {
	j.vals = moveState(j.vals, from, to)
	j.size = int64(cap(j.vals[to]))
	if j.object {
		j.keys = moveState(j.keys, from, to)
		for k := range j.keys[to] {
			j.size += int64(len(k)) + mapEntryBytes
		}
	}
}

func (j *jsonAggAcc) copyGroup(from, to int) {
	j.size += int64(len(j.vals[from]) - cap(j.vals[to]))
	j.vals[to] = append([]byte(nil), j.vals[from]...)
	if j.object {
		j.keys[to] = make(map[string]bool, len(j.keys[from]))
		for k := range j.keys[from] {
			j.keys[to][k] = true
		}
	}
}

func (j *jsonAggAcc) bytes() int64 { return j.size }

func (j *jsonAggAcc) name() string {
	if j.object {
		return "JSON_OBJECTAGG"
	}
	return "JSON_ARRAYAGG"
}

// percentileAcc is Flink's PERCENTILE(x, p [, frequency]): the value at
// position p * (count - 1) of the group's non-NULL values in order, each
// counted frequency times (a row with a frequency below 1 is not counted),
// interpolated linearly between its neighbours; p may be an ARRAY of
// percentages, giving an ARRAY. The percentage of the group's first row is
// used (Flink takes a constant). NULL for a group without values.
type percentileAcc struct {
	ret   arrow.DataType
	vals  [][]float64
	freq  [][]int64
	ps    [][]float64
	pnull []bool
	size  int64
}

func (p *percentileAcc) grow(n int) {
	p.vals, p.freq, p.ps, p.pnull = growTo(p.vals, n), growTo(p.freq, n), growTo(p.ps, n), growTo(p.pnull, n)
}

func (p *percentileAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	x := args[0]
	xs := floatView(x)
	var fq func(int) int64
	if len(args) == 3 && args[2].DataType().ID() != arrow.NULL {
		fq = int64View(args[2])
	}
	for i, g := range groups {
		if mask != nil && !mask[i] {
			continue
		}
		if p.ps[g] == nil && !p.pnull[g] {
			ps, err := percentages(args[1], i)
			if err != nil {
				return err
			}
			p.ps[g], p.pnull[g] = ps, ps == nil
		}
		if x.IsNull(i) {
			continue
		}
		f := int64(1)
		if len(args) == 3 {
			if args[2].IsNull(i) {
				continue
			}
			if f = fq(i); f <= 0 {
				continue // as in Flink: the row is not counted
			}
		}
		p.vals[g] = append(p.vals[g], xs(i))
		p.freq[g] = append(p.freq[g], f)
		p.size += 16
	}
	return nil
}

// percentages reads row i's percentage or ARRAY of them (nil: NULL), each
// between 0 and 1.
func percentages(a arrow.Array, i int) ([]float64, error) {
	if a.IsNull(i) {
		return nil, nil
	}
	vals, lo := a, i
	n := 1
	if l, ok := a.(*array.List); ok {
		s, e := l.ValueOffsets(i)
		vals, lo, n = l.ListValues(), int(s), int(e-s)
	}
	get := floatView(vals)
	out := make([]float64, 0, n)
	for k := lo; k < lo+n; k++ {
		if vals.IsNull(k) {
			return nil, fmt.Errorf("%w: a PERCENTILE percentage is NULL", vectorized.ErrInvalidValue)
		}
		v := get(k)
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("%w: PERCENTILE percentage %v is not between 0 and 1", vectorized.ErrInvalidValue, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// floatView reads any numeric array as float64 values.
func floatView(a arrow.Array) func(i int) float64 {
	switch {
	case a.DataType().ID() == arrow.FLOAT64:
		v := vectorized.Values[float64](a)
		return func(i int) float64 { return v[i] }
	case a.DataType().ID() == arrow.FLOAT32:
		v := vectorized.Values[float32](a)
		return func(i int) float64 { return float64(v[i]) }
	case a.DataType().ID() == arrow.DECIMAL128:
		v, scale := vectorized.DecimalValues(a), a.DataType().(*arrow.Decimal128Type).Scale
		return func(i int) float64 { return vectorized.DecimalToFloat64(v[i], scale) }
	case a.DataType().ID() == arrow.NULL:
		return func(int) float64 { return 0 }
	}
	v := int64View(a)
	return func(i int) float64 { return float64(v(i)) }
}

func (p *percentileAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	b := array.NewBuilder(mem, p.ret)
	defer b.Release()
	for g := range n {
		if len(p.vals[g]) == 0 || p.pnull[g] {
			b.AppendNull()
			continue
		}
		at := percentileOf(p.vals[g], p.freq[g])
		if lb, ok := b.(*array.ListBuilder); ok {
			lb.Append(true)
			fb := lb.ValueBuilder().(*array.Float64Builder)
			for _, q := range p.ps[g] {
				fb.Append(at(q))
			}
			continue
		}
		b.(*array.Float64Builder).Append(at(p.ps[g][0]))
	}
	return b.NewArray(), nil
}

// percentileOf sorts the values (with their frequencies) and returns the
// interpolated value at a percentage.
func percentileOf(vals []float64, freq []int64) func(q float64) float64 {
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(vals[a], vals[b]) })
	cum := make([]int64, len(idx)) // rows up to and including idx[k]
	var total int64
	for k, i := range idx {
		total += freq[i]
		cum[k] = total
	}
	// at returns the value at 0-based position pos of the expanded rows.
	at := func(pos int64) float64 {
		k, _ := slices.BinarySearch(cum, pos+1)
		return vals[idx[k]]
	}
	return func(q float64) float64 {
		pos := q * float64(total-1)
		lo, hi := int64(math.Floor(pos)), int64(math.Ceil(pos))
		l, h := at(lo), at(hi)
		if lo == hi || l == h {
			return l
		}
		f := pos - float64(lo)
		return (1-f)*l + f*h // Flink's rounding: 1.5 and 2.5 at 0.3 give 1.7999999999999998
	}
}

func (p *percentileAcc) moveTo(from, to int) {
	p.vals = moveState(p.vals, from, to)
	p.freq = moveState(p.freq, from, to)
	p.ps = moveState(p.ps, from, to)
	p.pnull = moveState(p.pnull, from, to)
	p.size = 16 * int64(len(p.vals[to]))
}

func (p *percentileAcc) copyGroup(from, to int) {
	p.vals[to], p.freq[to] = slices.Clone(p.vals[from]), slices.Clone(p.freq[from])
	p.ps[to], p.pnull[to] = p.ps[from], p.pnull[from]
	p.size += 16 * int64(len(p.vals[to]))
}

func (p *percentileAcc) bytes() int64 { return p.size }
