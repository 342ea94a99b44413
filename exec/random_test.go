package exec_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

func randomTable(t *testing.T, rng *rand.Rand, n, domain int) exectest.Table {
	tb := exectest.NewTable(t, "k:int32, j:string, v:int64")
	cell := func(s string) string {
		if rng.IntN(8) == 0 {
			return "NULL"
		}
		return s
	}
	for i := 0; i < n; i++ {
		tb.Rows = append(tb.Rows, []string{
			cell(fmt.Sprint(rng.IntN(domain))), cell(fmt.Sprintf("j%d", rng.IntN(3))), cell(fmt.Sprint(rng.IntN(100) - 50)),
		})
	}
	return tb
}

// TestRandomJoins checks the merge and nested-loop joins against the hash
// join on random inputs, for every join type, with and without a residual.
func TestRandomJoins(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 5))
	for iter := 0; iter < 16; iter++ {
		l := randomTable(t, rng, 1+rng.IntN(40), 1+rng.IntN(10))
		r := randomTable(t, rng, 1+rng.IntN(40), 1+rng.IntN(10))
		s := l.Schema
		lk := []exec.Expr{col(s, "k"), col(s, "j")}
		rk := []exec.Expr{col(s, "k"), col(s, "j")}
		var residual exec.Expr
		if iter%2 == 1 {
			residual = call(t, "less", exec.NewColumn(2, arrow.PrimitiveTypes.Int64, "l.v"), exec.NewColumn(5, arrow.PrimitiveTypes.Int64, "r.v"))
		}
		sorted := func(ec *exec.Context, op exec.Operator) exec.Operator {
			return exec.NewSort(ec, op, []exec.SortKey{{Expr: col(s, "k")}, {Expr: col(s, "j")}})
		}
		for _, typ := range []exec.JoinType{exec.InnerJoin, exec.LeftJoin, exec.RightJoin, exec.FullJoin, exec.SemiJoin, exec.AntiJoin} {
			want := reference(t, []exectest.Table{l, r}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				return exec.NewHashJoin(ec, ops[0], ops[1], typ, lk, rk, residual)
			})
			for name, ctor := range map[string]exectest.Ctor{
				"merge": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
					return exec.NewMergeJoin(ec, sorted(ec, ops[0]), sorted(ec, ops[1]), typ, lk, rk, residual)
				},
				"nested-loop": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
					cond := call(t, "and",
						call(t, "equal", exec.NewColumn(0, arrow.PrimitiveTypes.Int32, "l.k"), exec.NewColumn(3, arrow.PrimitiveTypes.Int32, "r.k")),
						call(t, "equal", exec.NewColumn(1, arrow.BinaryTypes.String, "l.j"), exec.NewColumn(4, arrow.BinaryTypes.String, "r.j")))
					if residual != nil {
						cond = call(t, "and", cond, residual)
					}
					return exec.NewNestedLoopJoin(ec, ops[0], ops[1], typ, cond)
				},
			} {
				got := reference(t, []exectest.Table{l, r}, ctor)
				if !exectest.Unordered(got, want) {
					t.Fatalf("iter %d %s %s join:\ngot  %q\nwant %q", iter, name, typ, got, want)
				}
			}
		}
	}
}

