// Package exectest is the operator test harness: it runs an operator over
// the same input under many batch sizes, random batch boundaries with
// non-zero array offsets, two consumer styles, cancellation and double
// Close, each against a checked allocator, and compares the output rows.
//
//	Table (schema + rows as text) ──► Source (sliced batches) ──► ctor ──► rows
package exectest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// ParseType parses a type name: bool int8 int16 int32 int64 uint8..uint64
// float32 float64 string large_string binary date timestamp timestamp_s
// timestamp_ms timestamp_ns timestamptz time64 decimal(p,s) interval null.
func ParseType(s string) (arrow.DataType, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if strings.HasPrefix(s, "decimal(") && strings.HasSuffix(s, ")") {
		ps := strings.Split(strings.TrimSuffix(strings.TrimPrefix(s, "decimal("), ")"), ",")
		if len(ps) != 2 {
			return nil, fmt.Errorf("bad decimal type %q", s)
		}
		p, err1 := strconv.Atoi(strings.TrimSpace(ps[0]))
		sc, err2 := strconv.Atoi(strings.TrimSpace(ps[1]))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad decimal type %q", s)
		}
		return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(sc)}, nil
	}
	t, ok := map[string]arrow.DataType{
		"bool": arrow.FixedWidthTypes.Boolean, "int8": arrow.PrimitiveTypes.Int8, "int16": arrow.PrimitiveTypes.Int16,
		"int32": arrow.PrimitiveTypes.Int32, "int64": arrow.PrimitiveTypes.Int64, "uint8": arrow.PrimitiveTypes.Uint8,
		"uint16": arrow.PrimitiveTypes.Uint16, "uint32": arrow.PrimitiveTypes.Uint32, "uint64": arrow.PrimitiveTypes.Uint64,
		"float32": arrow.PrimitiveTypes.Float32, "float64": arrow.PrimitiveTypes.Float64, "string": arrow.BinaryTypes.String,
		"large_string": arrow.BinaryTypes.LargeString, "binary": arrow.BinaryTypes.Binary, "date": arrow.FixedWidthTypes.Date32,
		"timestamp": &arrow.TimestampType{Unit: arrow.Microsecond}, "timestamp_s": &arrow.TimestampType{Unit: arrow.Second},
		"timestamp_ms": &arrow.TimestampType{Unit: arrow.Millisecond}, "timestamp_ns": &arrow.TimestampType{Unit: arrow.Nanosecond},
		"timestamptz": &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		"interval":    arrow.FixedWidthTypes.MonthDayNanoInterval, "null": arrow.Null, "time64": arrow.FixedWidthTypes.Time64us,
	}[s]
	if !ok {
		return nil, fmt.Errorf("unknown type %q", s)
	}
	return t, nil
}

// ParseSchema parses "a:int64, b:string" into a schema of nullable fields.
func ParseSchema(s string) (*arrow.Schema, error) {
	var fields []arrow.Field
	depth, start := 0, 0
	var parts []string
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, s[start:])
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			continue
		}
		name, typ, ok := strings.Cut(p, ":")
		if !ok {
			return nil, fmt.Errorf("field %q is not name:type", p)
		}
		t, err := ParseType(typ)
		if err != nil {
			return nil, err
		}
		fields = append(fields, arrow.Field{Name: strings.TrimSpace(name), Type: t, Nullable: true})
	}
	return arrow.NewSchema(fields, nil), nil
}

// Table is test input: a schema and rows of cell text ("NULL" = NULL).
type Table struct {
	Schema *arrow.Schema
	Rows   [][]string
}

// NewTable parses a schema and rows written as "v1 | v2 | ..." lines.
func NewTable(t testing.TB, schema string, rows ...string) Table {
	t.Helper()
	s, err := ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	tb := Table{Schema: s}
	for _, r := range rows {
		cells := strings.Split(r, "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != s.NumFields() {
			t.Fatalf("row %q has %d cells, schema has %d fields", r, len(cells), s.NumFields())
		}
		tb.Rows = append(tb.Rows, cells)
	}
	return tb
}

// Column builds column c of rows [lo, hi) from cell text.
func (tb Table) column(mem memory.Allocator, c, lo, hi int) (arrow.Array, error) {
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	for _, r := range tb.Rows[lo:hi] {
		if r[c] == "NULL" {
			sb.AppendNull()
		} else {
			sb.Append(r[c])
		}
	}
	s := sb.NewArray()
	defer s.Release()
	return vectorized.Cast(mem, s, tb.Schema.Field(c).Type)
}

