package arrowstr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// NotUTF8 is the error of CheckUTF8: the value at Index of a string array
// (the one checked, counted from its slice's start, or one nested in it)
// is not UTF-8.
type NotUTF8 struct {
	Index  int
	Value  []byte
	Nested bool // in a child of the array checked, whose index Index is
}

func (e *NotUTF8) Error() string {
	return fmt.Sprintf("string at index %d is not valid UTF-8: %q", e.Index, e.Value)
}

// CheckUTF8 fails (*NotUTF8) on the first string value in a, nested ones
// included, that is not UTF-8: a STRING holds UTF-8 only, and arrow-go's
// readers (CSV, Parquet, IPC) pass on any bytes they are given.
func CheckUTF8(a arrow.Array) error {
	err := checkUTF8(a)
	if e, ok := err.(*NotUTF8); ok {
		switch a.DataType().ID() {
		case arrow.STRING, arrow.LARGE_STRING:
		default:
			e.Nested = true
		}
	}
	return err
}

func checkUTF8(a arrow.Array) error {
	if a.Len() == 0 {
		return nil // its offsets buffer may be absent
	}
	switch a := a.(type) {
	case *array.String:
		return checkUTF8Span(a.ValueOffsets(), a.ValueBytes())
	case *array.LargeString:
		return checkUTF8Span(a.ValueOffsets(), a.ValueBytes())
	case *array.Struct:
		for i := range a.NumField() {
			if err := checkUTF8(a.Field(i)); err != nil {
				return err
			}
		}
	case *array.Map:
		if err := checkUTF8(a.Keys()); err != nil {
			return err
		}
		return checkUTF8(a.Items())
	case array.ListLike:
		return checkUTF8(a.ListValues())
	}
	return nil
}

// checkUTF8Span checks the bytes the values span once: when those are
// ASCII, every value is valid; only others are checked value by value
// (utf8.ValidString per value was most of validating a bulk ingest of
// short strings).
func checkUTF8Span[O int32 | int64](offsets []O, values []byte) error {
	if len(offsets) < 2 || isASCII(values) {
		return nil
	}
	for i := 1; i < len(offsets); i++ {
		if v := values[offsets[i-1]-offsets[0] : offsets[i]-offsets[0]]; !utf8.Valid(v) {
			return &NotUTF8{Index: i - 1, Value: bytes.Clone(v)} // outlives the array
		}
	}
	return nil
}

// isASCII reports whether no byte of b has its high bit set, a word at a
// time.
func isASCII(b []byte) bool {
	const high = 0x8080808080808080
	var acc uint64
	for len(b) >= 8 {
		acc |= binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	for _, c := range b {
		acc |= uint64(c)
	}
	return acc&high == 0
}
