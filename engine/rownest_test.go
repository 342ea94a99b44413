package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestNestedRowsPlanFast: ROW constants nested 300 deep (near the
// parser's depth limit) plan and run in well under a second, and their
// column prints linearly. Until 2026-12-05 folding them cost depth^3
// (arrow-go made each level's struct array again for every level above)
// and printing one took 1.1 MB: 300 deep took 1.4 s in-process and 5.8 s
// through Flight SQL.
func TestNestedRowsPlanFast(t *testing.T) {
	sess := newEngine(t).NewSession()
	const depth = 300
	q := "SELECT " + strings.Repeat("ROW(", depth) + "1" + strings.Repeat(")", depth)
	limit := 500 * time.Millisecond
	if raceEnabled {
		limit *= 4
	}
	start := time.Now()
	if _, n, err := query(context.Background(), sess, q); err != nil || n != 1 {
		t.Fatalf("%d nested ROWs: %d rows, %v", depth, n, err)
	}
	if d := time.Since(start); d > limit {
		t.Fatalf("%d nested ROWs took %v to plan and run (limit %v)", depth, d, limit)
	}
	got := rows(t, sess, "SELECT "+strings.Repeat("ROW(", 3)+"1"+strings.Repeat(")", 3))
	if len(got) != 1 || got[0][0] != `{"EXPR$0":{"EXPR$0":{"EXPR$0":1}}}` {
		t.Errorf("ROW(ROW(ROW(1))) = %v", got)
	}
}
