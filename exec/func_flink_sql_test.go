package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// callRows evaluates fn over the named columns of tb, one rendered value
// per row.
func callRows(t *testing.T, tb exectest.Table, fn string, cols ...string) []string {
	t.Helper()
	var args []exec.Expr
	for _, c := range cols {
		args = append(args, col(tb.Schema, c))
	}
	call, err := exec.NewCall(fn, args...)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := evalRows(t, tb, call, 0, len(tb.Rows))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestOverlapsRandom: (s1, e1) OVERLAPS (s2, e2) is true exactly when the
// periods, each with its ends put in order, share at least one day (the
// larger start is not after the smaller end), NULL when an end is NULL;
// random dates.
func TestOverlapsRandom(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 22))
	tb := exectest.NewTable(t, "s1:date, e1:date, s2:date, e2:date")
	var want []string
	for range 500 {
		var d [4]int
		row := make([]string, 4)
		null := false
		for k := range d {
			d[k] = rng.IntN(12)
			row[k] = fmt.Sprintf("2024-01-%02d", d[k]+1)
			if rng.IntN(30) == 0 {
				row[k], null = "NULL", true
			}
		}
		tb.Rows = append(tb.Rows, row)
		lo1, hi1 := min(d[0], d[1]), max(d[0], d[1])
		lo2, hi2 := min(d[2], d[3]), max(d[2], d[3])
		switch {
		case null:
			want = append(want, "NULL")
		default:
			want = append(want, fmt.Sprint(max(lo1, lo2) <= min(hi1, hi2)))
		}
	}
	got := callRows(t, tb, "overlaps", "s1", "e1", "s2", "e2")
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("seed %d: %v OVERLAPS: got %s, want %s", seed, tb.Rows[i], got[i], want[i])
		}
	}
}

// TestSimilarToRandom: without regular expression operators SIMILAR TO is
// LIKE (% any characters, _ one, an escaped character itself); random
// strings and patterns over a small alphabet with regular expression
// characters escaped.
func TestSimilarToRandom(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 23))
	tb := exectest.NewTable(t, "s:string, p:string, e:string")
	var want []bool
	for range 800 {
		var s, p strings.Builder
		for range rng.IntN(6) {
			s.WriteByte("ab.*"[rng.IntN(4)])
		}
		for range rng.IntN(5) {
			switch c := "ab%_.*!"[rng.IntN(7)]; c {
			case '.', '*', '!':
				p.WriteByte('!')
				p.WriteByte(c)
			default:
				p.WriteByte(c)
			}
		}
		m, err := vectorized.NewLikeMatcher(p.String(), '!', false)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, m.Match(s.String()))
		tb.Rows = append(tb.Rows, []string{s.String(), p.String(), "!"})
	}
	got := callRows(t, tb, "similar_to", "s", "p", "e")
	for i := range want {
		if got[i] != fmt.Sprint(want[i]) {
			t.Fatalf("seed %d: %q SIMILAR TO %q ESCAPE '!': got %s, want %v", seed, tb.Rows[i][0], tb.Rows[i][1], got[i], want[i])
		}
	}
}

// TestSeededRandMatchesJava: RAND(seed) and RAND_INTEGER(seed, bound) give
// java.util.Random's sequences, as Flink 2.3 returned them for these seeds;
// calls evaluated on several goroutines at once share one sequence and
// together return each of its values once.
func TestSeededRandMatchesJava(t *testing.T) {
	tb := exectest.NewTable(t, "seed:int64, bound:int64", "1 | 10", "1 | 10", "1 | 10")
	if got := callRows(t, tb, "rand", "seed"); strings.Join(got, " ") != "0.7308781907032909 0.41008081149220166 0.20771484130971707" {
		t.Errorf("RAND(1): %v", got)
	}
	if got := callRows(t, tb, "rand_integer", "seed", "bound"); strings.Join(got, " ") != "5 8 7" {
		t.Errorf("RAND_INTEGER(1, 10): %v", got)
	}
	tb = exectest.NewTable(t, "seed:int64, bound:int64", "42 | 1000", "42 | 1000", "42 | 1000")
	if got := callRows(t, tb, "rand_integer", "seed", "bound"); strings.Join(got, " ") != "130 763 248" {
		t.Errorf("RAND_INTEGER(42, 1000): %v", got)
	}
	tb = exectest.NewTable(t, "seed:int64, bound:int64", "7 | 3", "7 | 3", "7 | 3")
	if got := callRows(t, tb, "rand_integer", "seed", "bound"); strings.Join(got, " ") != "1 2 0" {
		t.Errorf("RAND_INTEGER(7, 3): %v", got)
	}

	// One compiled call on 4 goroutines: the values drawn are the first
	// 4 * 50 of the sequence, each once.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var rows []string
	for range 50 {
		rows = append(rows, "1 | 1000000")
	}
	tb = exectest.NewTable(t, "seed:int64, bound:int64", rows...)
	b, err := tb.Batch(mem, 0, len(tb.Rows), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	call, err := exec.NewCall("rand_integer", col(tb.Schema, "seed"), col(tb.Schema, "bound"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	drawn := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			out, err := call.Eval(context.Background(), exec.NewContext(mem), b)
			if err != nil {
				t.Error(err)
				return
			}
			defer out.Release()
			mu.Lock()
			defer mu.Unlock()
			for i := range out.Len() {
				drawn[vectorized.FormatValue(out, i)]++
			}
		})
	}
	wg.Wait()
	serial := exectest.NewTable(t, "seed:int64, bound:int64", append(append(append(rows, rows...), rows...), rows...)...)
	for _, v := range callRows(t, serial, "rand_integer", "seed", "bound") {
		drawn[v]--
	}
	for v, n := range drawn {
		if n != 0 {
			t.Fatalf("value %s drawn %d times more than the sequence holds it", v, n)
		}
	}
}

// TestMapFromArraysRandom: MAP_FROM_ARRAYS maps each distinct key to the
// value of its last position, keys in order of first appearance; random
// key and value arrays.
func TestMapFromArraysRandom(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 24))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	for range 200 {
		n := rng.IntN(6)
		var ks, vs []string
		var order []string
		last := map[string]string{}
		for i := range n {
			k := fmt.Sprint(rng.IntN(4))
			v := fmt.Sprint(i * 10)
			ks, vs = append(ks, k), append(vs, v)
			if _, ok := last[k]; !ok {
				order = append(order, k)
			}
			last[k] = v
		}
		if n == 0 {
			continue // ARRAY[] has no element type to build from
		}
		var want []string
		for _, k := range order {
			want = append(want, k+"="+last[k])
		}
		keys, err := exec.NewCall("array", intLits(ks)...)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := exec.NewCall("array", intLits(vs)...)
		if err != nil {
			t.Fatal(err)
		}
		call, err := exec.NewCall("map_from_arrays", keys, vals)
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
		out, err := call.Eval(context.Background(), ec, b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(mapEntries(out, 0), ",")
		out.Release()
		if w := strings.Join(want, ","); got != w {
			t.Fatalf("seed %d: MAP_FROM_ARRAYS(%v, %v): got %s, want %s", seed, ks, vs, got, w)
		}
	}
}

func intLits(vals []string) []exec.Expr {
	out := make([]exec.Expr, len(vals))
	for i, v := range vals {
		var x int64
		fmt.Sscan(v, &x)
		out[i] = lit(x)
	}
	return out
}
