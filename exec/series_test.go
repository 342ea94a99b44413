package exec_test

import (
	"context"
	"errors"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// TestRandomSeries checks integer series against a model in big.Int, with
// starts, stops and steps near int64's ends, where a step past the end
// must end the series rather than wrap around, and with small batches.
func TestRandomSeries(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 11))
	edge := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return math.MaxInt64 - rng.Int64N(50)
		case 1:
			return math.MinInt64 + rng.Int64N(50)
		}
		return rng.Int64N(200) - 100
	}
	for iter := 0; iter < 2000; iter++ {
		s := exec.Series{Type: arrow.PrimitiveTypes.Int64, Inclusive: rng.IntN(2) == 0, Start: edge(), Step: rng.Int64N(21) - 10}
		stop := new(big.Int).Add(big.NewInt(s.Start), big.NewInt(rng.Int64N(2001)-1000))
		if rng.IntN(8) == 0 { // a step as long as the whole range
			s.Step = []int64{math.MaxInt64, math.MinInt64}[rng.IntN(2)]
			stop.SetInt64(edge())
		}
		s.Stop = clampInt64(stop)
		got, err := runSeries(t, s, 1+rng.IntN(7))
		if s.Step == 0 {
			if !errors.Is(err, vectorized.ErrInvalidValue) {
				t.Fatalf("iter %d %+v: zero step gave %v", iter, s, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("iter %d %+v: %v", iter, s, err)
		}
		var want []int64
		v, stop, step := big.NewInt(s.Start), big.NewInt(s.Stop), big.NewInt(s.Step)
		for {
			c := v.Cmp(stop)
			in := (s.Step > 0 && (c < 0 || c == 0 && s.Inclusive)) || (s.Step < 0 && (c > 0 || c == 0 && s.Inclusive))
			if !in || !v.IsInt64() {
				break
			}
			want = append(want, v.Int64())
			v.Add(v, step)
		}
		if len(got) != len(want) {
			t.Fatalf("iter %d %+v: %d values, want %d (%v, want %v)", iter, s, len(got), len(want), got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("iter %d %+v: value %d is %d, want %d", iter, s, i, got[i], want[i])
			}
		}
	}
}

func runSeries(t *testing.T, s exec.Series, batch int) ([]int64, error) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ec.BatchSize = batch
	op := exec.NewSeries(ec, "x", s)
	defer op.Close()
	ctx := context.Background()
	if err := op.Open(ctx); err != nil {
		return nil, err
	}
	var out []int64
	for {
		b, err := op.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if b.NumRows() > int64(batch) {
			t.Fatalf("batch of %d rows, BatchSize %d", b.NumRows(), batch)
		}
		out = append(out, b.Column(0).(*array.Int64).Int64Values()...)
	}
}

func clampInt64(v *big.Int) int64 {
	switch {
	case v.Cmp(big.NewInt(math.MaxInt64)) > 0:
		return math.MaxInt64
	case v.Cmp(big.NewInt(math.MinInt64)) < 0:
		return math.MinInt64
	}
	return v.Int64()
}
