package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

type faultMode int

const (
	faultError      faultMode = iota // the operation fails and does nothing
	faultShortWrite                  // a write stores half its bytes and fails
	faultLostRename                  // a rename reports success but does nothing
	faultRenameErr                   // a rename happens but reports failure
)

func (m faultMode) String() string {
	return [...]string{"error", "short-write", "lost-rename", "rename-error"}[m]
}

var errInjected = errors.New("injected fault")

// faultFS wraps an FS and injects one fault at the n-th mutating operation.
type faultFS struct {
	FS
	mu     sync.Mutex
	ops    int
	failAt int // 1-based; 0 = never
	mode   faultMode
	hit    string
	log    []string // operations seen, when failAt == 0
}

// step counts a mutating operation and reports whether to inject now.
func (f *faultFS) step(op string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops++
	if f.failAt == 0 {
		f.log = append(f.log, op)
	}
	if f.failAt > 0 && f.ops == f.failAt {
		f.hit = op
		return true
	}
	return false
}

func (f *faultFS) Create(name string) (File, error) {
	if f.step("create " + name) {
		return nil, errInjected
	}
	file, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) rename(op, oldname, newname string, do func(string, string) error) error {
	if !f.step(op + " " + newname) {
		return do(oldname, newname)
	}
	switch f.mode {
	case faultLostRename:
		return nil
	case faultRenameErr:
		if err := do(oldname, newname); err != nil {
			return err
		}
	}
	return errInjected
}

func (f *faultFS) Rename(o, n string) error { return f.rename("rename", o, n, f.FS.Rename) }
func (f *faultFS) RenameNoReplace(o, n string) error {
	return f.rename("rename-no-replace", o, n, f.FS.RenameNoReplace)
}

func (f *faultFS) MkdirIn(parent, rel string) error {
	if f.step("mkdir " + joinPath(parent, rel)) {
		return errInjected
	}
	return f.FS.MkdirIn(parent, rel)
}

func (f *faultFS) MkdirAll(dir string) error {
	if f.step("mkdir " + dir) {
		return errInjected
	}
	return f.FS.MkdirAll(dir)
}

func (f *faultFS) SyncDir(dir string) error {
	if f.step("syncdir " + dir) {
		return errInjected
	}
	// The faults model failing calls, not power loss: skipping the real
	// sync keeps hundreds of rounds fast.
	return nil
}

type faultFile struct {
	File
	fs   *faultFS
	name string
}

func (w *faultFile) Write(p []byte) (int, error) {
	if w.fs.step("write " + w.name) {
		if w.fs.mode == faultShortWrite {
			n, _ := w.File.Write(p[:len(p)/2])
			return n, io.ErrShortWrite
		}
		return 0, errInjected
	}
	return w.File.Write(p)
}

func (w *faultFile) Sync() error {
	if w.fs.step("sync " + w.name) {
		return errInjected
	}
	return nil // see SyncDir
}

// TestFaultInjection fails every mutating file-system operation of a commit
// and a compaction in turn, in every fault mode, then checks that after
// reopening every acknowledged commit is there, an unacknowledged one is
// all-or-nothing, and the table reads without error; with the lookup and
// full-compaction changelog producers also that every published changelog
// is readable and exact.
func TestFaultInjection(t *testing.T) {
	for _, producer := range []string{producerNone, producerLookup, producerFullCompaction} {
		t.Run(producer, func(t *testing.T) { faultInjection(t, producer) })
	}
}

