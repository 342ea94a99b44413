// Package objfs is a tablestore.FS over an S3-compatible object store.
//
//	path "/wh/db.db/t/snapshot/snapshot-3"  ->  key "wh/db.db/t/snapshot/snapshot-3"
//	Create  -> buffered (memory, then a local temporary file), one PUT at
//	           Sync/Close (multipart past 16 MiB)
//	Open    -> HEAD (size, ETag), then ranged GETs through the disk Cache
//	RenameNoReplace -> conditional PUT (If-None-Match: *) of the new key
//
// Directories are key prefixes; MkdirAll writes an empty "dir/" marker so an
// empty database or table directory still exists. What an object store
// cannot do is refused with errors.ErrUnsupported (renaming a directory),
// and the store avoids needing it.
package objfs

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/flightd/flightd/tablestore"
)

// FS is a tablestore.FS over one bucket. It is safe for concurrent use.
type FS struct {
	ctx    context.Context
	client *minio.Client
	bucket string
	cache  *Cache // nil: every read goes to the store

	// stats remembers the size and ETag of files whose names are never
	// reused (immutableName), so opening one again costs no request.
	statsMu sync.Mutex
	stats   map[string]objectStat
}

type objectStat struct {
	etag string
	size int64
}

// maxStats bounds FS.stats; past it the map starts over.
const maxStats = 1 << 16

