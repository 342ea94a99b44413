package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
)

// queryInt runs a query whose first row's first column is an integer.
func queryInt(t *testing.T, sess *engine.Session, text string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rows(t, sess, text)[0][0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustCount(t *testing.T, sess *engine.Session, text string, want int64) {
	t.Helper()
	n, err := exec(context.Background(), sess, nil, text)
	if err != nil || n != want {
		t.Fatalf("%s: %d, %v; want %d", text, n, err, want)
	}
}

// TestExpireSnapshotsArguments: sys.expire_snapshots takes Paimon's
// retain_max, retain_min, older_than and max_deletes for one call.
func TestExpireSnapshotsArguments(t *testing.T) {
	dir := t.TempDir()
	e, mem := openEngine(t, dir)
	defer closeEngine(t, e, mem)
	sess := e.NewSession()
	snapshots := func() int {
		names, err := filepath.Glob(filepath.Join(dir, "default.db", "e", "snapshot", "snapshot-*"))
		if err != nil {
			t.Fatal(err)
		}
		return len(names)
	}
	// Compaction is off: each INSERT is one snapshot.
	mustCount(t, sess, "CREATE TABLE e (k BIGINT) WITH ('write-only' = 'true')", 0)
	for range 6 {
		mustCount(t, sess, "INSERT INTO e VALUES (1)", 1)
	}
	// The table keeps at least 10 (snapshot.num-retained.min).
	if _, err := exec(context.Background(), sess, nil, "CALL sys.expire_snapshots(`table` => 'e', retain_max => 2)"); err == nil || !strings.Contains(err.Error(), "below retain_min") {
		t.Fatalf("retain_max below the table's retain_min: %v", err)
	}
	mustCount(t, sess, "CALL sys.expire_snapshots('e', retain_max => 5, retain_min => 1, max_deletes => 1)", 1)
	mustCount(t, sess, "CALL sys.expire_snapshots('e', retain_max => 2, retain_min => 1)", 3)
	for range 3 {
		mustCount(t, sess, "INSERT INTO e VALUES (1)", 1)
	}
	mustCount(t, sess, "CALL sys.expire_snapshots('e', retain_min => 1, older_than => '2000-01-01 00:00:00')", 0)
	mustCount(t, sess, "CALL sys.expire_snapshots('e', retain_min => 1, older_than => '2100-01-01 00:00:00')", 4)
	if n := snapshots(); n != 1 {
		t.Fatalf("%d snapshots left, want 1", n)
	}
	if _, n, err := query(context.Background(), sess, "SELECT * FROM e"); err != nil || n != 9 {
		t.Fatalf("after expiry: %d rows, %v", n, err)
	}
}

// TestRemoveOrphanFiles: sys.remove_orphan_files removes unreferenced
// files older than its age guard (a day, or older_than), never younger
// ones (a commit in flight) nor referenced ones.
func TestRemoveOrphanFiles(t *testing.T) {
	dir := t.TempDir()
	e, mem := openEngine(t, dir)
	defer closeEngine(t, e, mem)
	sess := e.NewSession()
	mustCount(t, sess, "CREATE TABLE o (k BIGINT)", 0)
	mustCount(t, sess, "INSERT INTO o VALUES (1), (2)", 2)
	bucket := filepath.Join(dir, "default.db", "o", "bucket-0")
	orphan := func(name string, age time.Duration) {
		p := filepath.Join(bucket, name)
		if err := os.WriteFile(p, []byte("left by a crash"), 0o644); err != nil {
			t.Fatal(err)
		}
		then := time.Now().Add(-age)
		if err := os.Chtimes(p, then, then); err != nil {
			t.Fatal(err)
		}
	}
	// Referenced files are older than a day too, as far as the guard knows.
	files, _ := filepath.Glob(filepath.Join(bucket, "data-*.parquet"))
	for _, f := range files {
		old := time.Now().Add(-72 * time.Hour)
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	orphan("data-old-0.parquet", 48*time.Hour)
	orphan("data-young-0.parquet", time.Hour)
	disk := func() int64 {
		return queryInt(t, sess, "SELECT disk_size_in_bytes - file_size_in_bytes FROM sys.tables WHERE database_name = 'default' AND table_name = 'o'")
	}
	before := disk()
	mustCount(t, sess, "CALL sys.remove_orphan_files('default.o')", 1)
	if got, want := before-disk(), int64(len("left by a crash")); got != want {
		t.Fatalf("sys.tables: disk_size_in_bytes went down by %d, want %d", got, want)
	}
	if _, err := os.Stat(filepath.Join(bucket, "data-young-0.parquet")); err != nil {
		t.Fatalf("the young orphan went: %v", err)
	}
	if _, err := exec(context.Background(), sess, nil, "CALL sys.remove_orphan_files('o', '2999-01-01 00:00:00')"); err == nil {
		t.Fatal("older_than in the future was accepted")
	}
	halfHour := time.Now().UTC().Add(-30 * time.Minute).Format("2006-01-02 15:04:05")
	mustCount(t, sess, "CALL sys.remove_orphan_files(`table` => 'o', older_than => '"+halfHour+"')", 1)
	if _, n, err := query(context.Background(), sess, "SELECT * FROM o"); err != nil || n != 2 {
		t.Fatalf("after orphan removal: %d rows, %v", n, err)
	}
}