func faultInjection(t *testing.T, producer string) {
	ctx := context.Background()
	before := []string{"1|a", "2|b", "4|d"}
	after := []string{"2|B", "3|c", "4|d"}
	run := func(t *testing.T, mode faultMode, failAt int) (ops []string) {
		mem := newMem(t)
		dir := t.TempDir()
		ffs := &faultFS{FS: NewLocalFS()}
		s := openStore(t, ffs, dir, mem)
		defer s.Close()
		must(t, s.CreateDatabase(ctx, "db", false))
		tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"},
			Options: map[string]string{"bucket": "2", "write-only": "true", "changelog-producer": producer}}, false)
		must(t, err)
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}})
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{4, "d"}})

		ffs.mu.Lock()
		ffs.ops, ffs.failAt, ffs.mode, ffs.log = 0, failAt, mode, nil
		ffs.mu.Unlock()
		w := tbl.NewWrite(WriteOptions{})
		b1 := makeBatch(t, mem, kvSchema, [][]any{{2, "B"}, {3, "c"}})
		b2 := makeBatch(t, mem, kvSchema, [][]any{{1, "a"}})
		acked := false
		err1 := w.Write(ctx, b1, UpdateAfter)
		if err1 == nil {
			err1 = w.Write(ctx, b2, Delete)
		}
		b1.Release()
		b2.Release()
		if err1 == nil {
			_, err1 = w.Commit(ctx)
			acked = err1 == nil
		} else {
			w.Abort()
		}
		errCompact := tbl.Compact(ctx, true)
		ffs.mu.Lock()
		ops, hit := ffs.log, ffs.hit
		ffs.failAt = 0
		ffs.mu.Unlock()
		if failAt > 0 && hit == "" {
			return ops
		}
		if failAt > 0 && err1 == nil && errCompact == nil && mode != faultLostRename && mode != faultRenameErr && !strings.HasPrefix(hit, "rename ") && !strings.Contains(hit, "LATEST") {
			t.Errorf("fault at %q went unnoticed", hit)
		}
		s.Close()

		// Reopen on a healthy file system (without real syncs, see SyncDir).
		s2 := openStore(t, &faultFS{FS: NewLocalFS()}, dir, mem)
		defer s2.Close()
		tbl2, err := s2.Table(ctx, Ident{"db", "t"})
		must(t, err)
		got, err := readScanErrTable(tbl2)
		if err != nil {
			t.Fatalf("fault at %q (commit err %v, compact err %v): table unreadable: %v", hit, err1, errCompact, err)
		}
		switch {
		case slices.Equal(got, after):
		case slices.Equal(got, before) && !acked:
		default:
			t.Fatalf("fault at %q (commit err %v, compact err %v, acked %v): rows %q", hit, err1, errCompact, acked, got)
		}
		// The table keeps working after the fault.
		writeRows(t, tbl2, mem, WriteOptions{}, Insert, [][]any{{9, "z"}})
		must(t, tbl2.Compact(ctx, true))
		got2, err := readScanErrTable(tbl2)
		must(t, err)
		if !slices.Contains(got2, "9|z") || len(got2) != len(got)+1 {
			t.Fatalf("after recovery: %q (before %q)", got2, got)
		}
		if producer != producerNone {
			checkChangelogs(t, tbl2, producer, 1)
		}
		return ops
	}
	ops := run(t, faultError, 0)
	t.Logf("%d mutating operations per round", len(ops))
	if len(ops) < 20 {
		t.Fatalf("only %d operations counted", len(ops))
	}
	// Error faults hit every operation; the other modes only the operations
	// they apply to.
	applies := map[faultMode]string{faultError: "", faultShortWrite: "write ", faultLostRename: "rename", faultRenameErr: "rename"}
	for _, mode := range []faultMode{faultError, faultShortWrite, faultLostRename, faultRenameErr} {
		t.Run(mode.String(), func(t *testing.T) {
			for n, op := range ops {
				if !strings.HasPrefix(op, applies[mode]) {
					continue
				}
				if producer != producerNone && !strings.Contains(op, "changelog-") && !strings.Contains(op, "/snapshot/") {
					continue // data and manifest files are covered without a producer
				}
				run(t, mode, n+1)
				if t.Failed() {
					return
				}
			}
		})
	}
}

func readScanErrTable(tbl *Table) ([]string, error) {
	sc, err := tbl.NewScan(context.Background(), ScanSpec{})
	if err != nil {
		return nil, err
	}
	return readScanErr(sc)
}

func TestCorruptFiles(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*Store, string, string) {
		s, mem, dir := newTestStore(t)
		tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
		must(t, err)
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}})
		s.Close()
		return s, dir, filepath.Join(dir, "db.db", "t")
	}
	find := func(t *testing.T, root, pattern string) string {
		var found string
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if m, _ := filepath.Match(pattern, d.Name()); m && found == "" {
				found = p
			}
			return nil
		})
		if found == "" {
			t.Fatalf("no file %s under %s", pattern, root)
		}
		return found
	}
	damage := map[string]func(t *testing.T, path string){
		"truncate": func(t *testing.T, path string) {
			st, _ := os.Stat(path)
			must(t, os.Truncate(path, st.Size()/2))
		},
		"flip": func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			must(t, err)
			data[len(data)/3] ^= 0x55
			must(t, os.WriteFile(path, data, 0o644))
		},
	}
	for _, pattern := range []string{"data-*.parquet", "manifest-list-*", "manifest-[0-9a-f]*", "snapshot-1"} {
		for how, f := range damage {
			t.Run(pattern+"/"+how, func(t *testing.T) {
				s, dir, root := setup(t)
				path := find(t, root, pattern)
				f(t, path)
				s2 := openStore(t, NewLocalFS(), dir, s.opts.Mem)
				defer s2.Close()
				tbl, err := s2.Table(ctx, Ident{"db", "t"})
				must(t, err)
				_, err = readScanErrTable(tbl)
				if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(path)) {
					t.Fatalf("want ErrCorrupt naming %s, got %v", filepath.Base(path), err)
				}
			})
		}
	}
}

var _ = fmt.Sprint

