package tablestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"testing"
)

// stopRemovesFS stops removing files after a number of removes, as a
// process killed in the middle of an expiry does.
type stopRemovesFS struct {
	FS
	armed atomic.Bool
	left  atomic.Int64 // removes still allowed once armed
}

func (f *stopRemovesFS) Remove(name string) error {
	if f.armed.Load() && f.left.Add(-1) < 0 {
		return errInjected
	}
	return f.FS.Remove(name)
}

// TestExpiryAfterInterruptedExpiry stops an expiry after each number of
// its removes in turn (a kill -9 in the middle of it), restarts the
// store and expires again: the expiry succeeds, every snapshot left
// reads, and the latest holds every row written. An expiry removes data
// files, then manifests, then snapshot files, so an interrupted one
// leaves its oldest snapshots without some of their manifests; the next
// expiry read them and failed with "corrupt file: manifest-... is missing"
// (SQLSTATE XX001) every time after, and time travel to them did too.
// Found by cmd/flightd TestKill9WriteModel.
func TestExpiryAfterInterruptedExpiry(t *testing.T) {
	// The next expiry keeps fewer snapshots than the interrupted one, or
	// more (its retention alone would keep some it left broken).
	for _, retain := range []int{2, 5} {
		t.Run(fmt.Sprintf("retain=%d", retain), func(t *testing.T) { expiryAfterInterruptedExpiry(t, retain) })
	}
}

func expiryAfterInterruptedExpiry(t *testing.T, retain int) {
	ctx := context.Background()
	mem := newMem(t)
	// One table, copied for each stop: 6 writes, each followed by a full
	// compaction, which removes files (the expiry has data files to delete).
	template := t.TempDir()
	s := openStore(t, NewLocalFS(), template, mem)
	must(t, s.CreateDatabase(ctx, "db", false))
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"},
		Options: map[string]string{"bucket": "1", "write-only": "true"}}, false)
	must(t, err)
	want := map[int]string{}
	for i := range 6 {
		v := fmt.Sprintf("v%d", i)
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{i % 3, v}, {10 + i, v}})
		want[i%3], want[10+i] = v, v
		must(t, tbl.Compact(ctx, true))
	}
	s.Close()
	var wantRows []string
	for k, v := range want {
		wantRows = append(wantRows, fmt.Sprintf("%d|%s", k, v))
	}
	sort.Strings(wantRows)
	for stopAt := int64(0); ; stopAt++ {
		dir := t.TempDir()
		must(t, os.CopyFS(dir, os.DirFS(template)))
		fsys := &stopRemovesFS{FS: NewLocalFS()}
		s := openStore(t, fsys, dir, mem)
		tbl, err := s.Table(ctx, Ident{"db", "t"})
		must(t, err)
		fsys.left.Store(stopAt)
		fsys.armed.Store(true)
		_, err = tbl.ExpireSnapshotsWith(ctx, ExpireOptions{RetainMax: 3, RetainMin: 1})
		interrupted := err != nil
		if interrupted && !errors.Is(err, errInjected) {
			t.Fatalf("stop after %d removes: first expiry: %v", stopAt, err)
		}
		s.Close()

		s = openStore(t, NewLocalFS(), dir, mem)
		tbl, err = s.Table(ctx, Ident{"db", "t"})
		must(t, err)
		if _, err := tbl.ExpireSnapshotsWith(ctx, ExpireOptions{RetainMax: retain, RetainMin: 1}); err != nil {
			t.Fatalf("stop after %d removes: expiry after the interrupted one: %v", stopAt, err)
		}
		snaps, err := tbl.Snapshots(ctx)
		must(t, err)
		for _, sn := range snaps {
			if _, err := tbl.Files(ctx, sn.ID); err != nil {
				t.Fatalf("stop after %d removes: snapshot %d left: %v", stopAt, sn.ID, err)
			}
		}
		got := scanAll(t, tbl, ScanSpec{})
		sort.Strings(got)
		eqRows(t, got, wantRows...)
		s.Close()
		if !interrupted {
			t.Logf("an expiry here removes %d files; stopped after each count", stopAt)
			return
		}
	}
}
