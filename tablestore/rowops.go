package tablestore

import (
	"bytes"
	"cmp"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/tablestore/meta"
	"github.com/flightd/flightd/tablestore/paimonfmt"
)

// cmpFunc returns a comparison of rows i and j of a, with nulls first.
func cmpFunc(a arrow.Array) func(i, j int) int {
	var f func(i, j int) int
	switch a := a.(type) {
	case *array.Boolean:
		f = func(i, j int) int {
			x, y := a.Value(i), a.Value(j)
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}
	case *array.Int8:
		f = ordered(a.Int8Values())
	case *array.Int16:
		f = ordered(a.Int16Values())
	case *array.Int32:
		f = ordered(a.Int32Values())
	case *array.Int64:
		f = ordered(a.Int64Values())
	case *array.Float32:
		f = ordered(a.Float32Values())
	case *array.Float64:
		f = ordered(a.Float64Values())
	case *array.Date32:
		f = ordered(a.Date32Values())
	case *array.Timestamp:
		f = ordered(a.TimestampValues())
	case *array.Time64:
		f = ordered(a.Time64Values())
	case *array.String:
		f = func(i, j int) int { return cmp.Compare(a.Value(i), a.Value(j)) }
	case *array.Binary:
		f = func(i, j int) int { return bytes.Compare(a.Value(i), a.Value(j)) }
	case *array.Decimal128:
		f = func(i, j int) int { return a.Value(i).Cmp(a.Value(j)) }
	default:
		// Schema validation admits only the types above.
		panic("tablestore: cmpFunc: unsupported type " + a.DataType().String())
	}
	if a.NullN() == 0 {
		return f
	}
	return func(i, j int) int {
		ni, nj := a.IsNull(i), a.IsNull(j)
		switch {
		case ni && nj:
			return 0
		case ni:
			return -1
		case nj:
			return 1
		}
		return f(i, j)
	}
}

func ordered[T cmp.Ordered](v []T) func(i, j int) int {
	return func(i, j int) int { return cmp.Compare(v[i], v[j]) }
}

// rowsCmp compares rows over several columns in order.
func rowsCmp(cols []arrow.Array) func(i, j int) int {
	fs := make([]func(i, j int) int, len(cols))
	for k, c := range cols {
		fs[k] = cmpFunc(c)
	}
	if len(fs) == 1 {
		return fs[0]
	}
	return func(i, j int) int {
		for _, f := range fs {
			if c := f(i, j); c != 0 {
				return c
			}
		}
		return 0
	}
}

// mix64 is the splitmix64 finalizer; bucket assignment depends on it, so it
// must never change for existing tables.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func hashBytes(h uint64, b []byte) uint64 {
	// FNV-1a, then mixed in; stable across processes and versions.
	f := uint64(14695981039346656037)
	for _, c := range b {
		f ^= uint64(c)
		f *= 1099511628211
	}
	return mix64(h ^ f ^ uint64(len(b)))
}

// hashColumn folds column a into the per-row hashes h.
func hashColumn(a arrow.Array, h []uint64) {
	ints := func(get func(i int) int64) {
		for i := range h {
			if a.IsNull(i) {
				h[i] = mix64(h[i] ^ 0x9e3779b97f4a7c15)
				continue
			}
			h[i] = mix64(h[i]*31 + uint64(get(i)))
		}
	}
	switch a := a.(type) {
	case *array.Boolean:
		ints(func(i int) int64 {
			if a.Value(i) {
				return 1
			}
			return 0
		})
	case *array.Int8:
		ints(func(i int) int64 { return int64(a.Value(i)) })
	case *array.Int16:
		ints(func(i int) int64 { return int64(a.Value(i)) })
	case *array.Int32:
		ints(func(i int) int64 { return int64(a.Value(i)) })
	case *array.Int64:
		v := a.Int64Values()
		if a.NullN() == 0 {
			for i := range h {
				h[i] = mix64(h[i]*31 + uint64(v[i]))
			}
			return
		}
		ints(func(i int) int64 { return v[i] })
	case *array.Date32:
		ints(func(i int) int64 { return int64(a.Value(i)) })
	case *array.Timestamp:
		ints(func(i int) int64 { return int64(a.Value(i)) })
	case *array.Time64:
		ints(func(i int) int64 { return int64(a.Value(i)) })
	case *array.Float32:
		ints(func(i int) int64 { return int64(math.Float64bits(float64(a.Value(i)))) })
	case *array.Float64:
		ints(func(i int) int64 { return int64(math.Float64bits(a.Value(i))) })
	case *array.String:
		for i := range h {
			if a.IsNull(i) {
				h[i] = mix64(h[i] ^ 0x9e3779b97f4a7c15)
				continue
			}
			h[i] = hashBytes(h[i], []byte(a.Value(i)))
		}
	case *array.Binary:
		for i := range h {
			if a.IsNull(i) {
				h[i] = mix64(h[i] ^ 0x9e3779b97f4a7c15)
				continue
			}
			h[i] = hashBytes(h[i], a.Value(i))
		}
	case *array.Decimal128:
		ints(func(i int) int64 {
			v := a.Value(i)
			return int64(mix64(uint64(v.HighBits())) ^ v.LowBits())
		})
	default:
		panic("tablestore: hashColumn: unsupported type " + a.DataType().String())
	}
}

