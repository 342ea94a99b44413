package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// Clients send whichever Arrow physical variant their library produces:
// pandas and polars send large_utf8 or string_view, dictionaries for
// categoricals, int64 for every integer and timestamp[ns]. Ingest and
// parameters accept them and convert to the store's type
// (tablestore.StoredType), so results always come back in that type.

// storedSchema is the schema of a table created from input of schema in.
func storedSchema(in *arrow.Schema) (*arrow.Schema, error) {
	fields := make([]arrow.Field, in.NumFields())
	for i, f := range in.Fields() {
		t, err := tablestore.StoredType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		fields[i] = arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil), nil
}

// convertible reports whether input of type from can be stored in a column
// of type to: the same logical type in another physical variant, or another
// width or unit of it that convertColumn checks value by value (integers
// that must fit, timestamps and times that must not lose digits, decimals
// that must keep their value).
func convertible(from, to arrow.DataType) bool {
	if from.ID() == arrow.NULL {
		return true
	}
	if from.ID() == arrow.DECIMAL256 && to.ID() == arrow.DECIMAL128 {
		// Of any precision, up to 76 (pyarrow's for Python's Decimal):
		// the cast refuses a value that does not fit.
		return true
	}
	s, err := tablestore.StoredType(from)
	if err != nil {
		return false
	}
	if arrow.TypeEqual(s, to) {
		return true
	}
	switch to := to.(type) {
	case *arrow.MapType:
		m, ok := from.(*arrow.MapType)
		return ok && convertible(m.KeyType(), to.KeyType()) && convertible(m.ItemType(), to.ItemType())
	case *arrow.ListType:
		l, ok := from.(arrow.ListLikeType)
		_, isMap := from.(*arrow.MapType)
		return ok && !isMap && convertible(l.Elem(), to.Elem())
	case *arrow.StructType:
		st, ok := from.(*arrow.StructType)
		if !ok || st.NumFields() != to.NumFields() {
			return false
		}
		for i, f := range st.Fields() {
			if f.Name != to.Field(i).Name || !convertible(f.Type, to.Field(i).Type) {
				return false
			}
		}
		return true
	}
	isInt := func(t arrow.DataType) bool {
		switch t.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
			return true
		}
		return false
	}
	switch {
	case isInt(s) && (isInt(to) || to.ID() == arrow.DECIMAL128):
		return true
	case s.ID() == arrow.DECIMAL128 && to.ID() == arrow.DECIMAL128:
		return true
	case s.ID() == arrow.FLOAT32 && to.ID() == arrow.FLOAT64:
		return true
	case (s.ID() == arrow.INT8 || s.ID() == arrow.INT16) && to.ID() == arrow.FLOAT32:
		return true // exact
	case (s.ID() == arrow.INT8 || s.ID() == arrow.INT16 || s.ID() == arrow.INT32) && to.ID() == arrow.FLOAT64:
		return true // exact
	case s.ID() == arrow.TIME64 && to.ID() == arrow.TIME64:
		return true
	case s.ID() == arrow.TIMESTAMP && to.ID() == arrow.TIMESTAMP:
		// A zoned instant and a zoneless local time are different types.
		return (s.(*arrow.TimestampType).TimeZone == "") == (to.(*arrow.TimestampType).TimeZone == "")
	}
	return false
}

