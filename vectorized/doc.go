// Package vectorized holds flightd's kernels over Arrow arrays: arithmetic
// with overflow checks, decimal arithmetic with SQL result precision,
// comparisons, Kleene boolean logic, casts, string and date/time functions,
// key encoding for hashing, and row gathering (Take).
//
//	exec.Expr.Eval ──► vectorized kernel ──► new arrow.Array (caller owns)
//
// Kernels take a memory.Allocator and return arrays the caller must
// Release. Inputs are never modified. Most kernels are own loops over the
// raw value buffers (Values[T]); gathering rows uses arrow-go's compute
// take kernel, which measured faster than a builder loop (see the
// benchmarks in this package).
package vectorized
