package exec_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// probeRun is one run of a hash join over left and right split into
// batches of at most maxIn rows.
type probeRun struct {
	rows     []string
	parallel bool // probe workers started
	err      error
}

// runHashJoin runs ctor's join under a checked allocator and checks that
// nothing leaks and no goroutine outlives Close.
func runHashJoin(t *testing.T, rng *rand.Rand, ec func(memory.Allocator) *exec.Context, l, r exectest.Table, maxIn int, ctor exectest.Ctor) probeRun {
	t.Helper()
	before := runtime.NumGoroutine()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := ec(mem)
	var ops []exec.Operator
	for _, tb := range []exectest.Table{l, r} {
		bs, err := tb.Split(mem, rng, maxIn, true)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, exectest.Source(c, tb.Schema, bs))
	}
	op, err := ctor(c, ops)
	if err != nil {
		t.Fatal(err)
	}
	var run probeRun
	ctx := context.Background()
	if run.err = op.Open(ctx); run.err == nil {
		for {
			b, err := exec.Next(ctx, op)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					run.err = err
				}
				break
			}
			run.rows = append(run.rows, exectest.BatchRows(b)...)
		}
	}
	run.parallel = exec.ProbedInParallel(op)
	if err := op.Close(); err != nil && run.err == nil {
		run.err = err
	}
	waitGoroutines(t, before)
	return run
}

// waitGoroutines fails unless the goroutine count falls back to at most n
// within a second (Close must have waited for the workers).
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	for i := 0; runtime.NumGoroutine() > n; i++ {
		if i == 100 {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestParallelProbeMatchesSerial compares the hash join probing on
// several goroutines with the same join kept serial (KeepLeftOrder) as
// multisets: random int and string keys with NULLs and duplicates,
// residuals on ints and strings, every join type that may probe in
// parallel, many small left batches, random batch sizes and worker
// counts. Every run that reads more than one left batch must have
// probed in parallel, and the serial runs must keep the left order (but
// for a left join's unmatched rows, which follow their batch's pairs).
func TestParallelProbeMatchesSerial(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 18))
	keySets := [][]string{{"k"}, {"s"}, {"k", "s"}, {"j"}, {"k", "j"}}
	types := []exec.JoinType{exec.InnerJoin, exec.LeftJoin, exec.SemiJoin, exec.AntiJoin, exec.NullAwareAntiJoin}
	parallelRuns := 0
	iters := 60
	if raceEnabled {
		iters = 20 // fewer random joins under -race (each still probes on several goroutines); the plain pass runs 60
	}
	for iter := 0; iter < iters; iter++ {
		domain := 1 + rng.IntN(30)
		mult := []int64{1, 1<<33 + 7}[iter%2]
		l := joinTable(t, rng, 200+rng.IntN(800), domain, mult)
		r := joinTable(t, rng, 1+rng.IntN(60), domain, mult)
		// seq numbers the left rows, to check the serial order.
		l.Schema = arrow.NewSchema(append(l.Schema.Fields(), arrow.Field{Name: "seq", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), nil)
		for i := range l.Rows {
			l.Rows[i] = append(l.Rows[i], fmt.Sprint(i))
		}
		s, rs := l.Schema, r.Schema
		nl := s.NumFields()
		right := func(c string) exec.Expr { return rightColumn(s, rs, c) }
		keys := keySets[rng.IntN(len(keySets))]
		typ := types[rng.IntN(len(types))]
		if typ == exec.NullAwareAntiJoin {
			keys = keys[:1]
		}
		var residual exec.Expr
		switch rng.IntN(3) {
		case 1:
			residual = call(t, "less", col(s, "v"), right("v"))
		case 2:
			residual = call(t, "not_equal", col(s, "j"), right("j"))
		}
		if typ == exec.NullAwareAntiJoin {
			residual = nil
		}
		var lk, rk []exec.Expr
		for _, k := range keys {
			lk, rk = append(lk, col(s, k)), append(rk, col(rs, k))
		}
		workers, batch, maxIn := 2+rng.IntN(3), 1+rng.IntN(64), 1+rng.IntN(32)
		ec := func(mem memory.Allocator) *exec.Context {
			c := exec.NewContext(mem)
			c.Parallelism, c.BatchSize = workers, batch
			return c
		}
		join := func(keep bool) exectest.Ctor {
			return func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				op, err := exec.NewHashJoin(ec, ops[0], ops[1], typ, lk, rk, residual)
				if keep {
					op = exec.KeepLeftOrder(op)
				}
				return op, err
			}
		}
		name := fmt.Sprintf("%d/%s/%v/residual=%v/workers=%d/batch=%d/in=%d", iter, typ, keys, residual, workers, batch, maxIn)
		par := runHashJoin(t, rng, ec, l, r, maxIn, join(false))
		ser := runHashJoin(t, rng, ec, l, r, maxIn, join(true))
		if par.err != nil || ser.err != nil {
			t.Fatalf("%s: parallel: %v, serial: %v", name, par.err, ser.err)
		}
		if ser.parallel {
			t.Fatalf("%s: KeepLeftOrder probed in parallel", name)
		}
		if !exectest.Unordered(par.rows, ser.rows) {
			t.Fatalf("%s: parallel and serial differ:\nparallel %q\nserial   %q", name, par.rows, ser.rows)
		}
		// A left join adds a batch's unmatched rows after its pairs.
		if typ != exec.LeftJoin && !slices.IsSortedFunc(ser.rows, func(a, b string) int { return seqOf(a, nl) - seqOf(b, nl) }) {
			t.Fatalf("%s: the serial probe did not keep the left order", name)
		}
		// A probe reading more than one left batch must have started the
		// workers. Only an inner or semi join whose build side is empty
		// (the semi-join reduction of a probe side under maxReduceRows
		// may leave none) reads no left batch.
		maybeUnread := len(ser.rows) == 0 && (typ == exec.InnerJoin || typ == exec.SemiJoin)
		if wantPar := len(l.Rows) > maxIn; par.parallel != wantPar && !maybeUnread {
			t.Fatalf("%s: probed in parallel = %v, want %v", name, par.parallel, wantPar)
		}
		if par.parallel {
			parallelRuns++
		}
	}
	if parallelRuns == 0 {
		t.Fatal("no run probed in parallel")
	}
}

