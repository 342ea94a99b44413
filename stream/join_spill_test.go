package stream

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// A join whose state is far over its budget spills keys of both sides to
// disk and reads them back: for every join kind, over random changelogs
// with retractions on both sides, the applied output at every marker
// equals the join of both inputs at the marker's position, in memory and
// under a budget a tenth of the state. At every marker the bytes
// accounted are those the tables and spill indexes hold, the state in
// memory is back under the budget, the spill directory holds no file
// (runs are unlinked) and Close frees everything. The same with sides
// marked insert-only (no index by whole row) that still retract.
func TestJoinSpillsPastBudget(t *testing.T) {
	rng := seeded(t)
	const budget = 2 << 10
	snapshots := 60
	if raceEnabled {
		snapshots = 20 // under -race shorter changelogs (the state still peaks at 25x the budget or more, both inputs pumped on their goroutines); the plain pass makes 60 snapshots
	}
	for _, kind := range []exec.JoinType{exec.InnerJoin, exec.LeftJoin, exec.RightJoin, exec.FullJoin, exec.SemiJoin, exec.AntiJoin} {
		t.Run(kind.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			left, right := randomChangelog(rng, snapshots, 150), randomChangelog(rng, snapshots, 150)
			batch := 1 + rng.Intn(64)
			for _, insertOnly := range []bool{false, true} {
				peak, _ := joinSpillRun(t, mem, kind, left, right, 0, batch, insertOnly)
				if peak < 10*budget {
					t.Fatalf("the state peaks at %d bytes, not 10x the budget of %d", peak, budget)
				}
				_, spilled := joinSpillRun(t, mem, kind, left, right, budget, batch, insertOnly)
				if spilled == 0 {
					t.Fatal("nothing spilled")
				}
				t.Logf("insert-only %v: state peaks at %d bytes in memory; %d keys spilled under a %d-byte budget", insertOnly, peak, spilled, budget)
			}
		})
	}
}

// joinSpillRun joins the changelogs (rows p x y, joined on p) under a
// budget of limit bytes, checks the output at every marker against
// joinModel, and returns the peak state and the entries spilled.
func joinSpillRun(t *testing.T, mem memory.Allocator, kind exec.JoinType, left, right [][]string, limit int64, batchSize int, insertOnly bool) (int64, int64) {
	t.Helper()
	ec := exec.NewContext(mem)
	ec.TempDir = t.TempDir()
	ec.BatchSize = batchSize
	b := NewBudget(limit)
	cols := []string{"p", "x", "y"}
	j, err := NewJoin(ec, int64Changes(t, mem, cols, 0, 2, left...), int64Changes(t, mem, cols, 1, 2, right...),
		JoinSpec{Kind: kind, LeftKeys: []exec.Expr{col(1, "p")}, RightKeys: []exec.Expr{col(1, "p")}, InsertOnly: [2]bool{insertOnly, insertOnly}}, b)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := j.Open(ctx); err != nil {
		t.Fatal(err)
	}
	applied := map[string]int{}
	var peak int64
	for {
		c, err := j.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, b.Used())
		if c.Batch == nil {
			if want := joinModel(kind, applyChanges(left[:c.Pos[0]]), applyChanges(right[:c.Pos[1]])); !maps.Equal(applied, want) {
				t.Fatalf("at %v (budget %d) the applied join is\n%v\nthe join of the inputs\n%v", c.Pos, limit, applied, want)
			}
			// What is accounted is what the tables hold, whichever path
			// (insert, removal, spill, read-back) changed them.
			var indexes, rows int64
			for _, s := range j.sides {
				if s.store != nil {
					indexes += s.store.held
				}
				for k, l := range s.table {
					for _, e := range *l {
						rows += joinRowBytes(k, e)
					}
				}
			}
			if j.held != rows || b.Used() != rows+indexes {
				t.Fatalf("at %v the join accounts %d bytes of rows and the budget %d, the tables hold %d and the indexes %d", c.Pos, j.held, b.Used(), rows, indexes)
			}
			if limit > 0 && b.Used()-indexes > limit {
				t.Fatalf("at %v the state holds %d bytes (%d of them indexes), over the budget of %d", c.Pos, b.Used(), indexes, limit)
			}
			if files, err := os.ReadDir(ec.TempDir); err != nil || len(files) > 0 {
				t.Fatalf("spill directory holds %v (%v)", files, err)
			}
			continue
		}
		for i := range int(c.Batch.NumRows()) {
			var f []string
			for col := 1; col < int(c.Batch.NumCols()); col++ {
				f = append(f, c.Batch.Column(col).ValueStr(i))
			}
			row := strings.Join(f, " ")
			switch c.Batch.Column(0).ValueStr(i) {
			case kindInsert, kindUpdateAfter:
				applied[row]++
			default:
				if applied[row] == 0 {
					t.Fatalf("at %v the join retracts %q, which it does not hold", c.Pos, row)
				}
				if applied[row]--; applied[row] == 0 {
					delete(applied, row)
				}
			}
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if b.Used() != 0 {
		t.Fatalf("budget holds %d bytes after Close", b.Used())
	}
	return peak, ec.SpilledRows()
}

// applyChanges applies snapshots of "kind p x y" changes: the rows held,
// as "p x y" fields.
func applyChanges(snaps [][]string) [][]string {
	held := map[string]int{}
	for _, rows := range snaps {
		for _, r := range rows {
			kind, row, _ := strings.Cut(r, " ")
			if kind == kindInsert || kind == kindUpdateAfter {
				held[row]++
			} else {
				held[row]--
			}
		}
	}
	var out [][]string
	for row, n := range held {
		for range n {
			out = append(out, strings.Fields(strings.ReplaceAll(row, "NULL", "(null)")))
		}
	}
	return out
}

// joinModel is the batch join of left and right on their first column, as
// a multiset of rows rendered as the join's output.
func joinModel(kind exec.JoinType, left, right [][]string) map[string]int {
	out := map[string]int{}
	matched := map[int]bool{} // right rows with a match
	pad := "(null) (null) (null)"
	for _, l := range left {
		m := 0
		for ri, r := range right {
			if l[0] != r[0] || l[0] == "(null)" {
				continue
			}
			m++
			matched[ri] = true
			if kind != exec.SemiJoin && kind != exec.AntiJoin {
				out[strings.Join(l, " ")+" "+strings.Join(r, " ")]++
			}
		}
		switch {
		case kind == exec.SemiJoin && m > 0, kind == exec.AntiJoin && m == 0:
			out[strings.Join(l, " ")]++
		case (kind == exec.LeftJoin || kind == exec.FullJoin) && m == 0:
			out[strings.Join(l, " ")+" "+pad]++
		}
	}
	if kind == exec.RightJoin || kind == exec.FullJoin {
		for ri, r := range right {
			if !matched[ri] {
				out[pad+" "+strings.Join(r, " ")]++
			}
		}
	}
	return out
}