// TestRandomAggregates checks sort aggregation (over sorted input) against
// hash aggregation on random inputs, grouped and global.
func TestRandomAggregates(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 6))
	for iter := 0; iter < 6; iter++ {
		in := randomTable(t, rng, 1+rng.IntN(200), 1+rng.IntN(20))
		s := in.Schema
		groups := []exec.Expr{col(s, "k"), col(s, "j")}
		if iter%3 == 2 {
			groups = nil // a global aggregate
		}
		kNull, jNull := call(t, "is_null", col(s, "k")), call(t, "is_null", col(s, "j"))
		pivot, err := exec.NewCase([]exec.When{{Cond: kNull, Then: col(s, "v")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		aggs := []exec.AggregateSpec{
			{Func: "count_star"}, {Func: "count", Args: []exec.Expr{col(s, "v")}},
			{Func: "sum", Args: []exec.Expr{col(s, "v")}}, {Func: "min", Args: []exec.Expr{col(s, "v")}},
			{Func: "max", Args: []exec.Expr{col(s, "j")}}, {Func: "avg", Args: []exec.Expr{col(s, "v")}},
			{Func: "var_pop", Args: []exec.Expr{col(s, "v")}}, {Func: "sum", Args: []exec.Expr{col(s, "v")}, Distinct: true},
			// Parallel workers evaluate these over one shared batch (go test -race).
			{Func: "sum", Args: []exec.Expr{pivot}}, {Func: "count", Args: []exec.Expr{col(s, "v")}, Filter: call(t, "or", kNull, jNull)},
			{Func: "count", Args: []exec.Expr{col(s, "v")}, Filter: call(t, "greater", col(s, "k"), exec.NewLiteral(scalar.NewInt32Scalar(3)))},
		}
		want := reference(t, []exectest.Table{in}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], groups, nil, aggs, nil)
		})
		exectest.Run(t, []exectest.Table{in}, want, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			ec.Parallelism = 1 + iter%3
			return exec.NewParallelHashAggregate(ec, ops[0], groups, nil, aggs, nil)
		})
		if groups == nil {
			if _, err := exec.NewSortAggregate(exec.NewContext(memory.NewGoAllocator()), nil, nil, nil, aggs, nil); err == nil {
				t.Fatal("sort aggregation without group keys accepted")
			}
			continue
		}
		exectest.Run(t, []exectest.Table{in}, want, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			sorted := exec.NewSort(ec, ops[0], []exec.SortKey{{Expr: col(s, "k")}, {Expr: col(s, "j")}})
			return exec.NewSortAggregate(ec, sorted, groups, nil, aggs, nil)
		})
	}
}

// TestRandomSortOneKey checks the radix path of a one-key sort against the
// comparison path (forced by adding a constant second key): both are
// stable, so the outputs must be identical.
func TestRandomSortOneKey(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	tb := exectest.NewTable(t, "i:int64, f:float64, d:date, s:string, m:decimal(28,2), b:decimal(38,0), n:int32")
	vals := []string{"0", "-0.0", "1.5", "-2.25", "NaN", "Inf", "-Inf", "1e300", "NULL"}
	// b's values past 64 bits make its sort compare rows; m's take the
	// radix passes (decimalKey).
	bigs := []string{"-99999999999999999999999999999999999999", "18446744073709551616", "-9223372036854775809", "9223372036854775807", "-1", "0", "NULL"}
	for r := 0; r < 300; r++ {
		i := fmt.Sprint(rng.Int64N(1<<40) - 1<<39)
		if rng.IntN(10) == 0 {
			i = "NULL"
		}
		m := fmt.Sprintf("%d.%02d", rng.Int64N(1<<50)-1<<49, rng.IntN(100))
		if rng.IntN(10) == 0 {
			m = "NULL"
		}
		tb.Rows = append(tb.Rows, []string{i, vals[rng.IntN(len(vals))], fmt.Sprintf("19%02d-01-0%d", rng.IntN(100), 1+rng.IntN(9)), randomSortString(rng),
			m, bigs[rng.IntN(len(bigs))], fmt.Sprint(r)})
	}
	s := tb.Schema
	for _, name := range []string{"i", "f", "d", "s", "m", "b"} {
		for _, desc := range []bool{false, true} {
			for _, nf := range []bool{false, true} {
				key := exec.SortKey{Expr: col(s, name), Descending: desc, NullsFirst: nf}
				want := reference(t, []exectest.Table{tb}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
					return exec.NewSort(ec, ops[0], []exec.SortKey{key, comparisonSortKey}), nil
				})
				got := reference(t, []exectest.Table{tb}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
					return exec.NewSort(ec, ops[0], []exec.SortKey{key}), nil
				})
				if !exectest.Ordered(got, want) {
					t.Fatalf("sort by %s desc=%v nullsFirst=%v differs:\ngot  %q\nwant %q", name, desc, nf, got, want)
				}
			}
		}
	}
}

// comparisonSortKey is a constant boolean key: added last, it leaves the
// order as it was and makes the sort compare rows instead of radix sorting.
var comparisonSortKey = exec.SortKey{Expr: lit(true)}

// randomSortString draws from strings whose byte order differs from their
// order of first appearance and from their lengths' (prefixes, the empty
// string, bytes above 0x7f), or NULL.
func randomSortString(rng *rand.Rand) string {
	return []string{"b", "ab", "a", "", "é", "z", "aa", "B", "NULL"}[rng.IntN(9)]
}