// Batch builds rows [lo, hi) as one batch; pad > 0 adds that many junk rows
// on each side and slices them away, so arrays have a non-zero offset.
func (tb Table) Batch(mem memory.Allocator, lo, hi, pad int) (arrow.RecordBatch, error) {
	padded := Table{Schema: tb.Schema}
	for i := 0; i < pad; i++ {
		padded.Rows = append(padded.Rows, tb.Rows[lo])
	}
	padded.Rows = append(padded.Rows, tb.Rows[lo:hi]...)
	for i := 0; i < pad; i++ {
		padded.Rows = append(padded.Rows, tb.Rows[hi-1])
	}
	cols := make([]arrow.Array, tb.Schema.NumFields())
	for c := range cols {
		a, err := padded.column(mem, c, 0, len(padded.Rows))
		if err != nil {
			for _, x := range cols[:c] {
				x.Release()
			}
			return nil, err
		}
		cols[c] = a
	}
	full := array.NewRecordBatch(tb.Schema, cols, int64(len(padded.Rows)))
	for _, x := range cols {
		x.Release()
	}
	defer full.Release()
	return full.NewSlice(int64(pad), int64(pad+hi-lo)), nil
}

// Split cuts the table into batches: sizes drawn from rng in [1, max],
// padded (sliced) when pad is true.
func (tb Table) Split(mem memory.Allocator, rng *rand.Rand, maxRows int, pad bool) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	for lo := 0; lo < len(tb.Rows); {
		n := 1 + rng.IntN(max(maxRows, 1))
		hi := min(lo+n, len(tb.Rows))
		p := 0
		if pad {
			p = 1 + rng.IntN(3)
		}
		b, err := tb.Batch(mem, lo, hi, p)
		if err != nil {
			for _, x := range out {
				x.Release()
			}
			return nil, err
		}
		out = append(out, b)
		lo = hi
	}
	return out, nil
}

type sliceSource struct {
	batches []arrow.RecordBatch
	pos     int
	closed  bool
}

func (s *sliceSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.pos >= len(s.batches) {
		return nil, io.EOF
	}
	s.pos++
	return s.batches[s.pos-1], nil
}

func (s *sliceSource) Close() error {
	if !s.closed {
		s.closed = true
		for _, b := range s.batches {
			b.Release()
		}
	}
	return nil
}

// Source returns an operator yielding batches (ownership passes to it; it
// releases them at Close, even if it was never opened).
func Source(ec *exec.Context, schema *arrow.Schema, batches []arrow.RecordBatch) exec.Operator {
	src := &sliceSource{batches: batches}
	return &ownedSource{
		Operator: exec.NewSource(ec, schema, func(context.Context) (exec.BatchSource, error) { return src, nil }),
		src:      src,
	}
}

type ownedSource struct {
	exec.Operator
	src *sliceSource
}

func (o *ownedSource) Close() error {
	err := o.Operator.Close()
	o.src.Close()
	return err
}

// Rows formats the rows of batches as "v1 | v2" strings.
func Rows(batches []arrow.RecordBatch) []string {
	var out []string
	for _, b := range batches {
		out = append(out, BatchRows(b)...)
	}
	return out
}

// BatchRows formats one batch's rows.
func BatchRows(b arrow.RecordBatch) []string {
	out := make([]string, 0, b.NumRows())
	cells := make([]string, b.NumCols())
	for r := 0; r < int(b.NumRows()); r++ {
		for c := range cells {
			cells[c] = vectorized.FormatValue(b.Column(c), r)
		}
		out = append(out, strings.Join(cells, " | "))
	}
	return out
}

// Verifier compares produced rows with the expected ones.
type Verifier func(got, want []string) bool

// Ordered requires the exact sequence.
func Ordered(got, want []string) bool { return slices.Equal(got, want) }

// Unordered compares rows as multisets.
func Unordered(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

// OrderedOn accepts any order of got that keeps want's order of the given
// columns (0-based): the rows must be equal as multisets and the sequence
// of their key columns equal. It verifies sorts whose ties may come in any
// order.
func OrderedOn(cols ...int) Verifier {
	keys := func(rows []string) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			cells := strings.Split(r, " | ")
			k := make([]string, len(cols))
			for j, c := range cols {
				if c < len(cells) {
					k[j] = cells[c]
				}
			}
			out[i] = strings.Join(k, " | ")
		}
		return out
	}
	return func(got, want []string) bool {
		return Unordered(got, want) && slices.Equal(keys(got), keys(want))
	}
}

// Ctor builds the operator under test over its inputs.
type Ctor func(ec *exec.Context, inputs []exec.Operator) (exec.Operator, error)

type config struct {
	name      string
	batchSize int
	maxInput  int
	pad       bool
	retainAll bool
}

// Seed returns the seed for randomized runs: FLIGHTD_SEED if set, else a
// fresh one; it is logged so a failure can be replayed.
func Seed(t testing.TB) uint64 {
	t.Helper()
	if s := os.Getenv("FLIGHTD_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("bad FLIGHTD_SEED: %v", err)
		}
		return v
	}
	v := rand.Uint64()
	t.Logf("seed %d (replay with FLIGHTD_SEED=%d)", v, v)
	return v
}