// columnStats computes min, max and null count of rows [0, n) of a.
func columnStats(id int, a arrow.Array) meta.ColStats {
	st := meta.ColStats{ID: id, NullCount: int64(a.NullN())}
	if a.Len() == a.NullN() {
		return st
	}
	if a.DataType().ID() == arrow.DECIMAL128 || isNested(a.DataType()) {
		return st // nested values have no order to bound them by
	}
	if mn, mx, ok := fastMinMax(a); ok {
		st.Min, st.Max = &mn, &mx
		return st
	}
	if id := a.DataType().ID(); id == arrow.FLOAT32 || id == arrow.FLOAT64 {
		return st // NaN present: bounds unknown
	}
	if lo, hi, ok := bytesMinMax(a); ok {
		return boundsStats(id, a, lo, hi)
	}
	lo, hi := compareBounds(a)
	return boundsStats(id, a, lo, hi)
}

// compareBounds returns the rows of a's least and greatest non-null values
// by comparing rows (-1, -1 when there are none): the generic path.
func compareBounds(a arrow.Array) (lo, hi int) {
	c := cmpFunc(a)
	lo, hi = -1, -1
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			continue
		}
		if lo < 0 || c(i, lo) < 0 {
			lo = i
		}
		if hi < 0 || c(i, hi) > 0 {
			hi = i
		}
	}
	return lo, hi
}

// boundsStats is the statistics of a whose least and greatest non-null
// values are in rows lo and hi.
func boundsStats(id int, a arrow.Array, lo, hi int) meta.ColStats {
	mn, _ := meta.DatumAt(a, lo)
	mx, _ := meta.DatumAt(a, hi)
	st := meta.ColStats{ID: id, NullCount: int64(a.NullN())}
	st.Min, st.Max = clipBounds(mn, mx)
	return st
}

// clipBounds returns the bounds a manifest keeps of least and greatest
// values mn and mx: long strings would bloat manifests, so a prefix is
// kept as the lower bound and the upper bound is dropped (nil). They are
// copies (meta.KeptDatum), clipped first: a prefix of a copy of a 10 MB value
// kept all of it.
func clipBounds(mn, mx meta.Datum) (lo, hi *meta.Datum) {
	const maxStat = 64
	if mn.S != nil && len(*mn.S) > maxStat {
		p := (*mn.S)[:maxStat]
		for !utf8.ValidString(p) {
			p = p[:len(p)-1]
		}
		mn = meta.StrDatum(p)
	}
	if mn.B != nil && len(*mn.B) > maxStat {
		mn = meta.BinDatum((*mn.B)[:maxStat])
	}
	mn = meta.KeptDatum(mn)
	if (mx.S == nil || len(*mx.S) <= maxStat) && (mx.B == nil || len(*mx.B) <= maxStat) {
		mx = meta.KeptDatum(mx)
		return &mn, &mx
	}
	return &mn, nil
}

