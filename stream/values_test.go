package stream

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestNestedValues: ARRAY, MAP and ROW values nested in each other read
// into state, encode (as a checkpoint or spill does), decode and write
// back as the same Arrow values; ARRAYs order element by element, a
// prefix first.
func TestNestedValues(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	row := arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true})
	for _, c := range []struct {
		dt   arrow.DataType
		json string
	}{
		{arrow.ListOf(row), `[[{"a": 1, "b": ["x", null, ""]}, null, {"a": null, "b": []}], null, [], [{"a": 2, "b": null}]]`},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(arrow.PrimitiveTypes.Int32)), `[[{"key": "k", "value": [1, null]}, {"key": "\u0000", "value": null}], null, [], [{"key": "z", "value": []}]]`},
		{arrow.ListOf(arrow.ListOf(arrow.BinaryTypes.String)), `[[["a\u0000b"], [], null], [[""]], null]`},
	} {
		t.Run(c.dt.String(), func(t *testing.T) {
			in, _, err := array.FromJSON(mem, c.dt, strings.NewReader(c.json))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Release()
			get, err := getterFor(c.dt)
			if err != nil {
				t.Fatal(err)
			}
			app, err := appenderFor(c.dt)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := orderedDecoderFor(c.dt)
			if err != nil {
				t.Fatal(err)
			}
			b := array.NewBuilder(mem, c.dt)
			defer b.Release()
			for i := range in.Len() {
				v := get(in, i)
				back, rest, err := decodeRow(appendRow(nil, []any{v}), []orderedDecoder{dec})
				if err != nil || len(rest) != 0 || back[0] != v {
					t.Fatalf("row %d: %v decoded as %v (%d bytes left, %v)", i, v, back[0], len(rest), err)
				}
				app(b, back[0])
			}
			out := b.NewArray()
			defer out.Release()
			if !array.Equal(in, out) {
				t.Fatalf("written back:\n%v\nwant\n%v", out, in)
			}
		})
	}

	in, _, err := array.FromJSON(mem, arrow.ListOf(arrow.PrimitiveTypes.Int64), strings.NewReader(`[[], [-1], [1, null], [1], [1, 2], [2]]`))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	get, err := getterFor(in.DataType())
	if err != nil {
		t.Fatal(err)
	}
	// NULL elements first, as in ORDER BY's default ascending order.
	order := []int{0, 1, 3, 2, 4, 5}
	for k := 1; k < len(order); k++ {
		if a, b := get(in, order[k-1]), get(in, order[k]); compareValues(a, b) >= 0 {
			t.Fatalf("%v does not order before %v", in.(*array.List).ValueStr(order[k-1]), in.(*array.List).ValueStr(order[k]))
		}
	}
}

// TestEncoderIsAppendOrdered checks that each type's encoder writes what
// appendOrdered writes of the value its getter reads, in every direction
// and NULL placement, over edge values and random ones.
func TestEncoderIsAppendOrdered(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for _, c := range edgeValues(rng) {
		in, _, err := array.FromJSON(mem, c.dt, strings.NewReader(c.vals))
		if err != nil {
			t.Fatalf("%s: %v", c.dt, err)
		}
		get, err := getterFor(c.dt)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := encoderFor(c.dt)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := orderedDecoderFor(c.dt)
		if err != nil {
			t.Fatal(err)
		}
		for i := range in.Len() {
			for _, desc := range []bool{false, true} {
				for _, nullsFirst := range []bool{false, true} {
					want := appendOrdered([]byte("x"), get(in, i), desc, nullsFirst)
					got := enc([]byte("x"), in, i, desc, nullsFirst)
					if !bytes.Equal(got, want) {
						t.Errorf("%s row %d desc %v nulls first %v: %x, appendOrdered %x", c.dt, i, desc, nullsFirst, got, want)
					}
					// And it decodes back whole.
					v, rest, err := dec(append(got[1:], "tail"...), desc)
					if err != nil || string(rest) != "tail" || !reflect.DeepEqual(v, get(in, i)) {
						t.Errorf("%s row %d desc %v: decoded %#v, rest %q, %v; want %#v", c.dt, i, desc, v, rest, err, get(in, i))
					}
				}
			}
		}
		in.Release()
	}
}

// TestRowKeepsNegativeZero checks that a row's values read back exactly,
// -0 included, from appendRow and from a rowEncoder, while a key folds -0
// into 0.
func TestRowKeepsNegativeZero(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fields := []arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, {Name: "g", Type: arrow.PrimitiveTypes.Float32, Nullable: true}}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	negZero := math.Copysign(0, -1)
	b.Field(0).(*array.Float64Builder).AppendValues([]float64{negZero, 0, -1.5}, nil)
	b.Field(1).(*array.Float32Builder).AppendValues([]float32{float32(negZero), 2, 0}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	enc, err := rowEncoderFor(fields)
	if err != nil {
		t.Fatal(err)
	}
	get, err := rowGetterFor(fields)
	if err != nil {
		t.Fatal(err)
	}
	dec := make([]orderedDecoder, len(fields))
	for i, f := range fields {
		if dec[i], err = orderedDecoderFor(f.Type); err != nil {
			t.Fatal(err)
		}
	}
	var prev []byte
	for i := range int(rec.NumRows()) {
		want := get.row(rec.Columns(), i)
		got := enc.appendRow(nil, rec.Columns(), i)
		if !bytes.Equal(got, appendRow(nil, want)) {
			t.Fatalf("row %d: encoder %x, appendRow %x", i, got, appendRow(nil, want))
		}
		vals, rest, err := decodeRow(got, dec)
		if err != nil || len(rest) > 0 {
			t.Fatalf("row %d: %v, %d bytes left", i, err, len(rest))
		}
		for c := range vals {
			if x, y := vals[c].(float64), want[c].(float64); x != y || math.Signbit(x) != math.Signbit(y) {
				t.Errorf("row %d column %d: read back %v, was %v", i, c, x, y)
			}
		}
		if i > 0 && bytes.Equal(got, prev) {
			t.Errorf("rows %d and %d encode the same", i-1, i)
		}
		prev = got
	}
	if !bytes.Equal(appendOrdered(nil, negZero, false, true), appendOrdered(nil, 0.0, false, true)) {
		t.Error("a key of -0 differs from 0")
	}
}

