package tablestore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// FS is the file system every byte of a warehouse goes through. Paths are
// slash-separated and absolute for the local implementation; an object-store
// implementation maps them to keys. Tests wrap an FS to inject faults.
//
// The store relies on these guarantees:
//   - a File's data is durable once Sync returns;
//   - Rename atomically replaces newname (hint files) and moves
//     directories (dropped tables);
//   - RenameNoReplace atomically publishes newname and fails with an error
//     wrapping fs.ErrExist when it already exists (snapshot and schema
//     publication; put-if-absent on object stores);
//   - SyncDir makes created and renamed directory entries durable.
type FS interface {
	// Create creates or truncates name for writing.
	Create(name string) (File, error)
	// Open opens name for random-access reads.
	Open(name string) (ReadFile, error)
	Rename(oldname, newname string) error
	RenameNoReplace(oldname, newname string) error
	Remove(name string) error
	RemoveAll(name string) error
	// List returns the names (not paths) of the entries of dir, sorted. A
	// missing dir gives an error wrapping fs.ErrNotExist.
	List(dir string) ([]string, error)
	MkdirAll(dir string) error
	// MkdirIn creates the directories of the slash-separated path rel
	// under parent, which must exist (an error wrapping fs.ErrNotExist
	// otherwise). Unlike MkdirAll it never creates parent again: a writer
	// racing the drop of a table or database (its directory renamed
	// away) must not bring the directory back.
	MkdirIn(parent, rel string) error
	Stat(name string) (fs.FileInfo, error)
	SyncDir(dir string) error
}

// exchanger is an FS that swaps two existing names atomically. A hint is
// then rewritten in a spare file of its own and swapped into place: no
// file is created and none freed per commit, where creating one is the
// dearest call a commit makes on ext4 (0.2-0.8 ms of CPU on the
// benchmark machine, bench/README.md "Per-commit fixed costs").
type exchanger interface {
	Exchange(a, b string) error
}

// File is a file being written.
type File interface {
	io.Writer
	Sync() error
	Close() error
}

// ReadFile is a file opened for reading at arbitrary offsets.
type ReadFile interface {
	io.ReaderAt
	Size() int64
	Close() error
}

// NewLocalFS returns an FS over the local file system.
func NewLocalFS() FS { return localFS{} }

type localFS struct{}

func (localFS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
}

type localReadFile struct {
	*os.File
	size int64
}

func (f localReadFile) Size() int64 { return f.size }

func (localFS) Open(name string) (ReadFile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return statReadFile(f)
}

// statReadFile is f opened for reading, with its size.
func statReadFile(f *os.File) (ReadFile, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return localReadFile{File: f, size: st.Size()}, nil
}

func (localFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// RenameNoReplace uses a hard link, which fails when newname exists, then
// removes oldname: the publication is atomic even between processes.
func (localFS) RenameNoReplace(oldname, newname string) error {
	if err := os.Link(oldname, newname); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("rename %s: %w", newname, fs.ErrExist)
		}
		return err
	}
	return os.Remove(oldname)
}

func (localFS) Remove(name string) error    { return os.Remove(name) }
func (localFS) RemoveAll(name string) error { return os.RemoveAll(name) }

func (localFS) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	slices.Sort(names)
	return names, nil
}

func (localFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

func (localFS) MkdirIn(parent, rel string) error { return mkdirIn(parent, rel, os.Mkdir) }

// mkdirIn makes each directory of rel under parent that does not exist
// with mkdir; never parent itself.
func mkdirIn(parent, rel string, mkdir func(string, os.FileMode) error) error {
	dir := parent
	for _, name := range strings.Split(rel, "/") {
		if name == "" {
			continue
		}
		dir = joinPath(dir, name)
		if err := mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}
func (localFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

func (localFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return syncClose(d)
}

// syncClose syncs and closes d.
func syncClose(d *os.File) error {
	err := d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// joinPath joins slash-separated path elements.
func joinPath(elem ...string) string { return filepath.ToSlash(filepath.Join(elem...)) }

// writeFileSync writes the concatenation of data to name and syncs it.
func writeFileSync(fsys FS, name string, data ...[]byte) error {
	f, err := createWritten(fsys, name, data...)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// createWritten creates name holding the concatenation of data, not yet
// synced: the caller syncs (syncAll) or not, and closes it.
func createWritten(fsys FS, name string, data ...[]byte) (File, error) {
	f, err := fsys.Create(name)
	if err != nil {
		return nil, err
	}
	for _, d := range data {
		if _, err := f.Write(d); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// writeClosed writes data to name, not synced, and closes it.
func writeClosed(fsys FS, name string, data []byte) error {
	f, err := createWritten(fsys, name, data)
	if err != nil {
		return err
	}
	return f.Close()
}

// syncAll syncs files and dirs at once and then closes the files: one
// wait for the device instead of one per file (a local file system's
// journal commits concurrent syncs together; an object store uploads in
// parallel). Nothing is durable for the caller until it returns nil.
func syncAll(fsys FS, files []File, dirs ...string) error {
	errs := make([]error, len(files)+len(dirs))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() { errs[i] = f.Sync() })
	}
	for i, d := range dirs {
		wg.Go(func() {
			if err := fsys.SyncDir(d); err != nil {
				errs[len(files)+i] = fmt.Errorf("sync %s: %w", d, err)
			}
		})
	}
	wg.Wait()
	for i, f := range files {
		if err := f.Close(); errs[i] == nil {
			errs[i] = err
		}
	}
	return errors.Join(errs...)
}

// WholeFileReader is an FS that reads a whole file in fewer requests than
// Open and ReadAt (an object store: one GET instead of a HEAD and a GET).
type WholeFileReader interface {
	ReadFile(name string) ([]byte, error)
}

// readFileAll reads the whole of name.
func readFileAll(fsys FS, name string) ([]byte, error) {
	return readFileInto(fsys, name, nil)
}

// readFileInto reads the whole of name into buf when it has the room,
// into a new slice otherwise.
func readFileInto(fsys FS, name string, buf []byte) ([]byte, error) {
	if r, ok := fsys.(WholeFileReader); ok {
		return r.ReadFile(name)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if int64(cap(buf)) >= f.Size() {
		buf = buf[:f.Size()]
	} else {
		buf = make([]byte, f.Size())
	}
	n, err := f.ReadAt(buf, 0)
	if n == len(buf) {
		return buf, nil
	}
	return nil, err
}
