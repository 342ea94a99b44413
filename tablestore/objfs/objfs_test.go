package objfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightd/flightd/internal/s3test"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/tablestore/objfs"
)

func seeded(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed))
}

func writeFile(t testing.TB, fsys tablestore.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, fsys tablestore.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, f.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return buf
}

// TestPublishRace: of publications racing for one name exactly one wins,
// the others fail with fs.ErrExist, and the name holds the winner's bytes.
// It fails if the server ignored If-None-Match (every PUT would succeed).
// In odd rounds the writers publish equal bytes (two CREATE TAGs of one
// snapshot write the same JSON): still exactly one wins.
func TestPublishRace(t *testing.T) {
	srv := s3test.Start(t)
	fsys := srv.FS(t, 0)
	rng := seeded(t)
	content := func(round, i int) string {
		if round%2 == 1 {
			return "equal bytes"
		}
		return fmt.Sprintf("writer %d", i)
	}
	for round := range 6 {
		n := 2 + rng.IntN(6)
		final := fmt.Sprintf("/wh/snapshot/snapshot-%d", round)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			tmp := fmt.Sprintf("/wh/snapshot/.tmp-%d-%d", round, i)
			writeFile(t, fsys, tmp, []byte(content(round, i)))
			wg.Go(func() { errs[i] = fsys.RenameNoReplace(tmp, final) })
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both published %s", round, winner, i, final)
			case err == nil:
				winner = i
			case !errors.Is(err, fs.ErrExist):
				t.Fatalf("round %d: writer %d: %v, want fs.ErrExist", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer published", round)
		}
		if got, want := string(readAll(t, fsys, final)), content(round, winner); got != want {
			t.Fatalf("round %d: %s holds %q, want the winner's %q", round, final, got, want)
		}
	}
	// A publication over an existing name never replaces it.
	writeFile(t, fsys, "/wh/late", []byte("late"))
	if err := fsys.RenameNoReplace("/wh/late", "/wh/snapshot/snapshot-0"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("publish over an existing name: %v, want fs.ErrExist", err)
	}
	// Nor over an existing name holding the same bytes.
	writeFile(t, fsys, "/wh/again", []byte(content(1, 0)))
	if err := fsys.RenameNoReplace("/wh/again", "/wh/snapshot/snapshot-1"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("publish of equal bytes over an existing name: %v, want fs.ErrExist", err)
	}
}

