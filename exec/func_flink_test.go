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
		if from < 1 || from-1 > int64(len(r)) {
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