// TestAlterTableFaults: a schema change is acknowledged only if published.
func TestAlterTableFaults(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []faultMode{faultError, faultLostRename, faultRenameErr} {
		for n := 1; ; n++ {
			mem := newMem(t)
			dir := t.TempDir()
			ffs := &faultFS{FS: NewLocalFS()}
			s := openStore(t, ffs, dir, mem)
			must(t, s.CreateDatabase(ctx, "db", false))
			_, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema}, false)
			must(t, err)
			ffs.mu.Lock()
			ffs.ops, ffs.failAt, ffs.mode, ffs.hit = 0, n, mode, ""
			ffs.mu.Unlock()
			err = s.AlterTable(ctx, Ident{"db", "t"}, AddColumn{Name: "x", Type: kvSchema.Field(0).Type})
			ffs.mu.Lock()
			hit := ffs.hit
			ffs.failAt = 0
			ffs.mu.Unlock()
			s.Close()
			s2 := openStore(t, NewLocalFS(), dir, mem)
			tbl, terr := s2.Table(ctx, Ident{"db", "t"})
			must(t, terr)
			has := tbl.Schema().NumFields() == 3
			s2.Close()
			if err == nil && !has {
				t.Fatalf("%v at %q: acknowledged ALTER lost", mode, hit)
			}
			if hit == "" {
				break // no more operations to fail
			}
		}
	}
}

// slowSyncFS logs when each sync of a file or directory completes, after
// a delay (a slow device), and each snapshot publication.
type slowSyncFS struct {
	FS
	mu  sync.Mutex
	log []string
	// inFlight counts the slow syncs under way; mostInFlight is its peak.
	inFlight, mostInFlight int
}

func (f *slowSyncFS) record(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, op)
}

func (f *slowSyncFS) Create(name string) (File, error) {
	file, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	f.record("create " + name)
	return &slowSyncFile{File: file, fs: f, name: name}, nil
}

// slowSync waits as a slow device would, except for the snapshot's own
// file, whose sync must not give the others time to finish.
func (f *slowSyncFS) slowSync(name string) {
	if strings.Contains(name, "/snapshot") {
		return
	}
	f.mu.Lock()
	f.inFlight++
	f.mostInFlight = max(f.mostInFlight, f.inFlight)
	f.mu.Unlock()
	time.Sleep(30 * time.Millisecond)
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
}

func (f *slowSyncFS) SyncDir(dir string) error {
	f.slowSync(dir)
	err := f.FS.SyncDir(dir)
	f.record("synced " + dir)
	return err
}

func (f *slowSyncFS) RenameNoReplace(o, n string) error {
	f.record("publish " + n)
	return f.FS.RenameNoReplace(o, n)
}

type slowSyncFile struct {
	File
	fs   *slowSyncFS
	name string
}

func (w *slowSyncFile) Sync() error {
	w.fs.slowSync(w.name)
	err := w.File.Sync()
	w.fs.record("synced " + w.name)
	return err
}

// TestCommitSyncsBeforePublish: the files a commit creates (data files,
// manifests, the snapshot) and the directories they are in have finished
// syncing before the snapshot is published, though the manifests and
// their directory are synced concurrently (one device wait, not one per
// file: some syncs overlap).
func TestCommitSyncsBeforePublish(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	sfs := &slowSyncFS{FS: NewLocalFS()}
	s := openStore(t, sfs, dir, mem)
	defer s.Close()
	must(t, s.CreateDatabase(ctx, "db", false))
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"},
		Options: map[string]string{"bucket": "2", "write-only": "true"}}, false)
	must(t, err)
	for round := range 3 {
		sfs.mu.Lock()
		sfs.log, sfs.mostInFlight = nil, 0
		sfs.mu.Unlock()
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{round, "a"}, {round + 10, "b"}})
		sfs.mu.Lock()
		log, overlap := slices.Clone(sfs.log), sfs.mostInFlight
		sfs.mu.Unlock()
		if overlap < 2 {
			t.Errorf("round %d: at most %d slow sync at a time; a commit's manifests and directory sync together", round, overlap)
		}
		publish := slices.IndexFunc(log, func(op string) bool { return strings.HasPrefix(op, "publish ") })
		if publish < 0 {
			t.Fatalf("round %d: no snapshot published: %q", round, log)
		}
		synced := map[string]bool{}
		for _, op := range log[:publish] {
			if name, ok := strings.CutPrefix(op, "synced "); ok {
				synced[name] = true
			}
		}
		var created int
		for _, op := range log[:publish] {
			name, ok := strings.CutPrefix(op, "create ")
			if !ok || strings.Contains(name, "LATEST") {
				continue
			}
			created++
			if !synced[name] {
				t.Fatalf("round %d: %s published before %s finished syncing: %q", round, log[publish], name, log)
			}
			if d := filepath.Dir(name); !synced[filepath.ToSlash(d)] && !strings.Contains(name, "/snapshot/") {
				t.Fatalf("round %d: %s published before the directory of %s finished syncing: %q", round, log[publish], name, log)
			}
		}
		if created < 5 { // two data files, three manifests, the snapshot
			t.Fatalf("round %d: %d files created before publication: %q", round, created, log)
		}
	}
}