// TestSemantics checks the FS guarantees the store relies on, against a
// model of the files.
func TestSemantics(t *testing.T) {
	srv := s3test.Start(t)
	fsys := srv.FS(t, 0)
	rng := seeded(t)

	if _, err := fsys.List("/wh"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("list of a missing dir: %v, want fs.ErrNotExist", err)
	}
	if err := fsys.MkdirAll("/wh/db.db/t/schema"); err != nil {
		t.Fatal(err)
	}
	if names, err := fsys.List("/wh/db.db/t/schema"); err != nil || len(names) != 0 {
		t.Fatalf("empty dir after MkdirAll: %v %v", names, err)
	}
	for _, d := range []string{"/wh", "/wh/db.db", "/wh/db.db/t"} {
		if st, err := fsys.Stat(d); err != nil || !st.IsDir() {
			t.Fatalf("stat %s: %v %v, want a directory", d, st, err)
		}
	}
	model := map[string][]byte{}
	for i := range 20 {
		name := fmt.Sprintf("/wh/db.db/t/bucket-%d/data-%d.parquet", i%3, i)
		data := make([]byte, rng.IntN(3*objfs.BlockSize))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		if i%5 == 0 {
			data = data[:0]
		}
		writeFile(t, fsys, name, data)
		model[name] = data
	}
	if names, err := fsys.List("/wh/db.db/t"); err != nil || fmt.Sprint(names) != "[bucket-0 bucket-1 bucket-2 schema]" {
		t.Fatalf("list: %v %v", names, err)
	}
	for name, want := range model {
		f, err := fsys.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if f.Size() != int64(len(want)) {
			t.Fatalf("%s: size %d, want %d", name, f.Size(), len(want))
		}
		for range 3 {
			off := rng.Int64N(int64(len(want)) + 2)
			buf := make([]byte, rng.IntN(objfs.BlockSize))
			n, err := f.ReadAt(buf, off)
			wantN := max(0, min(len(buf), len(want)-int(off)))
			if n != wantN || !bytes.Equal(buf[:n], want[min(off, int64(len(want))):][:n]) {
				t.Fatalf("%s: ReadAt(%d bytes, %d) = %d, %v; want %d bytes", name, len(buf), off, n, err, wantN)
			}
			if n < len(buf) && !errors.Is(err, io.EOF) {
				t.Fatalf("%s: short read without io.EOF: %v", name, err)
			}
		}
		// An empty read inside the file reads nothing and succeeds.
		if n, err := f.ReadAt(nil, int64(len(want))/2); n != 0 || err != nil {
			t.Fatalf("%s: empty ReadAt at %d = %d, %v; want 0, nil", name, len(want)/2, n, err)
		}
		f.Close()
	}

	// Rename replaces a file atomically (hint files).
	writeFile(t, fsys, "/wh/db.db/t/LATEST", []byte("1"))
	writeFile(t, fsys, "/wh/db.db/t/.tmp-hint", []byte("2"))
	if err := fsys.Rename("/wh/db.db/t/.tmp-hint", "/wh/db.db/t/LATEST"); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, fsys, "/wh/db.db/t/LATEST"); string(got) != "2" {
		t.Fatalf("LATEST after rename: %q", got)
	}
	// A read of a file replaced since it was opened fails (its version is
	// gone), and not as if the file already existed.
	opened, err := fsys.Open("/wh/db.db/t/LATEST")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, fsys, "/wh/db.db/t/LATEST", []byte("3"))
	if _, err := opened.ReadAt(make([]byte, 1), 0); err == nil || errors.Is(err, fs.ErrExist) {
		t.Fatalf("read of a replaced file: %v, want an error other than fs.ErrExist", err)
	}
	opened.Close()
	if _, err := fsys.Stat("/wh/db.db/t/.tmp-hint"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("rename left its source: %v", err)
	}
	// Directories cannot be renamed on an object store; the store knows.
	if err := fsys.Rename("/wh/db.db/t", "/wh/db.db/u"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("rename of a directory: %v, want errors.ErrUnsupported", err)
	}

	// Remove: a file, an empty dir; not a missing name or a full dir.
	if err := fsys.Remove("/wh/db.db/t/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("remove of a missing file: %v", err)
	}
	if err := fsys.Remove("/wh/db.db/t/bucket-0"); err == nil {
		t.Fatal("removed a directory that is not empty")
	}
	if err := fsys.Remove("/wh/db.db/t/schema"); err != nil {
		t.Fatalf("remove of an empty dir: %v", err)
	}
	if _, err := fsys.Stat("/wh/db.db/t/schema"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("removed dir still there: %v", err)
	}
	// A file named with a UUID is opened without a request the second
	// time; removing it through the FS forgets that.
	uuidFile := "/wh/db.db/t/bucket-0/data-0123456789abcdef0123456789abcdef-0.parquet"
	writeFile(t, fsys, uuidFile, []byte("once"))
	if got := readAll(t, fsys, uuidFile); string(got) != "once" {
		t.Fatalf("%s: %q", uuidFile, got)
	}
	if err := fsys.Remove(uuidFile); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Open(uuidFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open after remove: %v, want fs.ErrNotExist", err)
	}
	if err := fsys.RemoveAll("/wh/db.db/t"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.List("/wh/db.db/t"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("list after RemoveAll: %v", err)
	}
	if _, err := fsys.Open("/wh/db.db/t/bucket-1/data-1.parquet"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open after RemoveAll: %v", err)
	}
}

// TestCache: reads through a small cache give the object's bytes, the
// cache stays within its budget, a second read of what fits is served
// from disk, and a replaced object is never read stale.
func TestCache(t *testing.T) {
	srv := s3test.Start(t)
	const budget = 3 * objfs.BlockSize
	c, err := objfs.NewCache(t.TempDir(), budget)
	if err != nil {
		t.Fatal(err)
	}
	fsys := objfs.New(t.Context(), srv.Client, srv.Bucket(t), c)
	rng := seeded(t)
	data := make([]byte, 5*objfs.BlockSize+123)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	writeFile(t, fsys, "/f", data)
	f, err := fsys.Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	for range 40 {
		off := rng.Int64N(int64(len(data)))
		buf := make([]byte, rng.Int64N(int64(len(data))-off)+1)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, data[off:off+int64(len(buf))]) {
			t.Fatalf("ReadAt(%d bytes, %d): wrong bytes", len(buf), off)
		}
		if st := c.Stats(); st.Bytes > budget {
			t.Fatalf("cache holds %d bytes, budget %d", st.Bytes, budget)
		}
	}
	// Two blocks fit: reading them twice fetches them once.
	small := make([]byte, 2*objfs.BlockSize)
	if _, err := f.ReadAt(small, 0); err != nil {
		t.Fatal(err)
	}
	before := c.Stats()
	if _, err := f.ReadAt(small, 0); err != nil {
		t.Fatal(err)
	}
	if after := c.Stats(); after.Misses != before.Misses || after.Hits != before.Hits+2 {
		t.Fatalf("second read: %+v then %+v, want 2 hits and no miss", before, after)
	}
	f.Close()

	writeFile(t, fsys, "/f", []byte("replaced"))
	if got := readAll(t, fsys, "/f"); string(got) != "replaced" {
		t.Fatalf("after replacing the object: %q", got)
	}
}

// TestLargeFile: a file past the in-memory write buffer (so written
// through a local temporary file and uploaded in parts) reads back whole.
func TestLargeFile(t *testing.T) {
	srv := s3test.Start(t)
	fsys := srv.FS(t, 0)
	rng := seeded(t)
	data := make([]byte, 20<<20+rng.IntN(1<<20))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	f, err := fsys.Create("/big")
	if err != nil {
		t.Fatal(err)
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(3<<20))
		if _, err := f.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, fsys, "/big"); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, wrote %d, or different bytes", len(got), len(data))
	}
}

