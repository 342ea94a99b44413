package exec_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// TestTryCastRandom: TRY_CAST of random strings (numbers in and out of
// TINYINT's range, words, NULLs) to TINYINT is the number where one fits
// and NULL elsewhere, in sliced batches of random sizes.
func TestTryCastRandom(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	var rows, want []string
	for range 500 {
		switch rng.IntN(4) {
		case 0:
			rows, want = append(rows, "NULL"), append(want, "NULL")
		case 1:
			rows, want = append(rows, "x"+strconv.Itoa(rng.IntN(9))), append(want, "NULL")
		default:
			v := rng.IntN(600) - 300
			rows = append(rows, strconv.Itoa(v))
			if v < -128 || v > 127 {
				want = append(want, "NULL")
			} else {
				want = append(want, strconv.Itoa(v))
			}
		}
	}
	tb := exectest.NewTable(t, "s:string", rows...)
	e, err := exec.NewCall("try_cast_to", exec.NewColumn(0, arrow.BinaryTypes.String, "s"), exec.NewLiteral(scalar.MakeNullScalar(arrow.PrimitiveTypes.Int8)))
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batches, err := tb.Split(mem, rng, 64, true)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, b := range batches {
		got, err := e.Eval(context.Background(), exec.NewContext(mem), b)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for r := 0; r < got.Len(); r++ {
			if g := vectorized.FormatValue(got, r); g != want[i] {
				t.Fatalf("seed %d: TRY_CAST(%s AS TINYINT) = %s, want %s", seed, rows[i], g, want[i])
			}
			i++
		}
		got.Release()
		b.Release()
	}
	if i != len(want) {
		t.Fatalf("seed %d: %d rows, want %d", seed, i, len(want))
	}
}
