package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// TestFlinkStringFunctions checks CONCAT_WS, SPLIT_INDEX, LOCATE and
// INSTR against simple models on random strings of multi-byte characters
// with NULLs, in sliced batches.
func TestFlinkStringFunctions(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	alphabet := []string{"a", "b", "é", "日", ","}
	word := func() string {
		var sb strings.Builder
		for range rng.IntN(6) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	const n = 300
	var rows []string
	type row struct {
		s, p  string
		sNull bool
		k     int64
	}
	var model []row
	for range n {
		r := row{s: word(), p: word(), sNull: rng.IntN(6) == 0, k: int64(rng.IntN(6) - 1)}
		if r.p == "" {
			r.p = ","
		}
		s := r.s
		if r.sNull {
			s = "NULL"
		} else if s == "" {
			// exectest cells cannot be empty strings: use a one-letter word.
			r.s, s = "a", "a"
		}
		model = append(model, r)
		rows = append(rows, fmt.Sprintf("%s | %s | %d", s, r.p, r.k))
	}
	tb := exectest.NewTable(t, "s:string, p:string, k:int64", rows...)
	s := exec.NewColumn(0, arrow.BinaryTypes.String, "s")
	p := exec.NewColumn(1, arrow.BinaryTypes.String, "p")
	k := exec.NewColumn(2, arrow.PrimitiveTypes.Int64, "k")
	runeIdx := func(hay, needle string, from int64) int64 {
		r := []rune(hay)
		from = max(from, 1) // Flink searches from the start then
		if from-1 > int64(len(r)) {
			return 0
		}
		for i := int(from - 1); i+utf8.RuneCountInString(needle) <= len(r); i++ {
			if strings.HasPrefix(string(r[i:]), needle) {
				return int64(i + 1)
			}
		}
		return 0
	}
	cases := []struct {
		fn    string
		args  []exec.Expr
		model func(r row) string
	}{
		{"concat_ws", []exec.Expr{p, s, k, s}, func(r row) string {
			if r.sNull {
				return fmt.Sprint(r.k)
			}
			return r.s + r.p + fmt.Sprint(r.k) + r.p + r.s
		}},
		{"split_index", []exec.Expr{s, p, k}, func(r row) string {
			parts := strings.Split(r.s, r.p)
			if r.sNull || r.k < 0 || r.k >= int64(len(parts)) {
				return "NULL"
			}
			return parts[r.k]
		}},
		{"locate", []exec.Expr{p, s, k}, func(r row) string {
			if r.sNull {
				return "NULL"
			}
			return fmt.Sprint(runeIdx(r.s, r.p, r.k))
		}},
		{"instr", []exec.Expr{s, p}, func(r row) string {
			if r.sNull {
				return "NULL"
			}
			return fmt.Sprint(runeIdx(r.s, r.p, 1))
		}},
	}
	for _, c := range cases {
		e, err := exec.NewCall(c.fn, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		batches, err := tb.Split(mem, rng, 64, true)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for _, b := range batches {
			got, err := e.Eval(context.Background(), exec.NewContext(mem), b)
			if err != nil {
				t.Fatalf("seed %d: %s: %v", seed, c.fn, err)
			}
			for j := 0; j < got.Len(); j, i = j+1, i+1 {
				if g, w := vectorized.FormatValue(got, j), c.model(model[i]); g != w {
					t.Fatalf("seed %d: %s row %q: got %q, want %q", seed, c.fn, rows[i], g, w)
				}
			}
			got.Release()
			b.Release()
		}
		mem.AssertSize(t, 0)
	}
}

// TestFlinkRoundTrips: UNHEX(HEX(s)) and DECODE(ENCODE(s, cs), cs) give s
// back, and BIN and HEX of an integer are its 64-bit two's complement, on
// random values.
func TestFlinkRoundTrips(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 5))
	alphabet := []rune("abcxyz019é\u00ff")
	var rows []string
	var strs []string
	var ints []int64
	for range 300 {
		var sb strings.Builder
		for range 1 + rng.IntN(6) {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		v := rng.Int64() >> rng.IntN(64)
		if rng.IntN(2) == 0 {
			v = -v
		}
		strs, ints = append(strs, sb.String()), append(ints, v)
		rows = append(rows, fmt.Sprintf("%s | %d", sb.String(), v))
	}
	tb := exectest.NewTable(t, "s:string, v:int64", rows...)
	s := exec.NewColumn(0, arrow.BinaryTypes.String, "s")
	v := exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "v")
	call := func(fn string, args ...exec.Expr) exec.Expr {
		e, err := exec.NewCall(fn, args...)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	lit := func(x string) exec.Expr { return exec.NewLiteral(scalar.NewStringScalar(x)) }
	unhexed, err := exec.NewCast(call("unhex", call("hex", s)), arrow.BinaryTypes.String)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		e    exec.Expr
		want func(i int) string
	}{
		{"unhex(hex(s))", unhexed, func(i int) string { return strs[i] }},
		{"decode(encode(s, 'UTF-8'), 'UTF-8')", call("decode", call("encode", s, lit("UTF-8")), lit("UTF-8")), func(i int) string { return strs[i] }},
		{"decode(encode(s, 'ISO-8859-1'), 'ISO-8859-1')", call("decode", call("encode", s, lit("ISO-8859-1")), lit("ISO-8859-1")), func(i int) string { return strs[i] }},
		{"bin(v)", call("bin", v), func(i int) string { return fmt.Sprintf("%b", uint64(ints[i])) }},
		{"hex(v)", call("hex", v), func(i int) string { return fmt.Sprintf("%X", uint64(ints[i])) }},
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b, err := tb.Batch(mem, 0, len(rows), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	for _, c := range checks {
		got, err := c.e.Eval(context.Background(), exec.NewContext(mem), b)
		if err != nil {
			t.Fatalf("seed %d: %s: %v", seed, c.name, err)
		}
		for i := range rows {
			if g, w := vectorized.FormatValue(got, i), c.want(i); g != w {
				t.Fatalf("seed %d: %s of row %q = %q, want %q", seed, c.name, rows[i], g, w)
			}
		}
		got.Release()
	}
}
