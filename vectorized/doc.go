// Package vectorized holds flightd's kernels over Arrow arrays: arithmetic
// with overflow checks, decimal arithmetic with SQL result precision,
// comparisons, Kleene boolean logic, casts, string and date/time functions,
// key encoding for hashing, and row gathering (Take).
//
//	exec.Expr.Eval ──► vectorized kernel ──► new arrow.Array (caller owns)
//
// Kernels take a memory.Allocator and return arrays the caller must
// Release. Inputs are never modified.
//
// Own loops or arrow-go compute? bench_test.go measures both where both
// exist (64K int64 rows, 2 shared cores, hasNulls x sliced):
//
//   - integer/temporal comparisons: compute ~10x faster (52us vs 580us):
//     Compare uses compute; floats keep the own loop for NaN ordering.
//   - filter: compute's filter kernel beats gathering by index by up to 2x:
//     FilterBatch uses it.
//   - take: compute and a builder loop are within noise: Take uses compute.
//   - checked int64 add: within noise; the own loop stays because its
//     errors name the operands.
//   - int32->int64 cast: within noise; own loop (errors name the value).
package vectorized