// Run runs ctor over inputs under every harness configuration and checks
// the output against want with verify. An expected error is given as
// want = []string{"error: <substring>"}.
func Run(t *testing.T, inputs []Table, want []string, verify Verifier, ctor Ctor) {
	t.Helper()
	seed := Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	configs := []config{
		{name: "default", batchSize: exec.DefaultBatchSize, maxInput: 1024},
		{name: "bs1", batchSize: 1, maxInput: 1, pad: true},
		{name: "bs3-sliced", batchSize: 3, maxInput: 4, pad: true},
		{name: "random-sliced", batchSize: 1 + rng.IntN(16), maxInput: 1 + rng.IntN(16), pad: true},
		{name: "retain-all", batchSize: 2, maxInput: 5, pad: true, retainAll: true},
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			t.Helper()
			got, err := runOnce(t, inputs, cfg, rng, ctor, context.Background())
			if len(want) == 1 && strings.HasPrefix(want[0], "error: ") {
				if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(want[0], "error: ")) {
					t.Fatalf("want %s, got rows %q, err %v", want[0], got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("batch size %d: %v", cfg.batchSize, err)
			}
			if !verify(got, want) {
				t.Fatalf("batch size %d:\ngot  %q\nwant %q", cfg.batchSize, got, want)
			}
		})
	}
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		got, err := runOnce(t, inputs, configs[0], rng, ctor, ctx)
		if err == nil && len(got) > 0 {
			t.Fatalf("canceled context still produced %d rows", len(got))
		}
	})
	t.Run("close-without-open", func(t *testing.T) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		ec := exec.NewContext(mem)
		ops := make([]exec.Operator, len(inputs))
		for i, in := range inputs {
			ops[i] = Source(ec, in.Schema, nil)
		}
		op, err := ctor(ec, ops)
		if err != nil {
			return
		}
		if err := op.Close(); err != nil {
			t.Fatal(err)
		}
		if err := op.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// RunNullInjection replaces random cells of the inputs' columns (all of them
// when all is true) with NULL and checks that the operator gives the same
// rows under every configuration, without errors or leaks.
func RunNullInjection(t *testing.T, inputs []Table, verify Verifier, ctor Ctor) {
	t.Helper()
	seed := Seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, all := range []bool{false, true} {
		injected := make([]Table, len(inputs))
		for i, in := range inputs {
			tb := Table{Schema: in.Schema}
			for _, r := range in.Rows {
				r = slices.Clone(r)
				for c := range r {
					if all || rng.IntN(4) == 0 {
						r[c] = "NULL"
					}
				}
				tb.Rows = append(tb.Rows, r)
			}
			injected[i] = tb
		}
		ref, err := runOnce(t, injected, config{batchSize: exec.DefaultBatchSize, maxInput: 1024}, rng, ctor, context.Background())
		if err != nil {
			t.Fatalf("all=%v reference run: %v", all, err)
		}
		for _, cfg := range []config{{batchSize: 1, maxInput: 2, pad: true}, {batchSize: 3, maxInput: 5, pad: true, retainAll: true}} {
			got, err := runOnce(t, injected, cfg, rng, ctor, context.Background())
			if err != nil {
				t.Fatalf("all=%v batch size %d: %v", all, cfg.batchSize, err)
			}
			if !verify(got, ref) {
				t.Fatalf("all=%v batch size %d:\ngot  %q\nwant %q", all, cfg.batchSize, got, ref)
			}
		}
	}
}

func runOnce(t *testing.T, inputs []Table, cfg config, rng *rand.Rand, ctor Ctor, ctx context.Context) (rows []string, err error) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ec.BatchSize = cfg.batchSize
	ops := make([]exec.Operator, len(inputs))
	for i, in := range inputs {
		bs, err := in.Split(mem, rng, cfg.maxInput, cfg.pad)
		if err != nil {
			for _, o := range ops[:i] {
				o.Close()
			}
			return nil, err
		}
		ops[i] = Source(ec, in.Schema, bs)
	}
	op, err := ctor(ec, ops)
	if err != nil {
		for _, o := range ops {
			o.Close()
		}
		return nil, err
	}
	defer func() {
		if cerr := op.Close(); cerr != nil && err == nil {
			err = cerr
		}
		// A second Close must be harmless.
		if cerr := op.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := op.Open(ctx); err != nil {
		return nil, err
	}
	var kept []arrow.RecordBatch
	defer func() {
		for _, b := range kept {
			b.Release()
		}
	}()
	for {
		b, err := exec.Next(ctx, op)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rows, err
		}
		if b.NumRows() == 0 {
			return rows, fmt.Errorf("operator returned a zero-row batch")
		}
		if !b.Schema().Equal(op.Schema()) && !sameTypes(b.Schema(), op.Schema()) {
			return rows, fmt.Errorf("batch schema %s differs from operator schema %s", b.Schema(), op.Schema())
		}
		if cfg.retainAll {
			b.Retain()
			kept = append(kept, b)
		} else {
			rows = append(rows, BatchRows(b)...)
		}
	}
	if cfg.retainAll {
		rows = Rows(kept)
	}
	return rows, nil
}

func sameTypes(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		if !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}
