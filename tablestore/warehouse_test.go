package tablestore

import "testing"

// warehouse is where a test's stores live: a local directory, or a bucket
// on a local S3 server.
type warehouse struct {
	fs     FS
	root   string
	env    []string // lets a child process (crashWriter) open it: see warehouseFromEnv
	remote bool     // an object store: every call a request, so tests run smaller
}

// The object-store warehouse comes from package tablestore_test
// (objstore_test.go), which can import objfs; this package cannot.
var (
	// ObjectStoreWarehouse gives the test a new bucket (or skips it when
	// no S3 server is installed).
	ObjectStoreWarehouse func(t testing.TB) (fsys FS, root string, env []string)
	// ObjectStoreFromEnv opens the bucket named by such an env.
	ObjectStoreFromEnv func() (FS, bool, error)
)

// forEachWarehouse runs f on a local directory and on an object store.
func forEachWarehouse(t *testing.T, f func(t *testing.T, wh warehouse)) {
	t.Run("local", func(t *testing.T) { f(t, warehouse{fs: NewLocalFS(), root: t.TempDir()}) })
	t.Run("s3", func(t *testing.T) {
		fsys, root, env := ObjectStoreWarehouse(t)
		f(t, warehouse{fs: fsys, root: root, env: env, remote: true})
	})
}

// warehouseFromEnv opens, in a child process, the warehouse its parent
// named: the object store of ObjectStoreFromEnv, else the local dir.
func warehouseFromEnv() (FS, error) {
	fsys, ok, err := ObjectStoreFromEnv()
	if err != nil || ok {
		return fsys, err
	}
	return NewLocalFS(), nil
}

// countFilesIn counts the files under root (recursively) whose names start
// with prefix; an entry that lists is a directory.
func countFilesIn(t *testing.T, fsys FS, root, prefix string) int {
	t.Helper()
	names, err := fsys.List(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		p := joinPath(root, name)
		if _, err := fsys.List(p); err == nil {
			n += countFilesIn(t, fsys, p, prefix)
		} else if len(name) >= len(prefix) && name[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}