// bytesMinMax finds the rows of the least and greatest non-null values of
// a string or binary column (byte order, as cmpFunc) in one typed loop
// over its offsets: cmpFunc's closures cost two indirect calls a row, and
// the bounds of every string column of every file written were 4% of an
// ingest's CPU. ok is false for other types; a has a non-null value.
func bytesMinMax(a arrow.Array) (lo, hi int, ok bool) {
	var offs []int32
	var data []byte
	switch a := a.(type) {
	case *array.String:
		offs, data = a.ValueOffsets(), a.ValueBytes()
	case *array.Binary:
		offs, data = a.ValueOffsets(), a.ValueBytes()
	default:
		return 0, 0, false
	}
	base, nulls := offs[0], a.NullN() > 0
	lo, hi = -1, -1
	var mn, mx []byte
	for i := range a.Len() {
		if nulls && a.IsNull(i) {
			continue
		}
		v := data[offs[i]-base : offs[i+1]-base]
		switch {
		case lo < 0:
			lo, hi, mn, mx = i, i, v, v
		case bytes.Compare(v, mn) < 0:
			lo, mn = i, v
		case bytes.Compare(v, mx) > 0:
			hi, mx = i, v
		}
	}
	return lo, hi, true
}

// fastMinMax computes min and max of fixed-width numeric columns with typed
// loops (the generic path costs an indirect call per row).
func fastMinMax(a arrow.Array) (meta.Datum, meta.Datum, bool) {
	switch a := a.(type) {
	case *array.Int8:
		return intMinMax(a, a.Int8Values())
	case *array.Int16:
		return intMinMax(a, a.Int16Values())
	case *array.Int32:
		return intMinMax(a, a.Int32Values())
	case *array.Int64:
		return intMinMax(a, a.Int64Values())
	case *array.Date32:
		return intMinMax(a, a.Date32Values())
	case *array.Timestamp:
		return intMinMax(a, a.TimestampValues())
	case *array.Time64:
		return intMinMax(a, a.Time64Values())
	case *array.Float32:
		return floatMinMax(a, a.Float32Values())
	case *array.Float64:
		return floatMinMax(a, a.Float64Values())
	}
	return meta.Datum{}, meta.Datum{}, false
}

// floatMinMax gives up (ok false, so unknown bounds) on NaN, which sorts
// above every number in SQL engines but not in min/max.
func floatMinMax[T float32 | float64](a arrow.Array, v []T) (meta.Datum, meta.Datum, bool) {
	first := true
	var lo, hi T
	for i, x := range v {
		if a.NullN() > 0 && a.IsNull(i) {
			continue
		}
		if x != x {
			return meta.Datum{}, meta.Datum{}, false
		}
		if first {
			lo, hi, first = x, x, false
			continue
		}
		lo = min(lo, x)
		hi = max(hi, x)
	}
	if first {
		return meta.Datum{}, meta.Datum{}, false
	}
	return meta.FloatDatum(float64(lo)), meta.FloatDatum(float64(hi)), true
}

func intMinMax[T ~int8 | ~int16 | ~int32 | ~int64](a arrow.Array, v []T) (meta.Datum, meta.Datum, bool) {
	first := true
	var lo, hi T
	for i, x := range v {
		if a.NullN() > 0 && a.IsNull(i) {
			continue
		}
		if first {
			lo, hi, first = x, x, false
			continue
		}
		lo = min(lo, x)
		hi = max(hi, x)
	}
	if first {
		return meta.Datum{}, meta.Datum{}, false
	}
	return meta.IntDatum(int64(lo)), meta.IntDatum(int64(hi)), true
}

// paimonBuckets sets b[i] to Paimon's bucket of row i: the hash of its
// bucket key as a BinaryRow, modulo the bucket count.
func paimonBuckets(sch *tableSchema, b []int32, col func(string) arrow.Array) {
	cols := make([]arrow.Array, len(sch.opts.bucketKey))
	types := make([]paimonfmt.Type, len(cols))
	for k, name := range sch.opts.bucketKey {
		cols[k] = col(name)
		types[k], _ = meta.PaimonType(cols[k].DataType()) // key types are atomic
	}
	vals := make([]any, len(cols))
	for i := range b {
		for k, a := range cols {
			vals[k] = paimonKeyValue(a, i)
		}
		h, err := paimonfmt.RowHash(types, vals)
		if err != nil {
			// Key types and values are validated before they get here.
			panic("tablestore: bucket of a key: " + err.Error())
		}
		b[i] = int32(paimonfmt.BucketOf(h, sch.opts.buckets))
	}
}

// paimonKeyValue is row i of a as BinaryRow holds it.
func paimonKeyValue(a arrow.Array, i int) any {
	if d, ok := a.(*array.Decimal128); ok && d.IsValid(i) {
		return d.Value(i).BigInt()
	}
	v, _ := meta.DatumAt(a, i)
	return meta.PaimonValue(a.DataType(), v)
}
