package engine_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightd/flightd/tablestore"
)

// TestStreamResumeModel: writers upsert, update and delete keys of a
// primary-key table at once (group commits), with compaction running,
// while a consumer reads the table's changes in bounded pieces, each
// resumed at the snapshot after the last one it read, and applies them by
// key. After each piece its image equals the table read at the piece's
// last snapshot: no change lost or applied twice across resumptions.
func TestStreamResumeModel(t *testing.T) {
	for _, producer := range []string{"none", "lookup"} {
		t.Run(producer, func(t *testing.T) { streamResumeModel(t, producer) })
	}
}

func streamResumeModel(t *testing.T, producer string) {
	seed := testSeed(t)
	ctx := context.Background()
	e := newEngine(t)
	admin := e.NewSession()
	mustExec(t, admin, fmt.Sprintf("CREATE TABLE t (k INT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2', 'changelog-producer' = '%s', 'num-sorted-run.compaction-trigger' = '2')", producer))
	mustExec(t, admin, "INSERT INTO t VALUES (0, 0)")
	var stop atomic.Bool
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			s := e.NewSession()
			for i := 0; !stop.Load(); i++ {
				k := rng.IntN(20)
				var q string
				switch rng.IntN(5) {
				case 0:
					q = fmt.Sprintf("DELETE FROM t WHERE k = %d", k)
				case 1:
					q = fmt.Sprintf("UPDATE t SET v = v + 1 WHERE k = %d", k)
				case 2:
					q = fmt.Sprintf("INSERT INTO t VALUES (%d, %d), (%d, %d)", k, c*1000+i, (k+7)%20, c*1000+i)
				case 3:
					q = "CALL sys.compact(table => 't')"
				default:
					q = fmt.Sprintf("INSERT INTO t VALUES (%d, %d)", k, c*1000+i)
				}
				if _, err := exec(ctx, s, nil, q); err != nil && !errors.Is(err, tablestore.ErrSerialization) && !errors.Is(err, tablestore.ErrConflict) {
					t.Errorf("%s: %v", q, err)
					return
				}
			}
		}()
	}
	s := e.NewSession()
	image := map[string]string{}
	next := int64(1)
	deadline := time.Now().Add(2 * time.Second)
	pieces := 0
	for time.Now().Before(deadline) || pieces < 3 {
		if !time.Now().Before(deadline) {
			stop.Store(true)
		}
		last := rows(t, s, "SELECT max(snapshot_id) FROM t$snapshots")[0][0]
		end, _ := strconv.ParseInt(last, 10, 64)
		if end < next {
			continue
		}
		q := fmt.Sprintf("SELECT * FROM t /*+ OPTIONS('scan.mode'='from-snapshot', 'scan.snapshot-id'='%d', 'scan.bounded.snapshot-id'='%d') */", next, end)
		if next == 1 {
			q = fmt.Sprintf("SELECT * FROM t /*+ OPTIONS('scan.mode'='from-snapshot-full', 'scan.snapshot-id'='1', 'scan.bounded.snapshot-id'='%d') */", end)
		}
		st, err := s.Prepare(ctx, q, nil)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		kindCol := st.Schema().FieldIndices(tablestore.RowKindColumn)
		if len(kindCol) != 1 {
			t.Fatalf("%s: no %s column in %v", q, tablestore.RowKindColumn, st.Schema())
		}
		for _, line := range readAll(t, st) {
			f := strings.Split(line, "|")
			kind := f[kindCol[0]]
			f = append(f[:kindCol[0]], f[kindCol[0]+1:]...)
			switch kind {
			case "+I", "+U":
				image[f[0]] = f[1]
			case "-D":
				delete(image, f[0])
			case "-U":
			default:
				t.Fatalf("row kind %q", kind)
			}
		}
		want := map[string]string{}
		for _, r := range rows(t, s, fmt.Sprintf("SELECT k, v FROM t /*+ OPTIONS('scan.snapshot-id'='%d') */", end)) {
			want[r[0]] = r[1]
		}
		if !maps.Equal(image, want) {
			t.Fatalf("piece %d, snapshots %d..%d: image after the changes\n%v\ntable\n%v", pieces, next, end, image, want)
		}
		next = end + 1
		pieces++
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d pieces up to snapshot %d", pieces, next-1)
}
