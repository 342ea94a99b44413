package tablestore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// blockRemovesFS blocks every Remove, once armed, until released: an
// expiry deleting files on a slow object store.
type blockRemovesFS struct {
	FS
	armed   chan struct{} // closed: block removes
	blocked chan struct{} // closed at the first blocked remove
	release chan struct{}
	once    sync.Once
}

func (f *blockRemovesFS) Remove(name string) error {
	select {
	case <-f.armed:
		f.once.Do(func() { close(f.blocked) })
		<-f.release
	default:
	}
	return f.FS.Remove(name)
}

// TestHoldDuringExpiryDeletes: Table.Hold, which a lookup takes for every
// read, does not wait for an expiry that is deleting files; it refuses a
// snapshot that expiry took, and the snapshot it holds survives the
// expiry.
func TestHoldDuringExpiryDeletes(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	fsys := &blockRemovesFS{FS: NewLocalFS(), armed: make(chan struct{}), blocked: make(chan struct{}), release: make(chan struct{})}
	s := openStore(t, fsys, t.TempDir(), mem)
	must(t, s.CreateDatabase(ctx, "db", false))
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"},
		Options: map[string]string{"bucket": "1", "write-only": "true"}}, false)
	must(t, err)
	for i := range 4 {
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{i, fmt.Sprintf("v%d", i)}})
		must(t, tbl.Compact(ctx, true)) // files for the expiry to delete
	}
	latest, err := tbl.LatestSnapshotID(ctx)
	must(t, err)
	close(fsys.armed)
	expired := make(chan error, 1)
	go func() {
		_, err := tbl.ExpireSnapshotsWith(ctx, ExpireOptions{RetainMax: 1, RetainMin: 1})
		expired <- err
	}()
	<-fsys.blocked
	var unblock sync.Once
	defer unblock.Do(func() { close(fsys.release) }) // on failure too
	held := make(chan error, 2)
	var release func()
	go func() {
		var err error
		release, err = tbl.Hold(latest)
		held <- err
		_, err = tbl.Hold(1)
		held <- err
	}()
	for i, want := range []error{nil, ErrSnapshotExpired} {
		select {
		case err := <-held:
			if !errors.Is(err, want) {
				t.Fatalf("hold %d during the expiry's deletes: %v, want %v", i, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Hold waited for an expiry deleting files")
		}
	}
	unblock.Do(func() { close(fsys.release) })
	must(t, <-expired)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{9, "v9"}})
	if _, err := tbl.ExpireSnapshotsWith(ctx, ExpireOptions{RetainMax: 1, RetainMin: 1}); err != nil {
		t.Fatal(err)
	}
	again, err := tbl.Hold(latest)
	if err != nil {
		t.Fatalf("snapshot %d, held, after an expiry keeping only a later one: %v", latest, err)
	}
	again()
	release()
	if _, err := tbl.ExpireSnapshotsWith(ctx, ExpireOptions{RetainMax: 1, RetainMin: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Hold(latest); !errors.Is(err, ErrSnapshotExpired) {
		t.Fatalf("snapshot %d, released, after an expiry keeping only a later one: %v, want it expired", latest, err)
	}
}