// valueCase is an array of a type, as JSON.
type valueCase struct {
	dt   arrow.DataType
	vals string
}

// edgeValues returns arrays of the types encoders have their own code
// for: edge values and random ones (strings with 0x00 and 0x01 in them).
func edgeValues(rng *rand.Rand) []valueCase {
	ints := []string{"null", "0", "1", "-1"}
	strs := []string{"null", `""`, `"\u0000"`, `"a\u0000b"`, `"\u00ff"`}
	for range 50 {
		ints = append(ints, strconv.FormatInt(rng.Int64N(1<<31)-1<<30, 10))
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = "\x00\x01az"[rng.IntN(4)]
		}
		q, _ := json.Marshal(string(b))
		strs = append(strs, string(q))
	}
	list := func(vals []string) string { return "[" + strings.Join(vals, ",") + "]" }
	return []valueCase{
		{arrow.PrimitiveTypes.Int32, list(append(ints, "2147483647", "-2147483648"))},
		{arrow.PrimitiveTypes.Int64, list(append(ints, "9223372036854775807", "-9223372036854775808"))},
		{arrow.FixedWidthTypes.Date32, list(ints)},
		{&arrow.TimestampType{Unit: arrow.Millisecond}, list(ints)},
		{arrow.BinaryTypes.String, list(strs)},
		{arrow.BinaryTypes.LargeString, list(strs)},
		{arrow.BinaryTypes.Binary, `[null, "", "AAE=", "YQBi"]`},
		{arrow.PrimitiveTypes.Float64, `[null, 0, -0.5, 1e300, -1e-300]`},
		{arrow.ListOf(arrow.BinaryTypes.String), `[null, [], ["a", null], ["\u0000"]]`},
	}
}

// TestCopyAndUnpack checks that a value copied from a batch by its type's
// copier, or encoded by a rowEncoder and unpacked, lands in a builder as
// the value its getter reads (-0 included), that an unpacker only checks
// a value when given no builder, and that a truncated encoding is an
// error, not a value.
func TestCopyAndUnpack(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	cases := append(edgeValues(rand.New(rand.NewPCG(uint64(seed), 0))),
		valueCase{arrow.PrimitiveTypes.Float64, `[-0, 0, null, 2.5]`},
		valueCase{arrow.PrimitiveTypes.Float32, `[-0, 1.5, null]`},
		valueCase{arrow.FixedWidthTypes.Boolean, `[true, null, false]`},
		valueCase{arrow.PrimitiveTypes.Int16, `[-32768, null, 7]`},
		valueCase{&arrow.Decimal128Type{Precision: 10, Scale: 2}, `["-1.25", null, "99999999.99"]`},
		valueCase{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true}), `[{"a": "x\u0000"}, null, {"a": null}]`},
	)
	for _, c := range cases {
		in, _, err := array.FromJSON(mem, c.dt, strings.NewReader(c.vals))
		if err != nil {
			t.Fatalf("%s: %v", c.dt, err)
		}
		fields := []arrow.Field{{Name: "v", Type: c.dt, Nullable: true}}
		enc, err := rowEncoderFor(fields)
		if err != nil {
			t.Fatal(err)
		}
		un, err := rowUnpackerFor(fields)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := copierFor(c.dt)
		if err != nil {
			t.Fatal(err)
		}
		get, err := getterFor(c.dt)
		if err != nil {
			t.Fatal(err)
		}
		copied, unpacked := array.NewBuilder(mem, c.dt), array.NewBuilder(mem, c.dt)
		cols := []arrow.Array{in}
		var all []byte
		for i := range in.Len() {
			cp(copied, in, i)
			e := enc.appendRow(nil, cols, i)
			if n, err := un.rowLen(append(e, "tail"...)); err != nil || n != len(e) {
				t.Errorf("%s row %d: rowLen %d, %v; want %d", c.dt, i, n, err, len(e))
			}
			if _, err := un.rowLen(e[:len(e)-1]); err == nil {
				t.Errorf("%s row %d: %x, truncated, reads as a value", c.dt, i, e[:len(e)-1])
			}
			all = append(all, e...)
		}
		for rest := all; len(rest) > 0; {
			n, err := un.rowLen(rest)
			if err != nil {
				t.Fatalf("%s: %v", c.dt, err)
			}
			if err := un.appendRow([]array.Builder{unpacked}, rest[:n], nil); err != nil {
				t.Fatalf("%s: %v", c.dt, err)
			}
			rest = rest[n:]
		}
		for name, b := range map[string]array.Builder{"copied": copied, "unpacked": unpacked} {
			out := b.NewArray()
			if out.Len() != in.Len() {
				t.Fatalf("%s %s: %d values, want %d", c.dt, name, out.Len(), in.Len())
			}
			for i := range in.Len() {
				if got, want := appendValue(nil, get(out, i)), appendValue(nil, get(in, i)); !bytes.Equal(got, want) {
					t.Errorf("%s %s row %d: %v, want %v", c.dt, name, i, get(out, i), get(in, i))
				}
			}
			out.Release()
			b.Release()
		}
		in.Release()
	}
}
