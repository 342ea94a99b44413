package engine_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightd/flightd/engine"
)

// TestPartitionsPerCommitBounded: a commit writing rows into more
// distinct partitions than the table's partition.max-per-commit (1,000
// by default, as Hive's hive.exec.max.dynamic.partitions) is refused with
// SQLSTATE 54000, committing nothing and leaving no data file; at the
// limit it commits. Until 2026-12-05 one INSERT made 3,000 partitions,
// files each, in 10 s.
func TestPartitionsPerCommitBounded(t *testing.T) {
	root := t.TempDir()
	e := newEngineWith(t, engine.Config{Root: root})
	sess := e.NewSession()
	for _, q := range []string{
		`CREATE TABLE a (p BIGINT, v BIGINT) PARTITIONED BY (p) WITH ('partition.max-per-commit' = '10')`,
		`CREATE TABLE k (p BIGINT NOT NULL, k BIGINT NOT NULL, PRIMARY KEY (p, k) NOT ENFORCED) PARTITIONED BY (p) WITH ('bucket' = '2', 'partition.max-per-commit' = '10')`,
	} {
		mustExec(t, sess, q)
	}
	dataFiles := func() int {
		n := 0
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && strings.Contains(path, "bucket-") && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	for _, table := range []string{"a", "k"} {
		before := dataFiles()
		_, err := exec(context.Background(), sess, nil, `INSERT INTO `+table+` SELECT x, x FROM range(11) AS r(x)`)
		if engine.SQLState(err) != "54000" || !strings.Contains(err.Error(), "partition.max-per-commit") {
			t.Fatalf("%s: 11 partitions in one commit: want SQLSTATE 54000 naming the option, got %v", table, err)
		}
		if got := rows(t, sess, `SELECT count(*) FROM `+table); got[0][0] != "0" {
			t.Fatalf("%s: the refused INSERT left %s rows", table, got[0][0])
		}
		if n := dataFiles() - before; n != 0 {
			t.Fatalf("%s: the refused INSERT left %d data files", table, n)
		}
		mustExec(t, sess, `INSERT INTO `+table+` SELECT x, x FROM range(10) AS r(x)`)
		if got := rows(t, sess, `SELECT count(*) FROM `+table); got[0][0] != "10" {
			t.Fatalf("%s: 10 partitions: %s rows", table, got[0][0])
		}
	}
	if _, err := exec(context.Background(), sess, nil, `CREATE TABLE bad (p BIGINT) PARTITIONED BY (p) WITH ('partition.max-per-commit' = '0')`); err == nil {
		t.Error("partition.max-per-commit = 0 was taken")
	}
}
