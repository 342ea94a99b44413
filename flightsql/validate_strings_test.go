package flightsql

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rawStrings builds a string column (32- or 64-bit offsets) from raw
// buffers, as a client's IPC message may carry them: the offsets, values
// and validity are taken as given, nulls is the null count claimed.
func rawStrings(large bool, offsets []int64, values string, valid []bool, nulls, offset, length int) arrow.Array {
	var off []byte
	for _, o := range offsets {
		if large {
			off = binary.LittleEndian.AppendUint64(off, uint64(o))
		} else {
			off = binary.LittleEndian.AppendUint32(off, uint32(int32(o)))
		}
	}
	var bitmap *memory.Buffer
	if valid != nil {
		bits := make([]byte, (len(valid)+7)/8)
		for i, v := range valid {
			if v {
				bits[i/8] |= 1 << (i % 8)
			}
		}
		bitmap = memory.NewBufferBytes(bits)
	}
	typ := arrow.DataType(arrow.BinaryTypes.String)
	if large {
		typ = arrow.BinaryTypes.LargeString
	}
	d := array.NewData(typ, length, []*memory.Buffer{bitmap, memory.NewBufferBytes(off), memory.NewBufferBytes([]byte(values))}, nil, nulls, offset)
	defer d.Release()
	return array.MakeFromData(d)
}

// TestValidateStrings checks that DoPut's validation of a string column,
// which checks UTF-8 once over the values' bytes when they are ASCII,
// refuses and accepts exactly what arrow-go's ValidateFull does, and says
// which value is not UTF-8.
func TestValidateStrings(t *testing.T) {
	type col struct {
		name          string
		offsets       []int64
		values        string
		valid         []bool
		nulls, offset int
		bad           string
	}
	long := strings.Repeat("abcdefgh", 5)
	cols := []col{
		{name: "ascii", offsets: []int64{0, 5, 9, 9, 49}, values: "alphabeta" + long},
		{name: "multi-byte", offsets: []int64{0, 6, 13, 14}, values: "héllo!日本x"},
		{name: "invalid byte", offsets: []int64{0, 5, 9, 49}, values: "alpha" + "b\xffta" + long, bad: "index 1"},
		{name: "invalid after a long ascii run", offsets: []int64{0, 40, 41}, values: long + "\xc3", bad: "index 1"},
		// Valid UTF-8 as a whole, not value by value: é split over two values.
		{name: "split sequence", offsets: []int64{0, 2, 4}, values: "a\xc3\xa9b", bad: "index 0"},
		{name: "invalid under a null", offsets: []int64{0, 5, 9}, values: "alpha\xffeta", valid: []bool{true, false}, nulls: 1, bad: "index 1"},
		{name: "invalid outside the slice", offsets: []int64{0, 5, 9, 14}, values: "\xfflphabetagamma", offset: 1},
		{name: "invalid inside the slice", offsets: []int64{0, 5, 9, 14}, values: "alphabetagam\xffa", offset: 1, bad: "index 1"}, // counted from the slice's start, as a.Value(i)
		{name: "offsets decrease", offsets: []int64{0, 5, 3, 9}, values: "alphabeta", bad: "monotonic"},
		{name: "negative first offset", offsets: []int64{-1, 5, 9}, values: "alphabeta", bad: "negative"},
		// (A last offset past the values, or too few offsets, arrow-go's
		// reader refuses when it makes the array.)
		{name: "offset past the values", offsets: []int64{0, 1000, 9}, values: "alphabeta", bad: "monotonic"},
		{name: "null count wrong", offsets: []int64{0, 5, 9}, values: "alphabeta", valid: []bool{true, true}, nulls: 1, bad: "null count"},
		{name: "null count negative", offsets: []int64{0, 5, 9}, values: "alphabeta", nulls: -5, bad: "null count"},
		{name: "empty", offsets: nil, values: ""},
	}
	for _, large := range []bool{false, true} {
		for _, c := range cols {
			t.Run(fmt.Sprintf("%s/large=%v", c.name, large), func(t *testing.T) {
				length := max(len(c.offsets)-1-c.offset, 0)
				a := rawStrings(large, c.offsets, c.values, c.valid, c.nulls, c.offset, length)
				defer a.Release()
				got := validateArray(a)
				want := func() (err error) {
					defer func() {
						if r := recover(); r != nil {
							err = fmt.Errorf("%v", r)
						}
					}()
					return array.ValidateFull(a)
				}()
				if (got == nil) != (want == nil) {
					t.Fatalf("validateArray: %v, ValidateFull: %v", got, want)
				}
				if c.bad == "" && got != nil {
					t.Fatalf("refused: %v", got)
				}
				if c.bad != "" && (got == nil || !strings.Contains(got.Error(), c.bad)) {
					t.Fatalf("got %v, want an error with %q", got, c.bad)
				}
			})
		}
	}
}

// BenchmarkValidateStrings validates a column of 9,200 ASCII strings of
// 80-120 bytes, a bid's URLs in a Nexmark bulk ingest.
func BenchmarkValidateStrings(b *testing.B) {
	bld := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 9200 {
		bld.Append(fmt.Sprintf("https://www.nexmark.com/%s/item.htm?query=1&channel_id=%d", strings.Repeat("x", 40+i%40), i))
	}
	a := bld.NewArray()
	defer a.Release()
	b.SetBytes(int64(len(a.(*array.String).ValueBytes())))
	for b.Loop() {
		if err := validateArray(a); err != nil {
			b.Fatal(err)
		}
	}
}
