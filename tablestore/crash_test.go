package tablestore

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("TABLESTORE_CRASH_WRITER"); dir != "" {
		start, _ := strconv.Atoi(os.Getenv("TABLESTORE_CRASH_START"))
		if err := crashWriter(dir, start); err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var crashTable = Ident{"db", "crash"}

// crashWriter commits forever: commit i writes keys 3i+1, 3i+2 and 3i and
// updates key 0, all with value "c<i>", and prints "ACK i" once Commit
// returned.
func crashWriter(dir string, start int) error {
	ctx := context.Background()
	fsys, err := warehouseFromEnv()
	if err != nil {
		return err
	}
	s, err := Open(ctx, fsys, dir, Options{Mem: memory.NewGoAllocator()})
	if err != nil {
		return err
	}
	if err := s.CreateDatabase(ctx, "db", true); err != nil {
		return err
	}
	tbl, err := s.CreateTable(ctx, crashTable, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"},
		Options: map[string]string{"bucket": "2", "num-sorted-run.compaction-trigger": "3", "changelog-producer": "lookup"}}, true)
	if err != nil {
		return err
	}
	mem := memory.NewGoAllocator()
	for i := start; ; i++ {
		v := fmt.Sprintf("c%d", i)
		rows := [][]any{{3*i + 1, v}, {3*i + 2, v}, {3 * i, v}, {0, v}}
		b, err := buildBatch(mem, kvSchema, rows)
		if err != nil {
			return err
		}
		w := tbl.NewWrite(WriteOptions{})
		if err := w.Write(ctx, b, UpdateAfter); err != nil {
			return err
		}
		b.Release()
		if _, err := w.Commit(ctx); err != nil {
			return err
		}
		fmt.Printf("ACK %d\n", i)
	}
}

// TestKillWriter kills a writer process with SIGKILL at random moments, 50
// times (on the object store 5, or $FLIGHTD_S3_KILLS; at least 10 when the
// rounds take more than a minute in all), and checks after
// each kill that every acknowledged commit is visible, no commit is partly
// visible, and the table reads cleanly.
func TestKillWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 loop skipped in -short mode")
	}
	forEachWarehouse(t, testKillWriter)
}

