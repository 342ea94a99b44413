package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/flightd/flightd/engine"
)

// TestTxnSnapshotExpiredByOtherNode: a transaction's hold on its snapshot
// covers its own process only. Another node over the same warehouse that
// compacts and expires the table removes the files the transaction reads:
// its next read is a serialization failure (40001), to retry, not an
// internal error naming the server's path (as it was until 2026-12-05);
// the retried transaction reads the latest rows.
func TestTxnSnapshotExpiredByOtherNode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, ma := openEngine(t, dir)
	defer closeEngine(t, a, ma)
	b, mb := openEngine(t, dir)
	defer closeEngine(t, b, mb)
	sa, sb := a.NewSession(), b.NewSession()
	mustExec(t, sa, "CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('write-only' = 'true')")
	mustExec(t, sa, "INSERT INTO u VALUES (1, 1)")
	tx := a.Begin()
	if got, err := queryRows(ctx, sa, tx, "SELECT count(*) FROM u"); err != nil || fmt.Sprint(got) != "[[1]]" {
		t.Fatalf("first read: %v, %v", got, err)
	}
	for i := range 3 {
		mustExec(t, sb, fmt.Sprintf("INSERT INTO u VALUES (%d, 1)", i+10))
	}
	mustExec(t, sb, "CALL sys.compact(table => 'u')")
	mustExec(t, sb, "CALL sys.expire_snapshots(table => 'u', retain_max => 1, retain_min => 1)")
	_, err := queryRows(ctx, sa, tx, "SELECT count(*) FROM u")
	if engine.SQLState(err) != "40001" || strings.Contains(fmt.Sprint(err), dir) {
		t.Fatalf("read after the other node's expiry: %v (SQLSTATE %q), want 40001 without the path", err, engine.SQLState(err))
	}
	if err := a.Rollback(tx.ID()); err != nil {
		t.Fatal(err)
	}
	tx = a.Begin()
	if got, err := queryRows(ctx, sa, tx, "SELECT count(*) FROM u"); err != nil || fmt.Sprint(got) != "[[4]]" {
		t.Fatalf("the retried transaction: %v, %v; want 4 rows", got, err)
	}
	if err := a.Commit(ctx, tx.ID()); err != nil {
		t.Fatal(err)
	}
}
