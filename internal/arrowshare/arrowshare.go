// Package arrowshare handles Arrow arrays that share memory: with other
// goroutines, and with other slices of one array. It is for the packages of
// any layer (it imports nothing of flightd).
//
// arrow-go computes some parts of an array on first use and stores them
// without synchronization: a slice's null count, and a dictionary array's
// dictionary. Two goroutines reading one shared array race on those (CI's
// race pass caught two change streams doing so). Settle does that work
// before an array is published.
//
// A slice shares its array's buffers; Bytes counts only what its own rows
// use, for memory budgets and message sizes.
package arrowshare

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Settle computes what reading a, its fields, values and dictionary would
// compute lazily, so that reading them afterwards writes nothing.
func Settle(a arrow.Array) {
	a.NullN()
	switch a := a.(type) {
	case interface {
		NumField() int
		Field(int) arrow.Array
	}: // struct and union: a slice's fields are slices of their own
		for i := range a.NumField() {
			Settle(a.Field(i))
		}
	case array.ListLike:
		Settle(a.ListValues())
	case *array.Dictionary:
		Settle(a.Dictionary())
	}
}

// SettleBatch settles every column of b.
func SettleBatch(b arrow.RecordBatch) {
	for _, c := range b.Columns() {
		Settle(c)
	}
}
