package maintenance

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestExpirableRandom checks Expirable against its documentation: the
// longest prefix of snapshots each of which the retention lets go, capped
// by MaxDeletes, asking times only of the newest Max.
func TestExpirableRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 4))
	errRead := errors.New("snapshot unreadable")
	for iter := range 5000 {
		var ids []int64
		times := map[int64]int64{}
		id := 1 + rng.Int64N(5)
		for range rng.IntN(15) {
			ids = append(ids, id)
			times[id] = rng.Int64N(100)
			id += 1 + rng.Int64N(2)
		}
		r := Retention{Min: rng.IntN(5), Max: 1 + rng.IntN(15), Before: rng.Int64N(100),
			Protect: 1 + rng.Int64N(id+1), MaxDeletes: rng.IntN(4)}
		bad := int64(-1)
		if rng.IntN(10) == 0 && len(ids) > 0 {
			bad = ids[rng.IntN(len(ids))]
		}
		var asked []int64
		n, err := Expirable(ids, r, func(id int64) (int64, error) {
			asked = append(asked, id)
			if id == bad {
				return 0, errRead
			}
			return times[id], nil
		})

		letGo := func(i int) bool {
			left := len(ids) - i // snapshots from ids[i] on
			return left > r.Min && ids[i] < r.Protect && (left > r.Max || times[ids[i]] < r.Before)
		}
		want := 0
		for want < len(ids) && letGo(want) {
			want++
		}
		// The first snapshot not let go is read too when its time decides.
		readsBad := false
		for i := 0; i <= want && i < len(ids); i++ {
			if ids[i] == bad && len(ids)-i > r.Min && ids[i] < r.Protect && len(ids)-i <= r.Max {
				readsBad = true
			}
		}
		if r.MaxDeletes > 0 {
			want = min(want, r.MaxDeletes)
		}
		if readsBad {
			if !errors.Is(err, errRead) {
				t.Fatalf("iter %d: the read error was lost: n %d, err %v", iter, n, err)
			}
			continue
		}
		if err != nil || n != want {
			t.Fatalf("iter %d: ids %v times %v %+v: got %d (%v), want %d", iter, ids, times, r, n, err, want)
		}
		for _, a := range asked {
			i := 0
			for ids[i] != a {
				i++
			}
			if len(ids)-i > r.Max {
				t.Fatalf("iter %d: asked the time of snapshot %d, older than the newest %d", iter, a, r.Max)
			}
		}
	}
}