// convertColumn returns col as type to (retained when it already is),
// refusing values that would change (overflow, lost digits).
func convertColumn(ctx context.Context, mem memory.Allocator, col arrow.Array, to arrow.DataType) (arrow.Array, error) {
	if err := checkValues(col); err != nil {
		return nil, err
	}
	switch {
	case arrow.TypeEqual(col.DataType(), to):
		// Kept as is: the values nested in it are checked here, as
		// converting a nested column checks them when it converts each.
		if err := checkNestedValues(col); err != nil {
			return nil, err
		}
		col.Retain()
		return col, nil
	case col.DataType().ID() == arrow.NULL:
		return array.MakeArrayOfNull(mem, to, col.Len()), nil
	}
	if nested, ok := to.(arrow.NestedType); ok {
		if d, ok := col.(*array.Dictionary); ok {
			// A dictionary of lists, maps or structs (pyarrow encodes any
			// type): convert its values, then gather them by the indices.
			vals, err := convertColumn(ctx, mem, d.Dictionary(), to)
			if err != nil {
				return nil, err
			}
			defer vals.Release()
			out, err := compute.TakeArray(compute.WithAllocator(ctx, mem), vals, d.Indices())
			if err != nil {
				return nil, fmt.Errorf("dictionary of %s: %v: %w", d.Dictionary().DataType(), err, ErrInvalid)
			}
			return out, nil
		}
		return convertNested(ctx, mem, col, nested)
	}
	if ts, ok := col.DataType().(*arrow.TimestampType); ok && ts.TimeZone != "" {
		// Zoned timestamps hold UTC instants whatever the zone: relabel.
		utc := &arrow.TimestampType{Unit: ts.Unit, TimeZone: "UTC"}
		data := array.NewData(utc, col.Len(), col.Data().Buffers(), nil, col.NullN(), col.Data().Offset())
		defer data.Release()
		col = array.MakeFromData(data)
		defer col.Release()
		if arrow.TypeEqual(utc, to) {
			col.Retain()
			return col, nil
		}
	}
	if pre := precast(mem, col); pre != nil {
		defer pre.Release()
		if arrow.TypeEqual(pre.DataType(), to) {
			pre.Retain()
			return pre, nil
		}
		col = pre
	}
	out, err := compute.CastArray(compute.WithAllocator(ctx, mem), col, compute.SafeCastOptions(to))
	if err != nil {
		return nil, fmt.Errorf("cannot convert %s to %s without changing a value: %v: %w", col.DataType(), to, err, ErrInvalid)
	}
	return out, nil
}

// checkValues refuses values Arrow allows and SQL does not: times past a
// day, dates and timestamps outside years 0000 to 9999.
func checkValues(col arrow.Array) error {
	if err := checkTimeOfDay(col); err != nil {
		return err
	}
	return checkDateRange(col)
}

// checkNestedValues checks the values nested in col (ROW fields, ARRAY
// and MAP elements, at any depth, and a dictionary's) with checkValues. A
// date of year 200000 in a ROW whose type was the table's was stored.
func checkNestedValues(col arrow.Array) error {
	if d, ok := col.(*array.Dictionary); ok {
		col = d.Dictionary()
		if err := checkValues(col); err != nil {
			return err
		}
	}
	var children []arrow.Array
	switch c := col.(type) {
	case *array.Struct:
		for i := range c.NumField() {
			children = append(children, c.Field(i))
		}
	case array.ListLike: // lists, fixed-size lists and maps (lists of key/value structs)
		children = append(children, c.ListValues())
	}
	for _, ch := range children {
		if err := checkValues(ch); err != nil {
			return fmt.Errorf("in %s: %w", col.DataType(), err)
		}
		if err := checkNestedValues(ch); err != nil {
			return err
		}
	}
	return nil
}

// checkTimeOfDay refuses TIME values outside a day, [0, 24h): Arrow
// allows any, and such a value (a timestamp or a duration sent as a
// time) was stored and read back as garbage.
func checkTimeOfDay(col arrow.Array) error {
	if d, ok := col.(*array.Dictionary); ok {
		col = d.Dictionary()
	}
	var unit arrow.TimeUnit
	var at func(i int) int64
	switch c := col.(type) {
	case *array.Time32:
		unit, at = c.DataType().(*arrow.Time32Type).Unit, func(i int) int64 { return int64(c.Value(i)) }
	case *array.Time64:
		unit, at = c.DataType().(*arrow.Time64Type).Unit, func(i int) int64 { return int64(c.Value(i)) }
	default:
		return nil
	}
	day := 86400 * int64(time.Second/unit.Multiplier())
	for i := range col.Len() {
		if v := at(i); col.IsValid(i) && (v < 0 || v >= day) {
			return fmt.Errorf("%s value %d is not a time of day (0 to %d): %w", col.DataType(), v, day-1, ErrInvalid)
		}
	}
	return nil
}

