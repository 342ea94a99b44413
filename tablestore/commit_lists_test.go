package tablestore

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/flightd/flightd/tablestore/meta"
)

// TestKeptManifestLists checks the manifest lists a commit keeps for the
// next one (keepLists) against the files: after every commit of a random
// sequence of appends, overwrites and compactions over 40 partitions
// (enough commits that the base list is rewritten whole past
// maxManifests), the kept lists must equal the lists decoded from storage,
// the rows must equal the ones written, and appending to a list read from
// the cache must leave the kept one unchanged.
func TestKeptManifestLists(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "log"}, TableDef{Schema: partSchema, PartitionKeys: []string{"dt"},
		Options: map[string]string{"write-only": "true"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	st := tbl.st
	rng := rand.New(rand.NewPCG(7, 7))
	var want []string
	id := 0
	for i := range 3 * maxManifests {
		switch r := rng.IntN(10); {
		case r == 0:
			id++
			writeRows(t, tbl, mem, WriteOptions{Overwrite: true}, Insert, [][]any{{19000, id, nil}})
			want = []string{"2022-01-08|" + strconv.Itoa(id) + "|NULL"}
		case r == 1 && i > 0:
			if err := tbl.Compact(ctx, true); err != nil {
				t.Fatal(err)
			}
		default:
			id++
			dt := 19000 + rng.IntN(40)
			writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{dt, id, id}})
			want = append(want, time.Unix(int64(dt)*86400, 0).UTC().Format(time.DateOnly)+"|"+strconv.Itoa(id)+"|"+strconv.Itoa(id))
		}
		sn, err := st.resolveSnapshot(0)
		if err != nil {
			t.Fatal(err)
		}
		st.mu.Lock()
		keptSnap, kept := st.listsSnap, st.lists
		st.mu.Unlock()
		if keptSnap != sn.ID {
			t.Fatalf("commit %d: lists kept for snapshot %d, latest is %d", i, keptSnap, sn.ID)
		}
		for _, name := range []string{sn.BaseManifestList, sn.DeltaManifestList} {
			data, err := st.readManifestFile(name)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := st.decodeManifestList(name, data)
			if err != nil {
				t.Fatal(err)
			}
			if !sameLists(kept[name], stored) {
				t.Fatalf("commit %d: kept list %s\n%+v\nstored\n%+v", i, name, kept[name], stored)
			}
			// Two readers appending to what they read must not share an array.
			var got [2][]meta.ManifestFile
			for j := range got {
				l, err := st.readManifestList(name)
				if err != nil {
					t.Fatal(err)
				}
				got[j] = append(l, meta.ManifestFile{FileName: "appended-" + strconv.Itoa(j)})
			}
			if last := got[0][len(got[0])-1].FileName; last != "appended-0" {
				t.Fatalf("commit %d: an append to a read list was overwritten by another: %s", i, last)
			}
			if !sameLists(kept[name], stored) {
				t.Fatalf("commit %d: appending to a read list changed the kept one", i)
			}
		}
		eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
	}
}

// sameLists is reflect.DeepEqual but for an empty list kept as nil.
func sameLists(a, b []meta.ManifestFile) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}