// TestRandomSortKeys sorts by two or three integer, float, date, string
// and decimal keys (few distinct values, so ties reach the later keys; NULLs, NaN and
// -0), each ascending or descending with NULLs first or last: the radix
// sort must give the comparison sort's order, ties in input order. Keys
// whose ranges fit in 64 bits together sort as one composite key; h (40
// bits wide) and w (the whole int64 range) make some sorts too wide for
// it, so they take a radix pass per key.
func TestRandomSortKeys(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 8))
	tb := exectest.NewTable(t, "i:int64, f:float64, d:date, n:int32, s:string, m:decimal(20,2), h:int64, w:int64, row:int32")
	wide := []string{fmt.Sprint(int64(math.MinInt64)), fmt.Sprint(int64(math.MaxInt64)), "0", "-1", "NULL"}
	floats := []string{"0", "-0.0", "1.5", "-2.25", "NaN", "Inf", "-Inf", "NULL"}
	cell := func(s string) string {
		if rng.IntN(6) == 0 {
			return "NULL"
		}
		return s
	}
	for r := 0; r < 400; r++ {
		tb.Rows = append(tb.Rows, []string{cell(fmt.Sprint(rng.Int64N(5) - 2)), floats[rng.IntN(len(floats))],
			cell(fmt.Sprintf("2001-01-0%d", 1+rng.IntN(3))), cell(fmt.Sprint(rng.Int32N(4))), randomSortString(rng),
			cell(fmt.Sprintf("%d.%d0", rng.IntN(3)-1, rng.IntN(2))), cell(fmt.Sprint((rng.Int64N(3) - 1) << 39)),
			wide[rng.IntN(len(wide))], fmt.Sprint(r)})
	}
	s := tb.Schema
	names := []string{"i", "f", "d", "n", "s", "m", "h", "w"}
	for range 80 {
		var keys []exec.SortKey
		var desc []string
		for _, k := range rng.Perm(len(names))[:2+rng.IntN(2)] {
			key := exec.SortKey{Expr: col(s, names[k]), Descending: rng.IntN(2) == 0, NullsFirst: rng.IntN(2) == 0}
			keys = append(keys, key)
			desc = append(desc, fmt.Sprintf("%s desc=%v nullsFirst=%v", names[k], key.Descending, key.NullsFirst))
		}
		want := reference(t, []exectest.Table{tb}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSort(ec, ops[0], append(slices.Clone(keys), comparisonSortKey)), nil
		})
		got := reference(t, []exectest.Table{tb}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSort(ec, ops[0], keys), nil
		})
		// The row column makes the order of ties part of the comparison.
		if !slices.Equal(got, want) {
			t.Fatalf("sort by %v differs:\ngot  %q\nwant %q", desc, got, want)
		}
	}
}

// TestRandomPackedKeys checks hash joins on two integer keys (packed into
// one int64 by the build side's ranges, with probe values outside them)
// against the nested-loop join.
func TestRandomPackedKeys(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 9))
	for iter := 0; iter < 10; iter++ {
		l := randomTable(t, rng, 1+rng.IntN(60), 1+rng.IntN(8))
		r := randomTable(t, rng, 1+rng.IntN(60), 1+rng.IntN(8))
		s := l.Schema
		for _, typ := range []exec.JoinType{exec.InnerJoin, exec.LeftJoin, exec.FullJoin, exec.AntiJoin, exec.NullAwareAntiJoin} {
			got := reference(t, []exectest.Table{l, r}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				return exec.NewHashJoin(ec, ops[0], ops[1], typ, []exec.Expr{col(s, "k"), col(s, "v")}, []exec.Expr{col(s, "k"), col(s, "v")}, nil)
			})
			if typ == exec.NullAwareAntiJoin {
				continue // no nested-loop counterpart; the run checks for errors and leaks
			}
			want := reference(t, []exectest.Table{l, r}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				cond := call(t, "and",
					call(t, "equal", exec.NewColumn(0, arrow.PrimitiveTypes.Int32, "l.k"), exec.NewColumn(3, arrow.PrimitiveTypes.Int32, "r.k")),
					call(t, "equal", exec.NewColumn(2, arrow.PrimitiveTypes.Int64, "l.v"), exec.NewColumn(5, arrow.PrimitiveTypes.Int64, "r.v")))
				return exec.NewNestedLoopJoin(ec, ops[0], ops[1], typ, cond)
			})
			if !exectest.Unordered(got, want) {
				t.Fatalf("iter %d %s:\ngot  %q\nwant %q", iter, typ, got, want)
			}
		}
	}
}

