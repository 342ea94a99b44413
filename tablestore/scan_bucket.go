package tablestore

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// maxBucketKeys bounds the combinations of bucket-key values a filter may
// fix for the scan to select buckets by them (beyond it, all are read).
const maxBucketKeys = 4096

// filterBuckets returns the buckets that can hold a row matching the
// scan's filter, when the filter fixes every bucket-key column with = or
// IN (a key lookup or a prefix of one that covers the bucket key); nil
// when every bucket can.
func (s *Scan) filterBuckets() map[int32]bool {
	sch := s.sch
	if sch.opts.buckets <= 1 || len(sch.opts.bucketKey) == 0 {
		return nil
	}
	fixed := map[string][]scalar.Scalar{}
	var collect func(p Predicate)
	collect = func(p Predicate) {
		switch p := p.(type) {
		case And:
			for _, q := range p {
				collect(q)
			}
		case Compare:
			if p.Op == EQ {
				fixed[p.Column] = narrow(fixed[p.Column], []scalar.Scalar{p.Value})
			}
		case In:
			fixed[p.Column] = narrow(fixed[p.Column], p.Values)
		}
	}
	collect(s.filter)
	combos := 1
	cols := make([][]scalar.Scalar, len(sch.opts.bucketKey))
	for i, k := range sch.opts.bucketKey {
		vals, ok := fixed[k]
		if !ok {
			return nil
		}
		want := sch.types[sch.fieldIndex(k)]
		for _, v := range vals {
			if !arrow.TypeEqual(v.DataType(), want) {
				return nil
			}
		}
		cols[i] = vals
		if combos *= len(vals); combos > maxBucketKeys {
			return nil
		}
	}
	out := map[int32]bool{}
	if combos == 0 {
		return out // the filter matches no row
	}
	// Rows of every combination, column by column.
	arrays := make(map[string]arrow.Array, len(cols))
	defer func() {
		for _, a := range arrays {
			a.Release()
		}
	}()
	mem := memory.NewGoAllocator()
	repeat := combos
	for i, vals := range cols {
		repeat /= len(vals)
		row := make([]scalar.Scalar, 0, combos)
		for len(row) < combos {
			for _, v := range vals {
				for range repeat {
					row = append(row, v)
				}
			}
		}
		a, err := arrayOf(mem, row)
		if err != nil {
			return nil
		}
		arrays[sch.opts.bucketKey[i]] = a
	}
	for _, b := range bucketsOf(sch, combos, func(name string) arrow.Array { return arrays[name] }) {
		out[b] = true
	}
	return out
}

// narrow intersects the values a column may take (nil: any) with vals;
// NULLs match nothing.
func narrow(have, vals []scalar.Scalar) []scalar.Scalar {
	var out []scalar.Scalar
	for _, v := range vals {
		if !v.IsValid() {
			continue
		}
		if have != nil && !slices.ContainsFunc(have, func(h scalar.Scalar) bool { return scalar.Equals(h, v) }) {
			continue
		}
		out = append(out, v)
	}
	if out == nil {
		out = []scalar.Scalar{}
	}
	return out
}

// arrayOf makes an array of scalars of one type.
func arrayOf(mem memory.Allocator, vals []scalar.Scalar) (arrow.Array, error) {
	parts := make([]arrow.Array, 0, len(vals))
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for _, v := range vals {
		p, err := scalar.MakeArrayFromScalar(v, 1, mem)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return array.Concatenate(parts, mem)
}