// seqOf reads column seq (the nl-th, 1-based) of a formatted row.
func seqOf(row string, nl int) int {
	var v int
	fmt.Sscan(strings.Split(row, " | ")[nl-1], &v)
	return v
}

// errorJoinTables makes a probe side of 40 batches of 50 rows whose only
// row with key 7 is in batch 30, and a build side with keys 0..49 whose
// v is the key: the residual l.v / r.v > 0 divides by zero for that row
// alone, so on a worker, never on the serially probed first batch.
func errorJoinTables(t *testing.T) (l, r exectest.Table) {
	l = exectest.NewTable(t, "k:int64, v:int64")
	for i := 0; i < 2000; i++ {
		k := i % 50
		if k == 7 && i != 1507 {
			k = 8
		}
		l.Rows = append(l.Rows, []string{fmt.Sprint(k), fmt.Sprint(i)})
	}
	r = exectest.NewTable(t, "k:int64, v:int64")
	for k := 0; k < 50; k++ {
		r.Rows = append(r.Rows, []string{fmt.Sprint(k), fmt.Sprint(k - 7)})
	}
	return l, r
}

// TestParallelProbeError: a worker's error (division by zero on one row
// of a late batch) is the join's error; nothing leaks and no worker
// outlives Close (runHashJoin checks both).
func TestParallelProbeError(t *testing.T) {
	l, r := errorJoinTables(t)
	s := l.Schema
	rv := exec.NewColumn(3, arrow.PrimitiveTypes.Int64, "r.v")
	residual := call(t, "greater", call(t, "divide", col(s, "v"), rv), lit(int64(0)))
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, typ := range []exec.JoinType{exec.InnerJoin, exec.LeftJoin, exec.SemiJoin, exec.AntiJoin} {
		for _, batch := range []int{1, 7, 1024} {
			ec := func(mem memory.Allocator) *exec.Context {
				c := exec.NewContext(mem)
				c.Parallelism, c.BatchSize = 2, batch
				return c
			}
			run := runHashJoin(t, rng, ec, l, r, 50, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				return exec.NewHashJoin(ec, ops[0], ops[1], typ, []exec.Expr{col(s, "k")}, []exec.Expr{col(s, "k")}, residual)
			})
			if run.err == nil || !strings.Contains(run.err.Error(), "division by zero") {
				t.Fatalf("%s, batch %d: want division by zero, got %v after %d rows", typ, batch, run.err, len(run.rows))
			}
			if !run.parallel {
				t.Fatalf("%s, batch %d: the error was not raised by a probe worker", typ, batch)
			}
		}
	}
}

// endless yields the same batch of n rows forever (until canceled).
type endless struct{ b arrow.RecordBatch }

func (e *endless) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return e.b, nil
}

func (e *endless) Close() error { return nil }

// TestParallelProbeCancel: canceling the query stops the probe workers of
// an endless probe side promptly, whether the consumer is waiting in Next
// or has stopped reading (workers blocked on a full channel), and Close
// waits for them with nothing leaked.
func TestParallelProbeCancel(t *testing.T) {
	for _, reading := range []bool{true, false} {
		t.Run(fmt.Sprintf("reading=%v", reading), func(t *testing.T) {
			before := runtime.NumGoroutine()
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ec := exec.NewContext(mem)
			ec.Parallelism = 2
			tb := exectest.NewTable(t, "k:int64, v:int64")
			for i := 0; i < 100; i++ {
				tb.Rows = append(tb.Rows, []string{fmt.Sprint(i % 10), fmt.Sprint(i)})
			}
			lb, err := tb.Batch(mem, 0, 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer lb.Release()
			left := exec.NewSource(ec, tb.Schema, func(context.Context) (exec.BatchSource, error) { return &endless{b: lb}, nil })
			rb, err := tb.Batch(mem, 0, 10, 0)
			if err != nil {
				t.Fatal(err)
			}
			right := exectest.Source(ec, tb.Schema, []arrow.RecordBatch{rb})
			k := col(tb.Schema, "k")
			op, err := exec.NewHashJoin(ec, left, right, exec.InnerJoin, []exec.Expr{k}, []exec.Expr{k}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := op.Open(ctx); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 20; i++ {
				if _, err := exec.Next(ctx, op); err != nil {
					t.Fatal(err)
				}
			}
			if !exec.ProbedInParallel(op) {
				t.Fatal("the join did not probe in parallel")
			}
			start := time.Now()
			if reading {
				go func() {
					time.Sleep(20 * time.Millisecond)
					cancel()
				}()
				for {
					_, err := exec.Next(ctx, op)
					if err != nil {
						if !errors.Is(err, context.Canceled) {
							t.Fatalf("want context.Canceled, got %v", err)
						}
						break
					}
				}
			} else {
				time.Sleep(20 * time.Millisecond) // the workers fill the channel and block
				cancel()
			}
			if err := op.Close(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("canceling took %v", d)
			}
			waitGoroutines(t, before)
		})
	}
}
