package tablestore

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"time"
)

// RemoveOrphanFiles deletes files under the table directory that no
// snapshot or tag references: leftovers of crashed writers and failed
// commits. Only files older than olderThan are touched, so files of
// commits in flight (in this or another process) survive; use at least the
// longest expected write transaction. It returns the number of files
// removed.
func (t *Table) RemoveOrphanFiles(ctx context.Context, olderThan time.Duration) (int, error) {
	st := t.st
	st.expireMu.Lock()
	defer st.expireMu.Unlock()
	if st.dropped.Load() {
		return 0, st.notFound(errDroppedHere)
	}
	ids, err := st.listSnapshots()
	if err != nil {
		return 0, err
	}
	keepFiles, keepManifests := map[string]bool{}, map[string]bool{}
	if len(ids) > 0 {
		if keepFiles, keepManifests, err = st.referenced(ids); err != nil {
			return 0, err
		}
	}
	cutoff := st.s.opts.Now().Add(-olderThan)
	removed := 0
	var walk func(dir string, top bool) error
	walk = func(dir string, top bool) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		names, err := st.fs().List(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, n := range names {
			p := joinPath(dir, n)
			if top && (n == "schema" || n == "tag" || n == "consumer") {
				continue
			}
			info, err := st.fs().Stat(p)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return err
			}
			if info.IsDir() {
				if err := walk(p, false); err != nil {
					return err
				}
				continue
			}
			orphan := false
			switch {
			case st.ownSpare(n):
				// This table state's spare hint file (writeHint): in use.
				// Those of others (other processes, other stores) are
				// removed as temporaries: a live one writes its spare
				// again when it finds it gone.
			case strings.HasPrefix(n, ".tmp-"):
				orphan = true
			case strings.HasPrefix(n, "data-"), strings.HasPrefix(n, "changelog-"):
				orphan = !keepFiles[n]
			case strings.HasPrefix(n, "manifest-"):
				orphan = !keepManifests[n]
			}
			if orphan && info.ModTime().Before(cutoff) {
				if err := st.fs().Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				removed++
			}
		}
		return nil
	}
	return removed, walk(st.dir, true)
}

// DiskUsage is the size of every file under the table's directory: data
// and changelog files of all retained snapshots and tags, metadata, and
// leftovers RemoveOrphanFiles has not removed yet.
func (t *Table) DiskUsage(ctx context.Context) (int64, error) {
	var total int64
	var walk func(dir string) error
	walk = func(dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		names, err := t.st.fs().List(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, n := range names {
			info, err := t.st.fs().Stat(joinPath(dir, n))
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return err
			case info.IsDir():
				if err := walk(joinPath(dir, n)); err != nil {
					return err
				}
			default:
				total += info.Size()
			}
		}
		return nil
	}
	return total, walk(t.st.dir)
}
