package merge

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Merge engines (Paimon's merge-engine values).
const (
	Deduplicate   = "deduplicate"    // keeps the newest version
	PartialUpdate = "partial-update" // non-null fields overwrite
	Aggregation   = "aggregation"    // each column folds its versions
	FirstRow      = "first-row"      // keeps the oldest version
)

// Options configure a key table's merge engine. tablestore parses them
// from the table options (merge-engine, ignore-delete,
// *.remove-record-on-delete, fields.*) and checks them against the schema.
type Options struct {
	Engine       string // Deduplicate, PartialUpdate, Aggregation or FirstRow
	IgnoreDelete bool   // -U/-D input is dropped before the merge
	// RemoveOnDelete: a -D removes the whole row (partial-update and
	// aggregation).
	RemoveOnDelete bool
	Groups         []SequenceGroup // partial-update only
	// Per column (by name): aggregate function, ignore-retract, listagg
	// delimiter. DefaultAgg applies to columns without a function.
	AggFunc       map[string]string
	DefaultAgg    string
	IgnoreRetract map[string]bool
	Delimiter     map[string]string
}

// SequenceGroup is a partial-update sequence group: Fields update
// together, and only from rows whose Seq columns are at least the stored
// ones.
type SequenceGroup struct {
	Seq    []string
	Fields []string // includes Seq
}

// Function returns the aggregate function of a non-key column.
func (o *Options) Function(col string) string {
	if fn, ok := o.AggFunc[col]; ok {
		return fn
	}
	if o.DefaultAgg != "" {
		return o.DefaultAgg
	}
	return "last_non_null_value" // Paimon's default
}

// BuildsRows reports whether the engine builds the merged row
// (partial-update, aggregation: Merge) rather than picking a version
// (Pick).
func (o *Options) BuildsRows() bool {
	return o.Engine == PartialUpdate || o.Engine == Aggregation
}

// Pick returns which of n versions of a key (oldest first) survives when
// the engine picks a whole row (deduplicate: the newest, first-row: the
// oldest). Engines that build rows use a rowMerger instead.
func (o *Options) Pick(n int) int {
	if o.Engine == FirstRow {
		return 0
	}
	return n - 1
}

// Aggregate functions and whether they can retract (-U/-D input); product
// retracts on floating-point columns only (integer division would make
// partial merges disagree). Paimon lets last_non_null_value retract to
// NULL, but a NULL partial aggregate means "no value" when merged again,
// so the retracted value would come back from older files: refused here.
var functions = map[string]bool{
	"sum": true, "product": true, "count": true, "last_value": true, "last_non_null_value": false,
	"max": false, "min": false, "first_value": false, "first_non_null_value": false,
	"listagg": false, "bool_and": false, "bool_or": false,
}

// IsFunction reports whether fn is an aggregate function.
func IsFunction(fn string) bool {
	_, ok := functions[fn]
	return ok
}

// CanRetract reports whether aggregate function fn on a column of type dt
// can take -U/-D rows.
func CanRetract(fn string, dt arrow.DataType) bool {
	return functions[fn] && (fn != "product" || !isIntType(dt))
}

// SequenceType reports whether a column of type dt can be the sequence
// column of a sequence group.
func SequenceType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DECIMAL128, arrow.DATE32, arrow.TIMESTAMP:
		return true
	}
	return false
}

func isIntType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return true
	}
	return false
}

// CheckFunction says why aggregate function fn cannot fold a column of
// type dt, or returns nil.
func CheckFunction(fn string, dt arrow.DataType) error {
	numeric := isIntType(dt) || dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64
	switch fn {
	case "sum", "product":
		if !numeric {
			return fmt.Errorf("%s needs an integer or floating-point column, not %s", fn, dt)
		}
	case "count":
		if !isIntType(dt) {
			return fmt.Errorf("count needs an integer column, not %s", dt)
		}
	case "listagg":
		if dt.ID() != arrow.STRING {
			return fmt.Errorf("listagg needs a string column, not %s", dt)
		}
	case "bool_and", "bool_or":
		if dt.ID() != arrow.BOOL {
			return fmt.Errorf("%s needs a boolean column, not %s", fn, dt)
		}
	case "max", "min":
		switch dt.ID() {
		case arrow.LIST, arrow.MAP, arrow.STRUCT:
			return fmt.Errorf("%s needs an ordered column, not %s", fn, dt)
		}
	}
	return nil
}
