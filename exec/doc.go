// Package exec holds flightd's physical operators and compiled scalar
// expressions: a pull-based, vectorized executor over arrow.RecordBatch.
//
//	plan.Build ──► Operator tree ──► NewRecordReader ──► Flight DoGet
//	                  │
//	   Source ─► Filter ─► Project ─► HashAggregate ─► Sort/TopN ─► Limit
//	                  │         (Expr: Column, Literal, Call, Cast, Case, In)
//	                  └─ kernels in package vectorized
//
// # Operator contract
//
// Open(ctx) opens the operator and its children (idempotent). Next(ctx)
// returns the next batch or io.EOF; it never returns a batch of zero rows.
// Close releases everything, is safe without Open and safe twice. Callers
// pull through exec.Next, which checks cancellation before every batch and
// turns a panic into an error.
//
// # Ownership rules (Release/Retain)
//
//  1. Whoever creates or Retains an arrow object Releases it: every New*,
//     builder result, Take/Concatenate/Cast result and Expr.Eval result is
//     owned by the caller, who defers Release at once.
//  2. A batch returned by Operator.Next is borrowed: it stays valid until the
//     next Next or Close of the same operator. To keep it longer (to buffer
//     it, or to hand it to another goroutine) Retain it first and Release it
//     when done. Operators keep their last output in a `current` holder that
//     releases it on the next call.
//  3. Expr.Eval returns a new reference (a column expression Retains the
//     input column) of exactly b.NumRows() rows.
//  4. BatchSource.Next (a table scan) lends batches the same way.
//  5. All buffers come from Context.Mem; library code never uses
//     memory.DefaultAllocator. Tests use memory.NewCheckedAllocator and end
//     with AssertSize(t, 0).
//
// # Operators
//
// Source, Values, Filter, Project, Limit, Sort, TopN, HashAggregate (with
// grouping sets), ParallelHashAggregate, SortAggregate, HashJoin,
// MergeJoin, NestedLoopJoin (inner/left/right/full/semi/anti, null-aware
// anti for NOT IN), UnionAll, Gather (parallel union), SetOp
// (INTERSECT/EXCEPT [ALL]), Distinct, Window; Instrument wraps any operator
// with counters; NewRecordReader adapts a tree to arrow's RecordReader.
//
// # Memory budget and spilling
//
// Context.MemoryLimit bounds what one operator holds: retained batches and
// Arrow allocations since it started, plus estimates of its Go state (hash
// tables, DISTINCT and set-operation key sets, min/max strings). A retained
// batch that slices larger buffers counts its rows' bytes (fixed-width and
// string/binary columns; others their whole buffers), so the batch-sized
// slices of one large array count it about once. Over it:
//   - Sort writes sorted runs (Arrow IPC streams in Context.TempDir) and
//     merges them; TopN does when the rows it keeps pass the limit.
//   - HashAggregate sends the rows of new groups to hash partitions it
//     aggregates afterwards (per grouping set); DISTINCT aggregates freeze
//     their (group, value) sets and spill unseen pairs by hash partition,
//     deduplicated partition by partition before the result.
//   - HashJoin and MergeJoin partition both inputs and join partition by
//     partition (grace hash join; the null-aware anti join too).
//     NestedLoopJoin writes its build side to disk and joins it in blocks,
//     each with the whole probe side replayed by a Spool.
//   - Distinct and SetOp freeze their key sets and partition the rows of
//     keys they do not hold, finished partition by partition.
//   - Window sorts externally and computes a few partitions at a time; a
//     partition larger than a quarter of the limit is computed in chunks
//     that carry running state and overlap by the rows lag, lead and ROWS
//     offset frames reach, after a first pass to disk when a function needs
//     its size or totals.
//   - Spool keeps its first batches in memory and writes the rest to disk.
//
// Partitions that are still too big re-partition, up to a fixed depth (past
// it the operator finishes in memory). State that cannot spill fails with
// ErrMemoryLimit naming the limit: a window partition past it under frames
// reaching UNBOUNDED FOLLOWING (but aggregates over the whole partition),
// RANGE offsets, frames from UNBOUNDED PRECEDING to a following row,
// nth_value from UNBOUNDED PRECEDING, or lag/lead with a varying offset.
// The limit is a spill threshold, not a hard cap: with state ten times the
// limit, count(DISTINCT) and row_number() OVER (ORDER BY) keep their Arrow
// memory within twice it (TestSpillTenTimesBudget).
//
// Context.Pool, a MemoryPool shared by all the executions of an engine,
// bounds what their operators hold together: each reserves what it holds
// (a sort, TopN and join build side twice, for the concatenation of the
// batches they hold) and spills, as past MemoryLimit, once past its fair
// share (the pool over the operators holding bytes) or when the pool is
// full. What cannot spill then fails with ErrMemoryLimit naming the pool.
// Operators free their reservation at Close; Context.ReleaseMemory frees
// whatever an execution still holds when it ends.
//
// Expressions count the values they compute and hold while computing more
// (a call's arguments, a projection's columns, a CASE's arms) in the
// execution's working memory (Working): bounded by MemoryLimit, but never
// below vectorized.MaxComputedStrings, and past its first 4 MiB reserved
// in the Pool; past either, evaluation fails with ErrMemoryLimit.
//
// # Parallelism
//
// Gather runs child pipelines on goroutines (at most Context.Parallelism
// at a time); ParallelHashAggregate splits groups between workers by key
// hash; a hash join past its first probe batch probes on Context.Workers
// goroutines sharing its build table (not right/full, spilled or
// KeepLeftOrder joins), so its output order is arbitrary. Batches cross
// goroutines Retained; allocators must be safe for concurrent use
// (arrow-go's are).
//
// # Semantics
//
// SQL three-valued logic throughout: Filter keeps rows whose predicate is
// true; filters, join residuals and aggregate FILTERs evaluate chains of
// ANDs and of ORs operand by operand, each only on the rows the earlier
// ones leave undecided (so an operand fails only on such rows); AND/OR/NOT
// are Kleene; a comparison with a constant that is exactly a value of the
// other operand's type runs in that type (the column is not cast);
// equality join keys never match NULL; GROUP BY puts NULLs in one group.
// Overflow and division by zero are errors, never wrapped numbers. Join
// output is left columns then right columns; semi and anti joins return the
// left columns only.
package exec
