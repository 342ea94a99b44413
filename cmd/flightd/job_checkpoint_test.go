package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"

	"github.com/flightd/flightd/internal/eventjobs"
)

// TestJobCheckpointKill9 runs a continuous job of every event-time shape
// (eventjobs: SESSION windows, window top-N over a TVF and over a window
// aggregation, window join, interval join, TUMBLE aggregation) and of a
// regular join's aggregation (incremental: chains of a base and deltas) in a real
// flightd that checkpoints every 20 ms, so that a kill often lands while
// a checkpoint is written, while a writer inserts rows out of order (never
// late) and deletes some; it kills flightd with SIGKILL at a random time
// of each round (FLIGHTD_CHECKPOINT_KILLS rounds, 50 by default). After
// every restart each job whose last sink snapshot has its checkpoint file
// must start from it (at the source positions that snapshot records), no
// other job from a checkpoint, and each must read no more source rows
// than the snapshots since it changed, and once the jobs caught up every sink must equal its
// batch answer (for the windows the watermark closed). Some restarts must
// restore a chain with deltas.
func TestJobCheckpointKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	def := 50
	if raceEnabled {
		def = 20 // the race detector slows this process's checks about 3x: keep CI's time
	}
	kills := killRounds(t, "FLIGHTD_CHECKPOINT_KILLS", def)
	p, rng, seed := startKill9(t, "-job-checkpoint-interval", "20ms")
	cnxn, closeConn := p.connect(t)
	jobs := eventjobs.Jobs()
	stmts := slices.Clone(eventjobs.Setup)
	for _, j := range jobs {
		stmts = append(stmts, j.Sink, j.Insert)
	}
	for _, q := range stmts {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	sinks := map[string]string{} // job id -> sink
	for _, r := range caughtUp(t, cnxn, len(jobs), seed) {
		sinks[r.id] = r.sink
	}
	closeConn()
	writer := eventjobs.NewWriter("w", "w2")
	begin := time.Now()
	var wrote, rebuilt, midCheckpoint, fromChain int
	fromCheckpoint := map[string]int{} // by sink
	for kill := range kills {
		p.killWriting(t, time.Duration(20+rng.IntN(400))*time.Millisecond, func(c adbc.Connection) bool {
			if err := execSQL(c, writer.Next(rng)); err != nil {
				writer.Lost() // killed under us: applied or not
				return false
			}
			wrote++
			return true
		})
		// What the killed flightd left decides how each job must start.
		lefts := map[string]lastCommit{}
		deltas := map[string]bool{} // the job's last checkpoint is a delta
		for id, sink := range sinks {
			lefts[id] = lastCheckpointed(t, p.dataDir, id, sink)
			deltas[id] = lefts[id].checkpointed && isDelta(t, filepath.Join(p.dataDir, "_jobs", id+".checkpoints", strconv.FormatInt(lefts[id].snap, 10)))
		}
		p = start(t, p.bin, p.dataDir, p.flags...)
		cnxn, closeConn := p.connect(t)
		for _, st := range caughtUp(t, cnxn, len(jobs), seed) {
			left := lefts[st.id]
			switch {
			case st.start == "checkpoint":
				if !left.checkpointed || !slices.Equal(st.from, left.positions) {
					t.Fatalf("seed %d kill %d: job %s started from a checkpoint at %v, not that of its last sink snapshot %d (at %v, its checkpoint there: %v)", seed, kill, st.sink, st.from, left.snap, left.positions, left.checkpointed)
				}
				fromCheckpoint[st.sink]++
				if deltas[st.id] {
					fromChain++
				}
				if limit := 3 * st.snapshotsSince(); st.sourceRows > limit {
					t.Fatalf("seed %d kill %d: job %s read %d source rows from its checkpoint at %v, more than the %d the snapshots since changed", seed, kill, st.sink, st.sourceRows, st.from, limit)
				}
			case left.checkpointed:
				t.Fatalf("seed %d kill %d: job %s started from %q though its checkpoint of sink snapshot %d is there", seed, kill, st.sink, st.start, left.snap)
			case left.snap > 0:
				midCheckpoint++ // killed after the sink commit, before its checkpoint was written
				fallthrough
			default:
				rebuilt++
			}
		}
		for _, j := range jobs {
			sinkEqualsBatch(t, cnxn, j, seed, kill)
		}
		closeConn()
	}
	t.Logf("%d kills in %s, %d writes acknowledged; restarts of a job from its checkpoint %v (%d from a chain with deltas), %d from its sources (no checkpoint of its last commit; %d of them killed between a commit and its checkpoint)",
		kills, time.Since(begin).Round(time.Millisecond), wrote, fromCheckpoint, fromChain, rebuilt, midCheckpoint)
	if fromChain == 0 {
		t.Fatalf("seed %d: no restart restored a chain with deltas", seed)
	}
	for _, sink := range sinks {
		// A job checkpoints from its first commit on (a kill between a
		// commit and its checkpoint's write leaves none): one that seldom
		// restarts from one does not checkpoint.
		if fromCheckpoint[sink] < max(1, kills/5) {
			t.Fatalf("seed %d: job %s restarted from a checkpoint %d times in %d", seed, sink, fromCheckpoint[sink], kills)
		}
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("flightd did not exit cleanly on SIGTERM with jobs running: %v", err)
	}
}