// checkDateRange refuses dates and timestamps outside years 0000 to 9999,
// as SQL arithmetic and casts do (vectorized.ErrDateRange, SQLSTATE
// 22008): Arrow allows any, and an ingested date32 of year 200000 was
// stored as is, for clients to fail on when they read it back. row is the
// position in col (a row of a top-level column).
func checkDateRange(col arrow.Array) error {
	what := "row"
	if d, ok := col.(*array.Dictionary); ok {
		col, what = d.Dictionary(), "dictionary entry"
	}
	bad := -1
	var err error
	switch c := col.(type) {
	case *array.Date32:
		bad = firstOutside(c.Date32Values(), col, vectorized.MinDateDays, vectorized.MaxDateDays)
		if bad >= 0 {
			err = vectorized.CheckDate(int64(c.Value(bad)))
		}
	case *array.Date64:
		bad = firstOutside(c.Date64Values(), col, vectorized.MinDateDays*86400_000, (vectorized.MaxDateDays+1)*86400_000-1)
		if bad >= 0 {
			err = vectorized.CheckTimestamp(int64(c.Value(bad)), arrow.Millisecond)
		}
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		per := vectorized.UnitsPerSecond(unit)
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if l := int64(vectorized.MinDateDays * 86400); l >= math.MinInt64/per {
			lo = l * per
		}
		if h := int64((vectorized.MaxDateDays + 1) * 86400); h <= math.MaxInt64/per {
			hi = h*per - 1
		}
		bad = firstOutside(c.TimestampValues(), col, arrow.Timestamp(lo), arrow.Timestamp(hi))
		if bad >= 0 {
			err = vectorized.CheckTimestamp(int64(c.Value(bad)), unit)
		}
	}
	if bad < 0 {
		return nil
	}
	return fmt.Errorf("%s value at %s %d: %w", col.DataType(), what, bad, err)
}

// firstOutside is the first non-NULL value of vals (col's) outside lo..hi,
// or -1.
func firstOutside[T ~int32 | ~int64](vals []T, col arrow.Array, lo, hi T) int {
	for i, v := range vals {
		if (v < lo || v > hi) && col.IsValid(i) {
			return i
		}
	}
	return -1
}

// precast converts a column arrow-go's cast takes wrongly or not at all
// to one it takes, or returns nil. Its kernel from fixed_size_binary
// dereferences the validity bitmap an array without NULLs lacks, in a
// goroutine of its own: one such parameter or ingest column from pyarrow
// crashed the server. It has none from decimal32 or decimal64: they widen
// to decimal128 of the same precision and scale.
func precast(mem memory.Allocator, col arrow.Array) arrow.Array {
	switch c := col.(type) {
	case *array.FixedSizeBinary:
		return fixedToBinary(mem, c)
	case *array.Decimal32, *array.Decimal64:
		return widenDecimal(mem, c)
	}
	return nil
}

// fixedToBinary is a fixed_size_binary column as binary.
func fixedToBinary(mem memory.Allocator, col *array.FixedSizeBinary) arrow.Array {
	b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	defer b.Release()
	b.Reserve(col.Len())
	for i := range col.Len() {
		if col.IsNull(i) {
			b.AppendNull()
		} else {
			b.Append(col.Value(i))
		}
	}
	return b.NewArray()
}

// widenDecimal is a decimal32 or decimal64 column as decimal128 of its
// precision and scale (every value fits).
func widenDecimal(mem memory.Allocator, col arrow.Array) arrow.Array {
	var prec, scale int32
	var value func(i int) int64
	switch c := col.(type) {
	case *array.Decimal32:
		t := c.DataType().(*arrow.Decimal32Type)
		prec, scale, value = t.Precision, t.Scale, func(i int) int64 { return int64(c.Value(i)) }
	case *array.Decimal64:
		t := c.DataType().(*arrow.Decimal64Type)
		prec, scale, value = t.Precision, t.Scale, func(i int) int64 { return int64(c.Value(i)) }
	}
	b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: prec, Scale: scale})
	defer b.Release()
	b.Reserve(col.Len())
	for i := range col.Len() {
		if col.IsNull(i) {
			b.AppendNull()
		} else {
			b.Append(decimal128.FromI64(value(i)))
		}
	}
	return b.NewArray()
}