// TestPublishLostAnswer: when the answer to a publishing PUT is lost after
// the store applied it, the client's retry fails its precondition on our
// own object; that is a success, not a lost race (a commit treating it as
// lost would remove the files of the snapshot it published).
func TestPublishLostAnswer(t *testing.T) {
	srv := s3test.Start(t)
	upstream, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	var dropped atomic.Int64
	var dropNext, refuseHead atomic.Bool
	dropNext.Store(true)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && refuseHead.Load() {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPut && r.Header.Get("If-None-Match") == "*" && dropped.Add(1) > 0 /* counts every attempt */ && dropNext.CompareAndSwap(true, false) {
			rec := httptest.NewRecorder()
			proxy.ServeHTTP(rec, r) // applied upstream...
			if rec.Code != http.StatusOK {
				t.Errorf("proxied PUT: %d", rec.Code)
			}
			conn, _, err := w.(http.Hijacker).Hijack() // ...and its answer lost
			if err == nil {
				conn.Close()
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	cfg := s3test.Config(front.URL)
	client, err := objfs.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fsys := objfs.New(t.Context(), client, srv.Bucket(t), nil)
	writeFile(t, fsys, "/wh/.tmp-1", []byte("ours"))
	if err := fsys.RenameNoReplace("/wh/.tmp-1", "/wh/snapshot-1"); err != nil {
		t.Fatalf("publication whose answer was lost: %v, want success", err)
	}
	if dropped.Load() < 2 {
		t.Fatalf("the client did not retry the PUT (%d attempts)", dropped.Load())
	}
	if got := readAll(t, fsys, "/wh/snapshot-1"); string(got) != "ours" {
		t.Fatalf("published %q", got)
	}
	// Someone else's bytes under the name are a lost race.
	writeFile(t, fsys, "/wh/.tmp-2", []byte("theirs"))
	if err := fsys.RenameNoReplace("/wh/.tmp-2", "/wh/snapshot-1"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("publication over another's: %v, want fs.ErrExist", err)
	}
	// A lost answer whose object cannot then be looked at is an error,
	// but not a lost race: the commit must not remove what it published.
	writeFile(t, fsys, "/wh/.tmp-3", []byte("ours again"))
	dropNext.Store(true)
	refuseHead.Store(true)
	err = fsys.RenameNoReplace("/wh/.tmp-3", "/wh/snapshot-3")
	refuseHead.Store(false)
	if err == nil || errors.Is(err, fs.ErrExist) {
		t.Fatalf("publication whose answer was lost and whose object could not be read: %v, want an error other than fs.ErrExist", err)
	}
	if got := readAll(t, fsys, "/wh/snapshot-3"); string(got) != "ours again" {
		t.Fatalf("published %q", got)
	}
}

// TestCacheConcurrent: goroutines reading overlapping ranges of several
// objects through a cache smaller than them (so blocks are evicted while
// others read them) all get the objects' bytes, and the cache stays
// within its budget.
func TestCacheConcurrent(t *testing.T) {
	srv := s3test.Start(t)
	const budget = 2 * objfs.BlockSize
	dir := t.TempDir()
	c, err := objfs.NewCache(dir, budget)
	if err != nil {
		t.Fatal(err)
	}
	fsys := objfs.New(t.Context(), srv.Client, srv.Bucket(t), c)
	rng := seeded(t)
	objects := make([][]byte, 3)
	for i := range objects {
		objects[i] = make([]byte, 2*objfs.BlockSize+rng.IntN(objfs.BlockSize))
		for j := range objects[i] {
			objects[i][j] = byte(rng.Uint32())
		}
		writeFile(t, fsys, fmt.Sprintf("/o%d", i), objects[i])
	}
	var wg sync.WaitGroup
	for g := range 6 {
		seed := rng.Uint64()
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for range 15 {
				i := r.IntN(len(objects))
				data := objects[i]
				f, err := fsys.Open(fmt.Sprintf("/o%d", i))
				if err != nil {
					t.Error(err)
					return
				}
				off := r.Int64N(int64(len(data)))
				buf := make([]byte, r.Int64N(int64(len(data))-off)+1)
				_, err = f.ReadAt(buf, off)
				f.Close()
				if err != nil && !errors.Is(err, io.EOF) {
					t.Error(err)
					return
				}
				if !bytes.Equal(buf, data[off:off+int64(len(buf))]) {
					t.Errorf("goroutine %d: object %d, ReadAt(%d bytes, %d): wrong bytes", g, i, len(buf), off)
					return
				}
			}
		})
	}
	wg.Wait()
	if st := c.Stats(); st.Bytes > budget || st.Hits == 0 {
		t.Fatalf("cache %+v: want at most %d bytes and some hits", st, budget)
	}
	// The bound holds on disk, not only in the cache's count.
	if used := dirBytes(t, dir); used > budget {
		t.Fatalf("cache directory holds %d bytes, budget %d", used, budget)
	}
}

func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}
