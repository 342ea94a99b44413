package stream

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// TestJoinEncodedSidesMatchBoxed runs random changelogs through every
// kind of join, with and without a residual, once with each side's rows
// boxed and once held encoded (InsertOnly; the inputs also retract now
// and then, which an insert-only side must still handle): both emit the
// same changes at every marker. The values are the awkward ones: NULLs,
// strings holding 0x00, -0 and NaN, decimals (which take the boxed
// path inside an unpacker). Under a tiny budget the rows spill at every
// marker and are read back.
func TestJoinEncodedSidesMatchBoxed(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	dec := &arrow.Decimal128Type{Precision: 10, Scale: 2}
	fields := func(p string) []arrow.Field {
		return []arrow.Field{
			{Name: p + "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: p + "s", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: p + "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			{Name: p + "t", Type: ts, Nullable: true},
			{Name: p + "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			{Name: p + "d", Type: dec, Nullable: true},
		}
	}
	strs := []string{"", "a", "a\x00", "\x00", "b\x00\x01c", "zz"}
	floats := []float64{math.Copysign(0, -1), 0, math.NaN(), 1.5}
	// value appends a random value (NULL one time in eight) of column c.
	value := func(b array.Builder, c int) {
		if rng.IntN(8) == 0 {
			b.AppendNull()
			return
		}
		switch c {
		case 0:
			b.(*array.Int64Builder).Append(rng.Int64N(4))
		case 1:
			b.(*array.StringBuilder).Append(strs[rng.IntN(len(strs))])
		case 2:
			b.(*array.Float64Builder).Append(floats[rng.IntN(len(floats))])
		case 3:
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(rng.Int64N(3)))
		case 4:
			b.(*array.Int32Builder).Append(int32(rng.IntN(3) - 1))
		case 5:
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(3) - 1))
		}
	}
	// changes builds one side's snapshots: rows inserted, and now and
	// then a row inserted before retracted (-D, copied whole).
	changes := func(mem memory.Allocator, fs []arrow.Field, idx int) *replay {
		r := &replay{schema: withKind(fs)}
		var kept [][2]int // (chunk, row) of rows inserted and not retracted
		for s := range 5 {
			pos := make(Pos, 2)
			pos[idx] = int64(s + 1)
			b := array.NewRecordBuilder(mem, r.schema)
			for range rng.IntN(8) {
				if len(kept) > 0 && rng.IntN(4) == 0 {
					k := rng.IntN(len(kept))
					from := r.chunks[kept[k][0]].Batch
					b.Field(0).(*array.StringBuilder).Append(kindDelete)
					for c := range fs {
						if err := b.Field(c + 1).AppendValueFromString(from.Column(c + 1).ValueStr(kept[k][1])); err != nil {
							t.Fatal(err)
						}
					}
					kept = slices.Delete(kept, k, k+1)
					continue
				}
				b.Field(0).(*array.StringBuilder).Append(kindInsert)
				for c := range fs {
					value(b.Field(c+1), c)
				}
			}
			if n := b.Field(0).Len(); n > 0 {
				r.chunks = append(r.chunks, Chunk{Batch: b.NewRecordBatch(), Pos: pos})
				for i := range n {
					if r.chunks[len(r.chunks)-1].Batch.Column(0).ValueStr(i) == kindInsert {
						kept = append(kept, [2]int{len(r.chunks) - 1, i})
					}
				}
			}
			b.Release()
			r.chunks = append(r.chunks, Chunk{Pos: pos})
		}
		return r
	}
	// The pair's columns: kind, left k s f t i d, right k s f t i d.
	less, err := exec.NewCall("less", exec.NewColumn(2, arrow.BinaryTypes.String, "ls"), exec.NewColumn(8, arrow.BinaryTypes.String, "rs"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := []exec.JoinType{exec.InnerJoin, exec.LeftJoin, exec.RightJoin, exec.FullJoin, exec.SemiJoin, exec.AntiJoin}
	for round := range 30 {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ec := exec.NewContext(mem)
		ec.BatchSize = 1 + rng.IntN(4)
		ec.TempDir = t.TempDir()
		var limit int64
		if rng.IntN(2) == 0 {
			limit = 512
		}
		left, right := changes(mem, fields("l"), 0), changes(mem, fields("r"), 1)
		kind := kinds[rng.IntN(len(kinds))]
		var residual exec.Expr
		if rng.IntN(2) == 0 {
			residual = less
		}
		leftFirst := rng.IntN(2) == 0
		run := func(insertOnly bool) []string {
			// Each run replays its own copy of the chunks.
			l, r := left.again(), right.again()
			first, then := l, r
			if !leftFirst {
				first, then = r, l
			}
			first.done = make(chan struct{})
			then.wait = first.done
			spec := JoinSpec{Kind: kind, LeftKeys: []exec.Expr{col(1, "lk")}, RightKeys: []exec.Expr{col(1, "rk")}, Residual: residual, InsertOnly: [2]bool{insertOnly, insertOnly}}
			j, err := NewJoin(ec, l, r, spec, NewBudget(limit))
			if err != nil {
				t.Fatal(err)
			}
			return markerGroups(collect(t, j))
		}
		boxed, encoded := run(false), run(true)
		if !slices.Equal(boxed, encoded) {
			t.Fatalf("round %d, %s join, residual %v, left first %v, budget %d: boxed sides emit\n%s\nencoded sides\n%s",
				round, kind, residual != nil, leftFirst, limit, strings.Join(boxed, "\n"), strings.Join(encoded, "\n"))
		}
		left.Close()
		right.Close()
		mem.AssertSize(t, 0)
	}
}

// markerGroups turns collect's lines into one line per marker that
// follows rows: the rows emitted since the last one, sorted (a boxed
// side's copies of a row are one entry, an insert-only side's are entries
// of their own, so they may come in another order). Positions are left
// out: where the first side's last marker falls among the other side's
// depends on timing.
func markerGroups(lines []string) []string {
	var out, rows []string
	for _, l := range lines {
		_, rest, _ := strings.Cut(l, ": ")
		if rest != "marker" {
			rows = append(rows, strings.Split(rest, " | ")...)
			continue
		}
		if len(rows) > 0 {
			slices.Sort(rows)
			out = append(out, strings.Join(rows, " | "))
			rows = rows[:0]
		}
	}
	return out
}
