package tablestore

import (
	"context"
	"math"

	"github.com/flightd/flightd/tablestore/meta"
)

// ColumnStats summarises one column over the live files of a snapshot, for
// the query planner's estimates. They come from the manifests only (no data
// file is read), so they are cheap and approximate: for key tables the files
// still hold not yet merged versions and deletes.
type ColumnStats struct {
	// NullCount counts NULLs; -1 when some file has no statistics for the
	// column (such as decimals).
	NullCount int64
	// Range tells which of the bounds below are set.
	Range RangeKind
	// MinNum and MaxNum bound the non-null values of numeric columns in
	// the column's physical unit (days for dates, the column's unit for
	// timestamps, 0/1 for booleans).
	MinNum, MaxNum float64
	// MinStr and MaxStr bound the non-null values of string and binary
	// columns.
	MinStr, MaxStr string
	// NDV estimates the number of distinct non-null values; 0 when
	// unknown. It is the row count for a single-column primary key and
	// min(max-min+1, non-null rows) for integer-like columns (dates,
	// timestamps, booleans too), and 1 for any column whose min equals its
	// max. String and binary columns take the distinct values their files
	// counted (files with at most 1024 of them; colAcc.ndvEstimate).
	// Other float columns have none, as the row count bounds their NDV
	// too loosely to estimate with.
	NDV float64
}

// RangeKind is the kind of bounds a ColumnStats carries.
type RangeKind int

// Range kinds.
const (
	NoRange      RangeKind = iota // bounds unknown (no statistics, or no non-null value)
	NumericRange                  // MinNum, MaxNum
	StringRange                   // MinStr, MaxStr
)

// Statistics are a snapshot's row count and per-column statistics.
type Statistics struct {
	SnapshotID int64
	// Rows counts stored rows (an upper bound of the live rows of a key
	// table).
	Rows int64
	// Columns is in schema order (Table.Schema of the handle).
	Columns []ColumnStats
}

// ColumnStats aggregates the manifest statistics of a snapshot (0 = latest)
// per column of the handle's schema. A table without a snapshot has zero
// rows and no ranges. Those of the last snapshot and schema asked for are
// kept and shared: callers must not change them.
func (t *Table) ColumnStats(ctx context.Context, snapshotID int64) (*Statistics, error) {
	sch := t.schema
	sn, err := t.resolve(snapshotID)
	if err != nil || sn == nil {
		return &Statistics{Columns: make([]ColumnStats, len(sch.Fields))}, err
	}
	t.st.mu.Lock()
	kept := t.st.stats
	if t.st.statsSnap != sn || t.st.statsSchema != sch {
		kept = nil
	}
	t.st.mu.Unlock()
	if kept != nil {
		return kept, nil
	}
	out, err := t.columnStats(ctx, sn)
	if err != nil {
		return nil, err
	}
	t.st.mu.Lock()
	t.st.statsSnap, t.st.statsSchema, t.st.stats = sn, sch, out
	t.st.mu.Unlock()
	return out, nil
}

func (t *Table) columnStats(ctx context.Context, sn *meta.Snapshot) (*Statistics, error) {
	sch := t.schema
	out := &Statistics{Columns: make([]ColumnStats, len(sch.Fields))}
	files, err := t.st.liveFiles(sn)
	if err != nil {
		return nil, err
	}
	out.SnapshotID = sn.ID
	acc := make([]colAcc, len(sch.Fields))
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out.Rows += f.File.RowCount
		for i, fld := range sch.Fields {
			acc[i].add(f, fld.ID)
		}
	}
	for i, fld := range sch.Fields {
		cs := acc[i].result()
		nonNull := float64(out.Rows)
		if cs.NullCount > 0 {
			nonNull -= float64(cs.NullCount)
		}
		switch {
		case len(sch.PrimaryKeys) == 1 && sch.PrimaryKeys[0] == fld.Name:
			cs.NDV = float64(out.Rows)
		case cs.Range == NumericRange && acc[i].integral:
			cs.NDV = min(nonNull, cs.MaxNum-cs.MinNum+1)
		case nonNull > 0 && (cs.Range == NumericRange && cs.MinNum == cs.MaxNum || cs.Range == StringRange && cs.MinStr == cs.MaxStr):
			cs.NDV = 1 // one value
		case acc[i].ndvEstimate() > 0 && cs.NullCount >= 0:
			cs.NDV = min(nonNull, acc[i].ndvEstimate())
		}
		out.Columns[i] = cs
	}
	return out, nil
}