// convertNested converts a struct, list-like or map column part by part:
// the elements of every list variant are gathered into a plain list and
// converted as a column of their own, as are struct fields.
func convertNested(ctx context.Context, mem memory.Allocator, col arrow.Array, to arrow.NestedType) (arrow.Array, error) {
	if col.Data().Offset() != 0 {
		// Rebuilt parts start at 0: copy the input so its validity does too.
		c, err := array.Concatenate([]arrow.Array{col}, mem)
		if err != nil {
			return nil, err
		}
		defer c.Release()
		col = c
	}
	validity := col.Data().Buffers()[0]
	if col.NullN() == 0 {
		validity = nil
	}
	var children []arrow.ArrayData
	defer func() {
		for _, c := range children {
			c.Release()
		}
	}()
	var bufs []*memory.Buffer
	switch to := to.(type) {
	case *arrow.StructType:
		st := col.(*array.Struct)
		for i, f := range to.Fields() {
			c, err := convertColumn(ctx, mem, st.Field(i), f.Type)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			defer c.Release()
			if err := vectorized.CheckNotNull(f, c, col); err != nil {
				return nil, err
			}
			c.Data().Retain()
			children = append(children, c.Data())
		}
		bufs = []*memory.Buffer{validity}
	case arrow.ListLikeType: // list or map
		l := col.(array.ListLike)
		ob := memory.NewResizableBuffer(mem)
		defer ob.Release()
		ob.Resize(arrow.Int32Traits.BytesRequired(col.Len() + 1))
		offsets := arrow.Int32Traits.CastFromBytes(ob.Bytes())
		offsets[0] = 0
		idx := array.NewInt64Builder(mem)
		defer idx.Release()
		for i := range col.Len() {
			if col.IsValid(i) {
				lo, hi := l.ValueOffsets(i)
				for j := lo; j < hi; j++ {
					idx.Append(j)
				}
			}
			if idx.Len() > math.MaxInt32 {
				return nil, fmt.Errorf("list column holds more than 2^31 elements in one batch: %w", ErrInvalid)
			}
			offsets[i+1] = int32(idx.Len())
		}
		ia := idx.NewArray()
		defer ia.Release()
		// Convert before gathering: take has no kernels for some input
		// variants (string_view elements).
		vals, err := convertColumn(ctx, mem, l.ListValues(), to.Elem())
		if err != nil {
			return nil, err
		}
		defer vals.Release()
		elems, err := compute.TakeArray(compute.WithAllocator(ctx, mem), vals, ia)
		if err != nil {
			return nil, err
		}
		defer elems.Release()
		if err := vectorized.CheckNotNull(to.ElemField(), elems, nil); err != nil {
			return nil, err
		}
		elems.Data().Retain()
		children = append(children, elems.Data())
		bufs = []*memory.Buffer{validity, ob}
	default:
		return nil, fmt.Errorf("cannot convert %s to %s: %w", col.DataType(), to, ErrInvalid)
	}
	data := array.NewData(to, col.Len(), bufs, children, col.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// storedParams returns params with every column in its stored type, so the
// planner sees the types it knows whatever variant the client bound. The
// caller releases the result.
func storedParams(mem memory.Allocator, params arrow.RecordBatch) (arrow.RecordBatch, error) {
	schema := params.Schema()
	fields := make([]arrow.Field, params.NumCols())
	cols := make([]arrow.Array, params.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, f := range schema.Fields() {
		t := f.Type
		if t.ID() != arrow.NULL {
			var err error
			if t, err = tablestore.StoredType(f.Type); err != nil {
				return nil, fmt.Errorf("parameter $%d: %w", i+1, err)
			}
		}
		c, err := convertColumn(context.Background(), mem, params.Column(i), t)
		if err != nil {
			return nil, fmt.Errorf("parameter $%d: %w", i+1, err)
		}
		cols[i] = c
		fields[i] = arrow.Field{Name: f.Name, Type: t, Nullable: true}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, params.NumRows()), nil
}