// TestRandomCase checks CASE over whole random batches (sliced at an
// offset) against the same CASE on each row alone: the values agree, and
// the batch fails only if some row alone fails (a division by zero in a
// value or condition no row reached must not be raised).
func TestRandomCase(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 11))
	tb := exectest.NewTable(t, "k:int32, j:string, v:int64")
	s := tb.Schema
	k, j, v := col(s, "k"), col(s, "j"), col(s, "v")
	str := func(x string) exec.Expr { return lit(x) }
	num := func(x int64) exec.Expr { return lit(x) }
	newCase := func(els exec.Expr, arms ...exec.Expr) exec.Expr {
		var ws []exec.When
		for i := 0; i < len(arms); i += 2 {
			ws = append(ws, exec.When{Cond: arms[i], Then: arms[i+1]})
		}
		e, err := exec.NewCase(ws, els)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	exprs := []exec.Expr{
		newCase(call(t, "modulo", v, k),
			call(t, "equal", j, str("j0")), v,
			call(t, "equal", j, str("j1")), call(t, "divide", num(100), v),
			call(t, "greater", k, num(3)), call(t, "divide", v, k)),
		newCase(str("low"),
			call(t, "is_null", v), str("none"),
			call(t, "greater", call(t, "divide", num(1000), v), num(20)), j,
			call(t, "is_null", k), str("nk")),
		newCase(nil,
			call(t, "equal", j, str("j2")), newCase(num(-1), call(t, "not_equal", k, num(0)), call(t, "divide", v, k)),
			call(t, "less", v, num(0)), call(t, "negate", v)),
		newCase(nil, call(t, "equal", k, num(0)), exec.NewLiteral(scalar.MakeNullScalar(arrow.PrimitiveTypes.Int64)), call(t, "not_equal", v, num(0)), call(t, "divide", num(7), v)),
		// Constant arms (q62's counters): one pass over the condition.
		newCase(num(0), call(t, "less_equal", call(t, "subtract", v, k), num(30)), num(1)),
		newCase(nil, call(t, "greater", call(t, "divide", num(1000), v), num(20)), str("big")),
		newCase(str("other"), call(t, "is_null", j), exec.NewLiteral(scalar.MakeNullScalar(arrow.BinaryTypes.String))),
		// Fixed-width constant arms assembled from the condition's bitmap:
		// a NULL ELSE, a NULL THEN, narrow and 128-bit types, a condition
		// that is NULL where v or k is.
		newCase(nil, call(t, "greater", call(t, "subtract", v, k), num(2)), num(1)),
		newCase(num(7), call(t, "less", v, k), exec.NewLiteral(scalar.MakeNullScalar(arrow.PrimitiveTypes.Int64))),
		newCase(exec.NewLiteral(scalar.NewInt8Scalar(-3)), call(t, "greater", k, num(1)), exec.NewLiteral(scalar.NewInt8Scalar(5))),
		newCase(exec.NewLiteral(scalar.NewInt32Scalar(0)), call(t, "less_equal", call(t, "divide", num(1000), v), num(20)), exec.NewLiteral(scalar.NewInt32Scalar(1))),
		newCase(exec.NewLiteral(scalar.NewDecimal128Scalar(decimal128.FromI64(-250), &arrow.Decimal128Type{Precision: 20, Scale: 2})),
			call(t, "greater", v, num(0)), exec.NewLiteral(scalar.NewDecimal128Scalar(decimal128.FromI64(12345), &arrow.Decimal128Type{Precision: 20, Scale: 2}))),
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ctx := context.Background()
	eval := func(e exec.Expr, b arrow.RecordBatch) ([]string, error) {
		a, err := e.Eval(ctx, ec, b)
		if err != nil {
			return nil, err
		}
		defer a.Release()
		out := make([]string, a.Len())
		for i := range out {
			out[i] = vectorized.FormatValue(a, i)
		}
		return out, nil
	}
	iters := 12
	if raceEnabled {
		iters = 4 // one goroutine: under -race fewer random batches; the plain pass runs 12
	}
	for iter := 0; iter < iters; iter++ {
		n := 1 + rng.IntN(40)
		if iter%2 == 1 {
			n = 1 + rng.IntN(3000)
		}
		tb.Rows = randomTable(t, rng, n, 6).Rows
		b, err := tb.Batch(mem, 0, n, 1+rng.IntN(3))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range exprs {
			empty := b.NewSlice(0, 0)
			none, err := eval(e, empty)
			empty.Release()
			if err != nil || len(none) != 0 {
				t.Fatalf("%s over no rows: %v, %v", e, none, err)
			}
			all, err := eval(e, b)
			failed := -1
			for i := 0; i < n; i++ {
				row := b.NewSlice(int64(i), int64(i+1))
				one, rerr := eval(e, row)
				row.Release()
				if rerr != nil {
					failed = i
					continue
				}
				if err == nil && one[0] != all[i] {
					t.Fatalf("seed %d: %s row %d (%v): alone %s, in the batch %s", seed, e, i, tb.Rows[i], one[0], all[i])
				}
			}
			if (err != nil) != (failed >= 0) {
				t.Fatalf("seed %d: %s over %d rows: batch error %v, a row alone fails: %v (row %d)", seed, e, n, err, failed >= 0, failed)
			}
		}
		b.Release()
	}
}

// TestRandomPackedGroups checks hash aggregation on several integer group
// keys (packed into one int64 where their fields fit, with values outside
// narrow fields, negative values, type extremes and NULLs taking the
// byte-encoded path) against sort aggregation, serial and parallel.
func TestRandomPackedGroups(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 10))
	bounds := map[string][2]int64{
		"int8": {-128, 127}, "int16": {-1 << 15, 1<<15 - 1}, "int32": {-1 << 31, 1<<31 - 1},
		"int64": {-1 << 63, 1<<63 - 1}, "uint32": {0, 1<<32 - 1}, "uint8": {0, 255},
	}
	layouts := [][]string{
		{"int32", "int32"},                            // 32-bit fields: negatives do not pack
		{"int8", "uint32", "int16"},                   // full fields: everything packs
		{"int64", "int32", "int32"},                   // 22/21/21-bit fields
		{"uint8", "int32", "int32", "int32", "int32"}, // too many: bytes only
	}
	for iter := 0; iter < 12; iter++ {
		types := layouts[iter%len(layouts)]
		var schema []string
		for c, typ := range types {
			schema = append(schema, fmt.Sprintf("k%d:%s", c, typ))
		}
		tb := exectest.NewTable(t, strings.Join(append(schema, "v:int64"), ", "))
		domain := 1 + rng.IntN(6)
		for range 1 + rng.IntN(300) {
			var row []string
			for _, typ := range types {
				b := bounds[typ]
				cell := fmt.Sprint(rng.IntN(domain))
				switch rng.IntN(12) {
				case 0:
					cell = "NULL"
				case 1:
					cell = fmt.Sprint(max(b[0], -1-int64(rng.IntN(2))))
				case 2:
					cell = fmt.Sprint(b[1] - int64(rng.IntN(2)))
				case 3:
					cell = fmt.Sprint(b[0] + int64(rng.IntN(2)))
				case 4:
					cell = fmt.Sprint(min(b[1], 1<<21+int64(rng.IntN(2))))
				}
				row = append(row, cell)
			}
			tb.Rows = append(tb.Rows, append(row, fmt.Sprint(rng.IntN(100)-50)))
		}
		s := tb.Schema
		var groups []exec.Expr
		var keys []exec.SortKey
		for c := range types {
			groups = append(groups, col(s, fmt.Sprintf("k%d", c)))
			keys = append(keys, exec.SortKey{Expr: groups[c]})
		}
		aggs := []exec.AggregateSpec{{Func: "count_star"}, {Func: "sum", Args: []exec.Expr{col(s, "v")}}}
		want := reference(t, []exectest.Table{tb}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSortAggregate(ec, exec.NewSort(ec, ops[0], keys), groups, nil, aggs, nil)
		})
		t.Run(fmt.Sprint(iter, types), func(t *testing.T) {
			exectest.Run(t, []exectest.Table{tb}, want, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				ec.Parallelism = 1 + iter%3
				return exec.NewParallelHashAggregate(ec, ops[0], groups, nil, aggs, nil)
			})
		})
	}
}
