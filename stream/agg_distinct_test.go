package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// count(DISTINCT) counts as a model does over random inserts and
// retractions of integer, string and float values (one type per
// accumulator, as an argument has), accounts in add what size reports,
// and reads back from its encoding what it held.
func TestDistinctCountModel(t *testing.T) {
	rng := seeded(t)
	kinds := []struct {
		kept arrow.DataType // the type the encoding is decoded as
		gen  func(int) any
	}{
		{arrow.PrimitiveTypes.Int64, func(i int) any { return int64(i - 4) }},
		{arrow.BinaryTypes.String, func(i int) any { return fmt.Sprintf("s%d", i) }},
		{arrow.PrimitiveTypes.Uint64, func(i int) any { return float64(i) / 2 }}, // kept as its bits
	}
	for _, k := range kinds {
		d := &distinctCount{}
		model := map[string]int64{}
		var accounted int64
		for range 2000 {
			v := k.gen(rng.Intn(12))
			key := fmt.Sprint(v)
			sign := int8(1)
			if model[key] > 0 && rng.Intn(3) == 0 {
				sign = -1
			}
			accounted += d.add(v, sign)
			if model[key] += int64(sign); model[key] == 0 {
				delete(model, key)
			}
			got, _ := d.result()
			if got != int64(len(model)) {
				t.Fatalf("%s: count %v, model %d", k.kept, got, len(model))
			}
			if d.count(v) != model[key] {
				t.Fatalf("%s: %v counted %d, model %d", k.kept, v, d.count(v), model[key])
			}
		}
		if accounted != d.size() {
			t.Fatalf("%s: add accounted %d bytes, size says %d", k.kept, accounted, d.size())
		}
		dec, err := orderedDecoderFor(k.kept)
		if err != nil {
			t.Fatal(err)
		}
		back := &distinctCount{}
		rest, err := back.decode(d.encode(nil), dec)
		if err != nil || len(rest) != 0 {
			t.Fatalf("%s: decode: %v, %d bytes left", k.kept, err, len(rest))
		}
		if n, _ := back.result(); n != int64(len(model)) || back.size() != d.size() {
			t.Fatalf("%s: read back %v values, %d bytes; held %d, %d", k.kept, n, back.size(), len(model), d.size())
		}
	}
}

// count is v's count.
func (d *distinctCount) count(v any) int64 {
	if x, ok := v.(int64); ok {
		return d.ints.get(x)
	}
	return d.vals[mapKey(v)]
}

// TestDistinctCountZeroIsCorrupt: encode writes no value whose count is 0
// (a count table's free slot), so state holding one is corrupt.
func TestDistinctCountZeroIsCorrupt(t *testing.T) {
	dec, err := orderedDecoderFor(arrow.PrimitiveTypes.Int64)
	if err != nil {
		t.Fatal(err)
	}
	b := binary.AppendVarint(appendOrdered(binary.AppendUvarint(nil, 1), int64(5), false, true), 0)
	var d distinctCount
	if _, err := d.decode(b, dec); !errors.Is(err, errCorruptState) {
		t.Fatalf("a count of 0 decoded: %v", err)
	}
}