// uuidName matches the UUIDs the store (and Paimon) put in the names of
// data files and manifests, which are written once and never rewritten.
var uuidName = regexp.MustCompile(`[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func immutableName(name string) bool {
	base := path.Base(name)
	return !strings.HasPrefix(base, ".") && uuidName.MatchString(base)
}

func (f *FS) rememberStat(name string, st objectStat) {
	if !immutableName(name) {
		return
	}
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	if f.stats == nil || len(f.stats) >= maxStats {
		f.stats = map[string]objectStat{}
	}
	f.stats[key(name)] = st
}

func (f *FS) forgetStats(prefix string) {
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	for k := range f.stats {
		if strings.HasPrefix(k, prefix) {
			delete(f.stats, k)
		}
	}
}

var (
	_ tablestore.FS              = (*FS)(nil)
	_ tablestore.WholeFileReader = (*FS)(nil)
)

// New returns an FS over bucket. ctx bounds every request (the FS interface
// has none); cache may be nil.
func New(ctx context.Context, client *minio.Client, bucket string, cache *Cache) *FS {
	return &FS{ctx: ctx, client: client, bucket: bucket, cache: cache}
}

// Bucket is the bucket the FS is over.
func (f *FS) Bucket() string { return f.bucket }

// key maps a slash-separated path to an object key.
func key(name string) string { return strings.TrimPrefix(path.Clean("/"+name), "/") }

// dirPrefix is the prefix of the keys under directory name.
func dirPrefix(name string) string {
	if k := key(name); k != "" {
		return k + "/"
	}
	return ""
}

// pathErr wraps a client error as an *fs.PathError, mapping a missing key
// to fs.ErrNotExist and a failed If-None-Match (a "put") to fs.ErrExist; a
// failed If-Match (a "read") means the object was replaced.
func pathErr(op, name string, err error) error {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey" || resp.StatusCode == http.StatusNotFound:
		err = fmt.Errorf("%w (%s)", fs.ErrNotExist, resp.Code)
	case resp.StatusCode == http.StatusPreconditionFailed && op == "put":
		err = fmt.Errorf("%w (%s)", fs.ErrExist, resp.Code)
	case resp.StatusCode == http.StatusPreconditionFailed:
		err = fmt.Errorf("replaced since it was opened (%s)", resp.Code)
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func (f *FS) put(name string, data []byte, opts minio.PutObjectOptions) error {
	return f.putReader(name, bytes.NewReader(data), int64(len(data)), opts)
}

func (f *FS) putReader(name string, r io.Reader, size int64, opts minio.PutObjectOptions) error {
	info, err := f.client.PutObject(f.ctx, f.bucket, key(name), r, size, opts)
	if err != nil {
		return pathErr("put", name, err)
	}
	f.rememberStat(name, objectStat{etag: info.ETag, size: info.Size})
	return nil
}

// writeMemLimit is how much of a file being written stays in memory;
// beyond it the file goes to a local temporary file (os.TempDir) until its
// PUT, which then streams it in parts.
const writeMemLimit = 8 << 20

// Create buffers the file: an object appears whole at its PUT, so there is
// nothing to stream to before Sync or Close.
func (f *FS) Create(name string) (tablestore.File, error) {
	return &file{fs: f, name: name}, nil
}

type file struct {
	fs     *FS
	name   string
	mem    bytes.Buffer
	tmp    *os.File // once the file outgrew writeMemLimit
	size   int64
	dirty  bool
	closed bool
}

func (w *file) Write(p []byte) (int, error) {
	if w.closed {
		return 0, &fs.PathError{Op: "write", Path: w.name, Err: fs.ErrClosed}
	}
	w.dirty = true
	if w.tmp == nil && w.size+int64(len(p)) > writeMemLimit {
		tmp, err := os.CreateTemp("", "flightd-put-*")
		if err != nil {
			return 0, &fs.PathError{Op: "write", Path: w.name, Err: err}
		}
		w.tmp = tmp
		if _, err := tmp.Write(w.mem.Bytes()); err != nil {
			return 0, &fs.PathError{Op: "write", Path: w.name, Err: err}
		}
		w.mem = bytes.Buffer{}
	}
	var n int
	var err error
	if w.tmp != nil {
		n, err = w.tmp.Write(p)
	} else {
		n, err = w.mem.Write(p)
	}
	w.size += int64(n)
	return n, err
}

// Sync uploads the whole file: a PUT is durable when it returns.
func (w *file) Sync() error {
	if w.closed {
		return &fs.PathError{Op: "sync", Path: w.name, Err: fs.ErrClosed}
	}
	if !w.dirty {
		return nil
	}
	var r io.Reader = bytes.NewReader(w.mem.Bytes())
	if w.tmp != nil {
		r = io.NewSectionReader(w.tmp, 0, w.size)
	}
	if err := w.fs.putReader(w.name, r, w.size, minio.PutObjectOptions{}); err != nil {
		return err
	}
	w.dirty = false
	return nil
}

func (w *file) Close() error {
	if w.closed {
		return &fs.PathError{Op: "close", Path: w.name, Err: fs.ErrClosed}
	}
	err := w.Sync()
	w.closed = true
	w.mem = bytes.Buffer{}
	if w.tmp != nil {
		err = errors.Join(err, w.tmp.Close(), os.Remove(w.tmp.Name()))
	}
	return err
}

// Open stats name (once per FS for an immutable name); reads are pinned to
// the version it saw (its ETag), so a replaced object gives an error rather
// than a mix of two versions. An immutable file removed by another node
// since may open and then fail its reads with fs.ErrNotExist.
func (f *FS) Open(name string) (tablestore.ReadFile, error) {
	f.statsMu.Lock()
	st, ok := f.stats[key(name)]
	f.statsMu.Unlock()
	if !ok {
		info, err := f.client.StatObject(f.ctx, f.bucket, key(name), minio.StatObjectOptions{})
		if err != nil {
			return nil, pathErr("open", name, err)
		}
		st = objectStat{etag: info.ETag, size: info.Size}
		f.rememberStat(name, st)
	}
	return &readFile{fs: f, name: name, etag: st.etag, size: st.size}, nil
}

type readFile struct {
	fs   *FS
	name string
	etag string
	size int64
}

func (r *readFile) Size() int64  { return r.size }
func (r *readFile) Close() error { return nil }

func (r *readFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: r.name, Err: fs.ErrInvalid}
	}
	if len(p) == 0 {
		return 0, nil // no range to ask for: bytes=off-(off-1) is refused
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := p
	if rest := r.size - off; int64(len(want)) > rest {
		want = want[:rest]
	}
	var err error
	if r.fs.cache != nil {
		err = r.fs.cache.read(cacheID{key: key(r.name), etag: r.etag, size: r.size}, want, off, r.fetch)
	} else {
		err = r.fetch(want, off)
	}
	if err != nil {
		return 0, err
	}
	if len(want) < len(p) {
		return len(want), io.EOF
	}
	return len(p), nil
}

// fetch reads len(p) bytes at off with one ranged GET.
func (r *readFile) fetch(p []byte, off int64) error {
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+int64(len(p))-1); err != nil {
		return &fs.PathError{Op: "read", Path: r.name, Err: err}
	}
	if err := opts.SetMatchETag(r.etag); err != nil {
		return &fs.PathError{Op: "read", Path: r.name, Err: err}
	}
	obj, err := r.fs.client.GetObject(r.fs.ctx, r.fs.bucket, key(r.name), opts)
	if err != nil {
		return pathErr("read", r.name, err)
	}
	defer obj.Close()
	if _, err := io.ReadFull(obj, p); err != nil {
		return pathErr("read", r.name, err)
	}
	return nil
}

// Rename replaces newname with oldname's content by a server-side copy,
// atomic for readers of newname, then removes oldname. Directories cannot
// be renamed (errors.ErrUnsupported).
func (f *FS) Rename(oldname, newname string) error {
	if _, err := f.client.StatObject(f.ctx, f.bucket, key(oldname), minio.StatObjectOptions{}); err != nil {
		err = pathErr("rename", oldname, err)
		if errors.Is(err, fs.ErrNotExist) {
			if isDir, derr := f.isDir(oldname); derr == nil && isDir {
				return &fs.PathError{Op: "rename", Path: oldname, Err: fmt.Errorf("directory on an object store: %w", errors.ErrUnsupported)}
			}
		}
		return err
	}
	dst := minio.CopyDestOptions{Bucket: f.bucket, Object: key(newname)}
	src := minio.CopySrcOptions{Bucket: f.bucket, Object: key(oldname)}
	if _, err := f.client.CopyObject(f.ctx, dst, src); err != nil {
		return pathErr("rename", oldname, err)
	}
	return f.removeObject(oldname)
}

// RenameNoReplace publishes oldname's content as newname with a PUT that
// the store refuses when newname exists (If-None-Match: *): of racing
// publications exactly one wins. A server-side copy cannot be conditional
// on every S3 implementation, so the bytes go through here; what is
// published this way (snapshots, schemas, tags) is small.
func (f *FS) RenameNoReplace(oldname, newname string) error {
	data, err := f.readAll(oldname)
	if err != nil {
		return err
	}
	// The token tells our object from another writer's, whose bytes may
	// equal ours (two CREATE TAGs of one snapshot publish the same JSON).
	token := rand.Text()
	opts := minio.PutObjectOptions{UserMetadata: map[string]string{publishTokenMeta: token}}
	opts.SetMatchETagExcept("*")
	if err := f.put(newname, data, opts); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		// The client retries a PUT whose answer was lost; if the first
		// attempt landed, the retry fails its precondition on our own
		// object, which is a success. Taking our own object for another's
		// would have a commit remove the files it published, so what
		// cannot be told is not reported as fs.ErrExist.
		info, serr := f.client.StatObject(f.ctx, f.bucket, key(newname), minio.StatObjectOptions{})
		if serr != nil {
			return unknownOwner(newname, serr)
		}
		got, marked := info.UserMetadata[publishTokenMeta]
		if marked && got != token {
			return err
		}
		if !marked { // a server that keeps no user metadata: compare bytes
			published, rerr := f.readAll(newname)
			if rerr != nil {
				return unknownOwner(newname, rerr)
			}
			if !bytes.Equal(published, data) {
				return err
			}
		}
	}
	return f.removeObject(oldname)
}

func unknownOwner(name string, err error) error {
	return &fs.PathError{Op: "publish", Path: name, Err: fmt.Errorf("exists, and whose it is could not be read: %v", err)}
}

// publishTokenMeta is the user metadata (x-amz-meta-flightd-publish) that
// RenameNoReplace marks its PUT with, in the canonical form minio-go
// gives back.
const publishTokenMeta = "Flightd-Publish"

// ReadFile reads the whole of name: a file written once through the disk
// cache (Open and ReadAt), any other with one GET (no HEAD first, and a
// missing file costs that one request).
func (f *FS) ReadFile(name string) ([]byte, error) {
	if f.cache == nil || !immutableName(name) {
		return f.readAll(name)
	}
	r, err := f.Open(name)
	if err != nil {
		return nil, err
	}
	data := make([]byte, r.Size())
	if _, err := r.ReadAt(data, 0); err != nil {
		return nil, err
	}
	return data, nil
}

func (f *FS) readAll(name string) ([]byte, error) {
	obj, err := f.client.GetObject(f.ctx, f.bucket, key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, pathErr("read", name, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		return nil, pathErr("read", name, err)
	}
	return data, nil
}

func (f *FS) removeObject(name string) error { return f.removeKey(name, key(name)) }

func (f *FS) removeKey(name, k string) error {
	f.statsMu.Lock()
	delete(f.stats, k)
	f.statsMu.Unlock()
	if err := f.client.RemoveObject(f.ctx, f.bucket, k, minio.RemoveObjectOptions{}); err != nil {
		return pathErr("remove", name, err)
	}
	return nil
}

// Remove removes a file, or an empty directory (its marker); like
// os.Remove it fails with fs.ErrNotExist when name is neither.
func (f *FS) Remove(name string) error {
	_, err := f.client.StatObject(f.ctx, f.bucket, key(name), minio.StatObjectOptions{})
	if err == nil {
		return f.removeObject(name)
	}
	if err = pathErr("remove", name, err); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	names, lerr := f.List(name)
	switch {
	case errors.Is(lerr, fs.ErrNotExist):
		return err
	case lerr != nil:
		return lerr
	case len(names) > 0:
		return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
	}
	return f.removeKey(name, dirPrefix(name))
}

// RemoveAll removes name and every key under it.
func (f *FS) RemoveAll(name string) error {
	f.forgetStats(key(name))
	objs := make(chan minio.ObjectInfo)
	listErr := make(chan error, 1)
	go func() {
		defer close(objs)
		objs <- minio.ObjectInfo{Key: key(name)}
		for o := range f.client.ListObjects(f.ctx, f.bucket, minio.ListObjectsOptions{Prefix: dirPrefix(name), Recursive: true}) {
			if o.Err != nil {
				listErr <- pathErr("removeall", name, o.Err)
				return
			}
			objs <- minio.ObjectInfo{Key: o.Key}
		}
		listErr <- nil
	}()
	var errs []error
	for e := range f.client.RemoveObjects(f.ctx, f.bucket, objs, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && !errors.Is(pathErr("", "", e.Err), fs.ErrNotExist) {
			errs = append(errs, pathErr("removeall", e.ObjectName, e.Err))
		}
	}
	return errors.Join(append(errs, <-listErr)...)
}

// List lists the files and subdirectories directly under dir.
func (f *FS) List(dir string) ([]string, error) {
	prefix := dirPrefix(dir)
	var names []string
	found := false
	for o := range f.client.ListObjects(f.ctx, f.bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if o.Err != nil {
			return nil, pathErr("list", dir, o.Err)
		}
		found = true
		if n := strings.TrimSuffix(strings.TrimPrefix(o.Key, prefix), "/"); n != "" {
			names = append(names, n)
		}
	}
	if !found && prefix != "" { // the bucket itself always exists
		return nil, &fs.PathError{Op: "list", Path: dir, Err: fs.ErrNotExist}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// MkdirIn is MkdirAll of rel under parent: an object store has no
// directory to bring back, only prefixes (dropping a table there removes
// its files in place).
func (f *FS) MkdirIn(parent, rel string) error { return f.MkdirAll(parent + "/" + rel) }

// MkdirAll writes dir's marker; the parents exist as its prefixes.
func (f *FS) MkdirAll(dir string) error {
	if dirPrefix(dir) == "" {
		return nil // the bucket
	}
	_, err := f.client.PutObject(f.ctx, f.bucket, dirPrefix(dir), bytes.NewReader(nil), 0, minio.PutObjectOptions{})
	if err != nil {
		return pathErr("mkdir", dir, err)
	}
	return nil
}

func (f *FS) isDir(name string) (bool, error) {
	if dirPrefix(name) == "" {
		return true, nil
	}
	opts := minio.ListObjectsOptions{Prefix: dirPrefix(name), MaxKeys: 1}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel() // stops the listing after its first key
	for o := range f.client.ListObjects(ctx, f.bucket, opts) {
		if o.Err != nil {
			return false, pathErr("stat", name, o.Err)
		}
		return true, nil
	}
	return false, nil
}

func (f *FS) Stat(name string) (fs.FileInfo, error) {
	info, err := f.client.StatObject(f.ctx, f.bucket, key(name), minio.StatObjectOptions{})
	if err == nil {
		return fileInfo{name: path.Base(name), size: info.Size, mod: info.LastModified}, nil
	}
	if err = pathErr("stat", name, err); !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	isDir, derr := f.isDir(name)
	if derr != nil {
		return nil, derr
	}
	if !isDir {
		return nil, err
	}
	return fileInfo{name: path.Base(name), dir: true}, nil
}

// SyncDir does nothing: an object's PUT is durable and listed once it
// returns (S3 lists with read-after-write consistency).
func (f *FS) SyncDir(string) error { return nil }

type fileInfo struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) ModTime() time.Time { return i.mod }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }

func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
