package tablestore

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/flightd/flightd/tablestore/meta"
)

// rowRange is rows [start, end) of a row group.
type rowRange struct{ start, end int64 }

// pageColumn is one filter column's page index in a row group: the first
// row of each page and the page's statistics.
type pageColumn struct {
	first []int64
	stats func(page int, rows int64) colRange
}

// pageRanges returns the rows of row group rg that the scan's filter may
// match by the page indexes (min, max and null counts per page) of its
// columns that allowed admits; ok is false when every row is to be read
// (no filter, no page index, or no page excluded). Every row of a page
// that may match is kept, so the scan still returns every matching row.
func (s *Scan) pageRanges(df *dataFile, rg int, allowed func(string) bool) ([]rowRange, bool) {
	if s.filter == nil {
		return nil, false
	}
	names, _ := predColumns(s.filter, nil)
	cols := map[string]pageColumn{}
	bounds := []int64{0}
	for _, name := range names {
		if _, done := cols[name]; done || !allowed(name) {
			continue
		}
		pc, ok := s.pageColumn(df, rg, name)
		if !ok {
			continue
		}
		cols[name] = pc
		bounds = append(bounds, pc.first...)
	}
	if len(cols) == 0 {
		return nil, false
	}
	rows := df.pr.MetaData().RowGroup(rg).NumRows()
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	var out []rowRange
	for i, start := range bounds {
		end := rows
		if i+1 < len(bounds) {
			end = bounds[i+1]
		}
		if start >= end {
			continue
		}
		stats := func(col string) (colRange, bool, func(scalar.Scalar) (meta.Datum, bool)) {
			pc, ok := cols[col]
			if !ok {
				return colRange{}, false, nil
			}
			p, _ := slices.BinarySearch(pc.first, start+1)
			return pc.stats(p-1, end-start), true, s.literal(s.sch.fieldIndex(col))
		}
		if !mayMatch(s.filter, stats) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].end == start {
			out[n-1].end = end
		} else {
			out = append(out, rowRange{start, end})
		}
	}
	if len(out) == 1 && out[0] == (rowRange{0, rows}) {
		return nil, false
	}
	s.pagesSkipped.Add(rows - rangeRows(out))
	return out, true
}

func rangeRows(rs []rowRange) int64 {
	var n int64
	for _, r := range rs {
		n += r.end - r.start
	}
	return n
}

// pageColumn reads column name's page index in a row group; ok is false
// when the file has none for it or its values give no bounds.
func (s *Scan) pageColumn(df *dataFile, rg int, name string) (pageColumn, bool) {
	i := s.sch.fieldIndex(name)
	c, ok := df.cols[s.sch.Fields[i].ID]
	if !ok || len(df.leaves[c]) != 1 {
		return pageColumn{}, false
	}
	leaf := df.leaves[c][0]
	ci, oi := df.pageIndex(rg, leaf)
	if ci == nil || oi == nil {
		return pageColumn{}, false
	}
	locs := oi.GetPageLocations()
	nulls := ci.GetNullPages()
	if len(locs) == 0 || len(nulls) != len(locs) {
		return pageColumn{}, false
	}
	pc := pageColumn{first: make([]int64, len(locs))}
	for p, l := range locs {
		pc.first[p] = l.FirstRowIndex
	}
	if pc.first[0] != 0 || !slices.IsSorted(pc.first) {
		return pageColumn{}, false
	}
	var minMax func(p int) (*meta.Datum, *meta.Datum)
	if statsComparable(df.types[c], s.sch.types[i]) {
		minMax = pageBounds(ci, df.bounded[s.sch.Fields[i].ID])
	}
	counts := ci.GetNullCounts()
	hasCounts := ci.IsSetNullCounts() && len(counts) == len(locs)
	pc.stats = func(p int, rows int64) colRange {
		r := colRange{nullCount: -1, rowCount: rows}
		if nulls[p] {
			r.nullCount = rows
			return r
		}
		if hasCounts && counts[p] == 0 {
			r.nullCount = 0
		}
		if minMax != nil {
			r.min, r.max = minMax(p)
		}
		return r
	}
	return pc, true
}

// pageBounds returns the min and max of page p as datums, as
// parquetMinMax does for row groups; nil when the type gives none.
func pageBounds(ci metadata.ColumnIndex, bounded bool) func(p int) (*meta.Datum, *meta.Datum) {
	pair := func(lo, hi meta.Datum) (*meta.Datum, *meta.Datum) { return &lo, &hi }
	switch ci := ci.(type) {
	case *metadata.TypedColumnIndex[int32]:
		return func(p int) (*meta.Datum, *meta.Datum) {
			return pair(meta.IntDatum(int64(ci.MinValues()[p])), meta.IntDatum(int64(ci.MaxValues()[p])))
		}
	case *metadata.TypedColumnIndex[int64]:
		return func(p int) (*meta.Datum, *meta.Datum) {
			return pair(meta.IntDatum(ci.MinValues()[p]), meta.IntDatum(ci.MaxValues()[p]))
		}
	case *metadata.TypedColumnIndex[float32]:
		if !bounded { // page statistics skip NaN
			return nil
		}
		return func(p int) (*meta.Datum, *meta.Datum) {
			return pair(meta.FloatDatum(float64(ci.MinValues()[p])), meta.FloatDatum(float64(ci.MaxValues()[p])))
		}
	case *metadata.TypedColumnIndex[float64]:
		if !bounded {
			return nil
		}
		return func(p int) (*meta.Datum, *meta.Datum) {
			return pair(meta.FloatDatum(ci.MinValues()[p]), meta.FloatDatum(ci.MaxValues()[p]))
		}
	case *metadata.TypedColumnIndex[parquet.ByteArray]:
		return func(p int) (*meta.Datum, *meta.Datum) {
			return pair(meta.BinDatum(ci.MinValues()[p]), meta.BinDatum(ci.MaxValues()[p]))
		}
	}
	return nil
}

// columnPages is a leaf column chunk's page index: its column index (per
// page statistics) and offset index (page locations); nil where the file
// has none.
type columnPages struct {
	ci metadata.ColumnIndex
	oi metadata.OffsetIndex
}

type chunkID struct{ rg, leaf int }

// pageIndex returns the page index of leaf column chunk rg, read and
// parsed once per file: it is kept with the file's layout beside its
// cached footer, where every scan with a filter read and decoded it again
// (3% of flightd's CPU over the small TPC-DS queries, warm). A read that
// failed is not kept: the next scan tries again.
func (df *dataFile) pageIndex(rg, leaf int) (metadata.ColumnIndex, metadata.OffsetIndex) {
	id := chunkID{rg, leaf}
	if v, ok := df.layout.pages.Load(id); ok {
		p := v.(*columnPages)
		return p.ci, p.oi
	}
	pir := df.pr.GetPageIndexReader()
	if pir == nil {
		return nil, nil
	}
	rgIdx, err := pir.RowGroup(rg)
	if err != nil {
		return nil, nil
	}
	p := &columnPages{}
	if rgIdx != nil {
		if p.ci, err = rgIdx.GetColumnIndex(leaf); err != nil {
			return nil, nil
		}
		if p.oi, err = rgIdx.GetOffsetIndex(leaf); err != nil {
			return nil, nil
		}
	}
	df.layout.pages.Store(id, p)
	return p.ci, p.oi
}