// isDelta says whether the checkpoint file at path is a delta: it names
// files before it (stream/checkpoint.go's format: magic, positions,
// chain id, then the sink snapshots of those files).
func isDelta(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := bytes.CutPrefix(b, []byte("flightd-checkpoint-2\n"))
	if !ok {
		t.Fatalf("%s is not a checkpoint", path)
	}
	n, k := binary.Uvarint(b)
	for range n {
		_, m := binary.Varint(b[k:])
		k += m
	}
	parents, _ := binary.Uvarint(b[k+16:])
	return parents > 0
}

// jobRun is a job as SHOW JOBS lists it once its run started.
type jobRun struct {
	id, sink, start string
	positions, from []int64
	sourceRows      int64
}

// snapshotsSince is how many source snapshots the run read since its
// checkpoint.
func (r jobRun) snapshotsSince() int64 {
	var n int64
	for i, p := range r.positions {
		n += p - r.from[i]
	}
	return n
}

// caughtUp waits until n jobs run, have started and processed their
// sources' latest snapshots (no writer runs), and returns them.
func caughtUp(t *testing.T, cnxn adbc.Connection, n int, seed int64) []jobRun {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		runs, err := showJobs(t, cnxn)
		ready := err == nil && len(runs) == n
		for _, r := range runs {
			ready = ready && r.start != "" && r.lagZero
		}
		if ready {
			out := make([]jobRun, len(runs))
			for i, r := range runs {
				out[i] = r.jobRun
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: jobs did not catch up: %v %v", seed, rowsOf(t, cnxn, `SHOW JOBS`, "|"), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type shownJob struct {
	jobRun
	lagZero bool
}

// showJobs reads SHOW JOBS; a job that is not running fails the test.
func showJobs(t *testing.T, cnxn adbc.Connection) ([]shownJob, error) {
	t.Helper()
	var out []shownJob
	for _, f := range jobsShown(t, cnxn) {
		if f["state"] != "RUNNING" || f["error"] != "" {
			t.Fatalf("job not running: %q", f)
		}
		r := shownJob{jobRun: jobRun{id: f["job_id"], sink: f["sink"], start: f["start"]}, lagZero: f["lag"] == "0"}
		var err error
		if r.positions, err = positions(f["source_positions"]); err != nil {
			return nil, err
		}
		if r.from, err = positions(f["start_positions"]); err != nil {
			return nil, err
		}
		if r.sourceRows, err = strconv.ParseInt(f["source_rows"], 10, 64); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// positions parses SHOW JOBS' db.table@N, ... ("": none).
func positions(s string) ([]int64, error) {
	var out []int64
	for _, p := range strings.Split(s, ", ") {
		if p == "" {
			continue
		}
		_, n, ok := strings.Cut(p, "@")
		v, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil {
			return nil, errors.New("not positioned yet: " + s)
		}
		out = append(out, v)
	}
	return out, nil
}

// sinkEqualsBatch waits until job j's sink equals its batch answer (no
// writer runs: the jobs converge on the sources' latest snapshots).
func sinkEqualsBatch(t *testing.T, cnxn adbc.Connection, j eventjobs.Job, seed int64, kill int) {
	t.Helper()
	batch := fmt.Sprintf(j.Batch, "", "")
	want := rowsOf(t, cnxn, batch, "|")
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := rowsOf(t, cnxn, fmt.Sprintf(j.Rows, ""), "|")
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("seed %d kill %d: %s:\n%v\nwant (%s)\n%v\njobs: %v", seed, kill, j.Name, got, batch, want, rowsOf(t, cnxn, `SHOW JOBS`, "|"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lastCommit is a job's last commit to its sink: the sink snapshot, the
// source positions it records, and whether its checkpoint file is there.
type lastCommit struct {
	snap         int64
	positions    []int64
	checkpointed bool
}

// lastCheckpointed reads what a stopped flightd over dir left of job id's
// last commit: the newest snapshot of its sink table (db.table) whose
// properties hold the job's positions, and whether the checkpoint file
// named by it is there.
func lastCheckpointed(t *testing.T, dir, id, sink string) lastCommit {
	t.Helper()
	db, table, _ := strings.Cut(sink, ".")
	files, err := filepath.Glob(filepath.Join(dir, db+".db", table, "snapshot", "snapshot-*"))
	if err != nil {
		t.Fatal(err)
	}
	var snaps []int64
	for _, f := range files {
		if n, err := strconv.ParseInt(strings.TrimPrefix(filepath.Base(f), "snapshot-"), 10, 64); err == nil {
			snaps = append(snaps, n)
		}
	}
	slices.Sort(snaps)
	for _, n := range slices.Backward(snaps) {
		b, err := os.ReadFile(filepath.Join(dir, db+".db", table, "snapshot", "snapshot-"+strconv.FormatInt(n, 10)))
		if err != nil {
			t.Fatal(err)
		}
		var sn struct {
			Properties map[string]string `json:"properties"`
		}
		if err := json.Unmarshal(b, &sn); err != nil {
			t.Fatalf("snapshot %d of %s: %v", n, sink, err)
		}
		if v, ok := sn.Properties["flightd.job."+id]; ok {
			var cp struct {
				Positions []int64 `json:"positions"`
			}
			if err := json.Unmarshal([]byte(v), &cp); err != nil {
				t.Fatalf("snapshot %d of %s: job property %q: %v", n, sink, v, err)
			}
			_, err := os.Stat(filepath.Join(dir, "_jobs", id+".checkpoints", strconv.FormatInt(n, 10)))
			return lastCommit{n, cp.Positions, err == nil}
		}
	}
	return lastCommit{}
}
