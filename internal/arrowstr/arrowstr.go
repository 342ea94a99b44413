// Package arrowstr views the values of Arrow string and binary arrays as Go
// strings in place, for the packages of any layer (it imports nothing of
// flightd).
package arrowstr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Viewer returns a function giving value i of a string or binary array as
// a string that shares the array's memory (valid while the array is; not
// for NULL slots' contents), or ok false for other types. Binary's ValueStr
// would base64-encode, and allocate, each value.
func Viewer(a arrow.Array) (_ func(int) string, ok bool) {
	switch a := a.(type) {
	case *array.String:
		return a.Value, true
	case *array.LargeString:
		return a.Value, true
	case *array.Binary:
		return a.ValueString, true
	case *array.LargeBinary:
		return a.ValueString, true
	}
	return nil, false
}