// colAcc folds the statistics of one column over files.
type colAcc struct {
	bounded  bool // some file had bounds; cs holds them
	unknown  bool // a file without statistics for the column
	integral bool
	nulls    int64
	cs       ColumnStats
	// String distinct counts: ndv is the largest count of one file and
	// ndvSum their sum; noNDV: a file with values had none. Files whose
	// bounds differ hold different values (partitions, time ranges), so
	// the distinct bounds count too: the estimate is the largest of those
	// lower bounds, capped by the sum.
	ndv, ndvSum    int64
	noNDV          bool
	fileLo, fileHi map[string]bool
}

// ndvEstimate is the distinct-value estimate of a string column (0:
// unknown).
func (a *colAcc) ndvEstimate() float64 {
	if a.ndv == 0 || a.noNDV {
		return 0
	}
	return float64(min(a.ndvSum, max(a.ndv, int64(len(a.fileLo)), int64(len(a.fileHi)))))
}

func (a *colAcc) add(f *meta.ManifestEntry, id int) {
	var st *meta.ColStats
	for k := range f.File.ValueStats {
		if f.File.ValueStats[k].ID == id {
			st = &f.File.ValueStats[k]
			break
		}
	}
	if st == nil {
		// The column was added after the file was written: all NULL.
		a.nulls += f.File.RowCount
		return
	}
	a.nulls += st.NullCount
	if st.NDV > 0 {
		a.ndv, a.ndvSum = max(a.ndv, st.NDV), a.ndvSum+st.NDV
	} else if st.NullCount < f.File.RowCount {
		a.noNDV = true
	}
	if st.Min == nil || st.Max == nil {
		if st.NullCount < f.File.RowCount {
			a.unknown = true // values without bounds: not tracked
		}
		return
	}
	lo, hi := *st.Min, *st.Max
	kind, integral := NoRange, false
	var loN, hiN float64
	var loS, hiS string
	switch {
	case lo.I != nil && hi.I != nil:
		kind, integral, loN, hiN = NumericRange, true, float64(*lo.I), float64(*hi.I)
	case (lo.I != nil || lo.F != nil) && (hi.I != nil || hi.F != nil):
		kind, loN, hiN = NumericRange, datumFloat(lo), datumFloat(hi)
	default:
		lb, ok1 := lo.Bytes()
		hb, ok2 := hi.Bytes()
		if !ok1 || !ok2 {
			a.unknown = true
			return
		}
		kind, loS, hiS = StringRange, string(lb), string(hb)
		if !a.noNDV { // else ndvEstimate ignores them
			if a.fileLo == nil {
				a.fileLo, a.fileHi = map[string]bool{}, map[string]bool{}
			}
			a.fileLo[loS], a.fileHi[hiS] = true, true
		}
	}
	// Infinite bounds (legal DOUBLE values) would make range estimates
	// meaningless; scans still skip by them (predicate.go).
	if math.IsNaN(loN) || math.IsNaN(hiN) || math.IsInf(loN, 0) || math.IsInf(hiN, 0) {
		a.unknown = true
		return
	}
	switch {
	case !a.bounded:
		a.bounded, a.integral = true, integral
		a.cs = ColumnStats{Range: kind, MinNum: loN, MaxNum: hiN, MinStr: loS, MaxStr: hiS}
	case a.cs.Range != kind:
		a.unknown = true
	case kind == NumericRange:
		a.integral = a.integral && integral
		a.cs.MinNum, a.cs.MaxNum = min(a.cs.MinNum, loN), max(a.cs.MaxNum, hiN)
	default:
		a.cs.MinStr, a.cs.MaxStr = min(a.cs.MinStr, loS), max(a.cs.MaxStr, hiS)
	}
}

func (a *colAcc) result() ColumnStats {
	if a.unknown {
		return ColumnStats{NullCount: -1}
	}
	cs := a.cs // zero until bounded
	cs.NullCount = a.nulls
	return cs
}

func datumFloat(d meta.Datum) float64 {
	if d.I != nil {
		return float64(*d.I)
	}
	return float64(*d.F)
}
