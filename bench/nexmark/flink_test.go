package nexmark

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestFlinkReads runs the Flink peer (when built: bench/README.md "Flink
// peer") on a few events: with ReadsAll each job drains the kinds of events
// its query does not scan, found in Flink's plan, so a change in the plan's
// text that hid them would fail here rather than quietly make Flink read
// less than flightd ingests; with ReadsNamed none.
func TestFlinkReads(t *testing.T) {
	dir := "flink"
	if _, err := os.Stat(filepath.Join(dir, "cp.txt")); err != nil {
		t.Skip("the Flink peer is not built (bench/README.md, Flink peer)")
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("no java on the PATH")
	}
	queries := sharedQueriesDir(t)
	want := map[FlinkReads]map[string][]string{
		ReadsAll:   {"q0": {"person", "auction"}, "q3": {"bid"}, "q20": {"person"}},
		ReadsNamed: {"q0": nil, "q3": nil, "q20": nil},
	}
	for _, reads := range []FlinkReads{ReadsAll, ReadsNamed} {
		t.Run(string(reads), func(t *testing.T) {
			rep := &Report{}
			for _, q := range []string{"q0", "q3", "q20"} {
				rep.Queries = append(rep.Queries, QueryResult{Query: q})
			}
			opt := Options{Events: 20_000, Generator: DefaultConfig()}
			if err := RunFlink(context.Background(), dir, t.TempDir(), queries, reads, opt, rep); err != nil {
				t.Fatal(err)
			}
			for _, q := range rep.Queries {
				if q.Flink == nil || q.Flink.Status != StatusOK || q.Flink.CPUSeconds <= 0 {
					t.Fatalf("%s: %+v", q.Query, q.Flink)
				}
				if !slices.Equal(q.Flink.Drained, want[reads][q.Query]) {
					t.Errorf("%s drained %q, want %q", q.Query, q.Flink.Drained, want[reads][q.Query])
				}
			}
		})
	}
}
