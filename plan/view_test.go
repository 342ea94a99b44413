package plan_test

import (
	"strings"
	"testing"

	"github.com/flightd/flightd/internal/slt"
	"github.com/flightd/flightd/plan"
)

// TestViewsSurviveRestart reopens the engine over the same directory: the
// view definition comes back from the store.
func TestViewsSurviveRestart(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE DATABASE d; CREATE TABLE d.t (a INT); INSERT INTO d.t VALUES (1), (2), (3); CREATE VIEW d.v (x) AS SELECT a * 10 FROM t WHERE a > 1"); err != nil {
		t.Fatal(err)
	}
	if err := h.SetBatchSize(2); err != nil { // closes and reopens the engine
		t.Fatal(err)
	}
	_, rows, err := h.Query("SELECT x FROM d.v ORDER BY x")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(slt.Render(rows, ""), ","); got != "20,30" {
		t.Fatalf("view after restart: got %s", got)
	}
	_, rows, err = h.Query("SHOW VIEWS FROM d")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(slt.Render(rows, ""), ","); got != "v" {
		t.Fatalf("SHOW VIEWS after restart: got %s", got)
	}
}