func testKillWriter(t *testing.T, wh warehouse) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := wh.root
	next, acked, rounds := 0, -1, 0
	began := time.Now()
	kills := 50
	if wh.remote {
		kills = 5
		if n, err := strconv.Atoi(os.Getenv("FLIGHTD_S3_KILLS")); err == nil {
			kills = n
		}
	}
	for kill := 0; kill < kills; kill++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "TABLESTORE_CRASH_WRITER="+dir, "TABLESTORE_CRASH_START="+strconv.Itoa(next))
		cmd.Env = append(cmd.Env, wh.env...)
		out, err := cmd.StdoutPipe()
		must(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		must(t, cmd.Start())
		lines := make(chan string, 1<<16)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Four rounds in five kill at a random moment after the round's
		// first acknowledged commit (so each makes progress even on a slow
		// machine), the fifth during start-up.
		var got []string
		if kill%5 != 4 {
			select {
			case l, ok := <-lines:
				if ok {
					got = append(got, l)
				}
			case <-time.After(time.Minute): // a bound on a broken writer: under -race against S3 the first commit took over 5 s
			}
			if len(got) == 0 {
				t.Fatalf("kill %d: the writer acknowledged no commit in a minute\n%s", kill, stderr.String())
			}
			rounds++
		}
		time.Sleep(time.Duration(rng.IntN(120)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			got = append(got, l)
		}
		for _, l := range got {
			if n, ok := strings.CutPrefix(l, "ACK "); ok {
				i, _ := strconv.Atoi(n)
				acked = max(acked, i)
			}
		}
		werr := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: writer ended by itself: %v\n%s", kill, werr, stderr.String())
		}
		// Commits seen before count as acknowledged: they must stay.
		last := verifyCrashTable(t, wh, acked)
		acked = max(acked, last)
		next = last + 1
		// On a loaded machine (or under -race) a round takes longer: past
		// a minute the loop stops once it has killed 10 writers, so CI's
		// time stays bounded without failing on the machine's speed.
		if done := kill + 1; done >= 10 && time.Since(began) > time.Minute {
			kills = done
		}
	}
	// Each round that waited for a commit added at least one.
	if acked+1 < rounds {
		t.Fatalf("only %d commits acknowledged over %d rounds that each saw one", acked+1, rounds)
	}
	t.Logf("%d kills, %d commits acknowledged, %v", kills, acked+1, time.Since(began))

	// Killed writers leave unreferenced files; orphan removal reclaims
	// exactly those.
	mem := newMem(t)
	s := openStore(t, wh.fs, dir, mem)
	defer s.Close()
	tbl, err := s.Table(context.Background(), crashTable)
	must(t, err)
	before, err := readScanErrTable(tbl)
	must(t, err)
	n, err := tbl.RemoveOrphanFiles(context.Background(), 0)
	must(t, err)
	after, err := readScanErrTable(tbl)
	must(t, err)
	if strings.Join(before, ",") != strings.Join(after, ",") {
		t.Fatal("orphan removal changed the table")
	}
	keep, _, err := tbl.st.referenced(mustSnapshots(t, tbl))
	must(t, err)
	if got := countFilesIn(t, wh.fs, dir, "data-") + countFilesIn(t, wh.fs, dir, "changelog-"); got != len(keep) {
		t.Fatalf("%d data and changelog files after removing %d orphans, %d referenced", got, n, len(keep))
	}
	t.Logf("removed %d orphan files", n)
	// Every published changelog survived the kills intact.
	checkChangelogs(t, tbl, producerLookup, 2)
}

func mustSnapshots(t *testing.T, tbl *Table) []int64 {
	ids, err := tbl.st.listSnapshots()
	must(t, err)
	return ids
}

// verifyCrashTable checks the table and returns the last visible commit.
func verifyCrashTable(t *testing.T, wh warehouse, acked int) int {
	t.Helper()
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := openStore(t, wh.fs, wh.root, mem)
	defer s.Close()
	tbl, err := s.Table(ctx, crashTable)
	if err != nil {
		if acked < 0 {
			return -1
		}
		t.Fatalf("table missing with %d acked commits: %v", acked+1, err)
	}
	rows, err := readScanErrTable(tbl)
	if err != nil {
		t.Fatalf("table unreadable after kill: %v", err)
	}
	vals := map[int]string{}
	for _, r := range rows {
		k, v, _ := strings.Cut(r, "|")
		n, _ := strconv.Atoi(k)
		vals[n] = v
	}
	last := -1
	for i := 0; ; i++ {
		v := fmt.Sprintf("c%d", i)
		n := 0
		for _, k := range []int{3*i + 1, 3*i + 2} {
			if vals[k] == v {
				n++
			}
		}
		if i > 0 && vals[3*i] == v {
			n++
		} else if i == 0 && vals[1] == v {
			n++ // key 0 is overwritten by later commits
		}
		if n == 0 {
			break
		}
		if n != 3 {
			t.Fatalf("commit %d partly visible: %v", i, vals)
		}
		last = i
	}
	if last < acked {
		t.Fatalf("acknowledged commit %d lost (last visible %d)", acked, last)
	}
	if last > acked+1 {
		t.Fatalf("commit %d visible but only %d acknowledged", last, acked)
	}
	if last >= 0 && vals[0] != fmt.Sprintf("c%d", last) {
		t.Fatalf("key 0 = %q, want c%d", vals[0], last)
	}
	if len(vals) != 3*(last+1) && !(last >= 0 && len(vals) == 3*(last+1)) {
		t.Fatalf("unexpected rows: %d for %d commits", len(vals), last+1)
	}
	return last
}
