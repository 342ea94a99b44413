package exec_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

var fuzzFuncs = []string{
	"add", "subtract", "multiply", "divide", "modulo", "negate", "equal", "not_equal", "less", "greater_equal",
	"and", "or", "not", "is_null", "is_distinct_from", "coalesce", "nullif", "like", "substr", "upper", "trim",
	"concat", "length", "replace", "position", "abs", "round", "floor", "ceil", "sqrt", "power", "ln", "exp",
	"extract", "date_add", "date_diff", "date_trunc", "date_format", "greatest", "least", "lpad", "split_part",
	"regexp_replace", "left", "sign", "to_date", "unix_timestamp", "url_encode", "url_decode", "printf", "split",
	"str_to_map", "regexp_instr", "overlay", "convert_tz", "json_exists",
}

// TestRandomExpressions builds random expression trees over columns of many
// types and checks that evaluation never panics, never leaks, returns the
// declared type, and gives each row the same value whether it is evaluated
// in a batch or alone.
func TestRandomExpressions(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 8))
	tbl := exectest.NewTable(t, "i8:int8, i32:int32, i64:int64, f:float64, d:decimal(9,3), s:string, b:bool, dt:date, ts:timestamp",
		"1 | 100000 | 9223372036854775807 | 1.5 | 123.456 | abc | true | 2024-02-29 | 2024-02-29 10:00:00",
		"-128 | -7 | -3 | -0.0 | -0.001 | Héllo wörld | false | 1970-01-01 | 1969-12-31 23:59:59",
		"NULL | 0 | 0 | NaN | 0.000 | % _ | NULL | NULL | NULL",
		"127 | NULL | NULL | NULL | NULL | NULL | true | 2000-01-31 | 2262-01-01 00:00:00",
	)
	s := tbl.Schema
	lits := []scalar.Scalar{
		scalar.NewInt64Scalar(0), scalar.NewInt64Scalar(-1), scalar.NewInt64Scalar(2), scalar.NewInt32Scalar(1 << 30),
		scalar.NewFloat64Scalar(0.5), scalar.NewStringScalar("day"), scalar.NewStringScalar("%b%"), scalar.NewStringScalar("yyyy-MM"),
		scalar.NewStringScalar("month"), scalar.NewBooleanScalar(true), scalar.MakeNullScalar(arrow.Null),
		scalar.MakeNullScalar(arrow.PrimitiveTypes.Int64), scalar.NewStringScalar(" "),
	}
	var gen func(depth int) exec.Expr
	gen = func(depth int) exec.Expr {
		if depth == 0 || rng.IntN(3) == 0 {
			if rng.IntN(3) == 0 {
				return exec.NewLiteral(lits[rng.IntN(len(lits))])
			}
			c := rng.IntN(s.NumFields())
			return exec.NewColumn(c, s.Field(c).Type, s.Field(c).Name)
		}
		for tries := 0; tries < 20; tries++ {
			fn := fuzzFuncs[rng.IntN(len(fuzzFuncs))]
			args := make([]exec.Expr, 1+rng.IntN(3))
			for i := range args {
				args[i] = gen(depth - 1)
			}
			if e, err := exec.NewCall(fn, args...); err == nil {
				return e
			}
		}
		return exec.NewColumn(2, s.Field(2).Type, "i64")
	}
	evaluated := 0
	for iter := 0; iter < 500; iter++ {
		e := gen(3)
		if rng.IntN(5) == 0 {
			if c, err := exec.NewCast(e, s.Field(rng.IntN(s.NumFields())).Type); err == nil {
				e = c
			}
		}
		all, err := evalRows(t, tbl, e, 0, len(tbl.Rows))
		if err != nil {
			// Errors (overflow, bad values) are fine, but they must come from
			// a row: some row alone fails too.
			failed := false
			for r := range tbl.Rows {
				if _, rerr := evalRows(t, tbl, e, r, r+1); rerr != nil {
					failed = true
				}
			}
			if !failed {
				t.Fatalf("%s fails on the batch (%v) but on no single row", e, err)
			}
			continue
		}
		evaluated++
		for r := range tbl.Rows {
			one, err := evalRows(t, tbl, e, r, r+1)
			if err != nil || one[0] != all[r] {
				t.Fatalf("%s: row %d alone = %q (%v), in batch %q", e, r, one, err, all[r])
			}
		}
	}
	t.Logf("%d of 500 random expressions evaluated without error", evaluated)
}

func evalRows(t *testing.T, tbl exectest.Table, e exec.Expr, lo, hi int) (rows []string, err error) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s panicked: %v", e, r)
		}
	}()
	ec := exec.NewContext(mem)
	b, err := tbl.Batch(mem, lo, hi, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	a, err := e.Eval(context.Background(), ec, b)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	if !arrow.TypeEqual(a.DataType(), e.DataType()) || a.Len() != hi-lo {
		t.Fatalf("%s: got %s[%d], declared %s[%d]", e, a.DataType(), a.Len(), e.DataType(), hi-lo)
	}
	one := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "r", Type: a.DataType(), Nullable: true}}, nil), []arrow.Array{a}, int64(a.Len()))
	defer one.Release()
	return exectest.BatchRows(one), nil
}
