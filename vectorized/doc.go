// Package vectorized holds flightd's kernels over Arrow arrays: arithmetic
// with overflow checks, decimal arithmetic with SQL result precision,
// comparisons (of two arrays, or of an array with a constant), Kleene
// boolean logic, selection masks and filtering, casts, string and
// date/time functions, key encoding for hashing, and row gathering (Take).
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
//   - comparison with a constant (BenchmarkLessScalar): CompareScalar's
//     bit-packed loop is 0.65x compute's time with a scalar datum for
//     int64, 0.12x expanding the constant into an array first, and 0.05x
//     for decimal128 (which compute does not compare).
//   - Kleene AND with NULLs (BenchmarkAndKleene): word-wise, 0.07-0.09x
//     the time of the former row-by-row loop.
//   - filter (BenchmarkFilterBatch, half the rows): FilterMask gathers
//     fixed-width columns by an own loop, 0.6x compute's filter kernel for
//     int64 and 0.5x for decimal128; other types use the kernel.
//   - take: own gather loops (no per-call dispatch, no bounds-check pass)
//     take half the time of compute's take kernel: 130-180us vs 260-370us
//     for 32K random int64 rows, 490-590us vs 890-1290us for strings
//     (BenchmarkTakeInt64, BenchmarkTakeString, 6 runs): Take uses them for
//     fixed-width, boolean and string/binary columns, compute for the rest.
//   - checked int64 add: within noise; the own loop stays because its
//     errors name the operands.
//   - int32->int64 cast: within noise; own loop (errors name the value).
package vectorized
