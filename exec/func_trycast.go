package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

func init() {
	register(resolveTryCast, "try_cast_to")
}

// resolveTryCast is TRY_CAST(x AS t), which the binder passes as
// try_cast_to(x, NULL of t): CAST, but NULL for a value that does not convert.
func resolveTryCast(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	to := types[1]
	return &impl{ret: to, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		if out, err := vectorized.Cast(ec.Mem, a[0], to); err == nil {
			return out, nil
		}
		// Some value failed: cast row by row, NULL where one fails.
		b := array.NewBuilder(ec.Mem, to)
		defer b.Release()
		b.Reserve(n)
		for i := 0; i < n; i++ {
			row := array.NewSlice(a[0], int64(i), int64(i+1))
			v, err := vectorized.Cast(ec.Mem, row, to)
			row.Release()
			if err != nil {
				b.AppendNull()
				continue
			}
			vectorized.AppendValue(b, v, 0)
			v.Release()
		}
		return b.NewArray(), nil
	}}, nil
}
