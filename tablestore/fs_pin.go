package tablestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// dirPinner is an FS that holds a directory by handle (a local file
// system, through os.Root): what a pinnedDir reads, creates, links and
// removes is in the directory it pinned, also once another process has
// renamed that away (DROP TABLE moves a table's directory to the trash)
// and put a table created again under its path. A table's state pins its
// directory when it first finds it (tableState.fs), so that nothing it
// does lands in, or is read from, a table of the same name another node
// created since: its reads see the dropped table until the trash goes,
// its commits publish into the dropped table and fail.
type dirPinner interface {
	PinDir(dir string) (*pinnedDir, error)
}

// pinnedDir is an FS whose names under dir, and dir itself, go through
// the pinned handle; other names go to the underlying FS.
type pinnedDir struct {
	FS
	dir  string
	root *os.Root
}

// PinDir implements dirPinner.
func (l localFS) PinDir(dir string) (*pinnedDir, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &pinnedDir{FS: l, dir: dir, root: root}, nil
}

// rel returns name relative to the pinned directory ("." for itself), if
// it is in it.
func (p *pinnedDir) rel(name string) (string, bool) {
	if name == p.dir {
		return ".", true
	}
	rel, ok := strings.CutPrefix(name, p.dir+"/")
	return rel, ok && rel != ""
}

func (p *pinnedDir) Create(name string) (File, error) {
	if rel, ok := p.rel(name); ok {
		return p.root.OpenFile(rel, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	}
	return p.FS.Create(name)
}

func (p *pinnedDir) Open(name string) (ReadFile, error) {
	rel, ok := p.rel(name)
	if !ok {
		return p.FS.Open(name)
	}
	f, err := p.root.Open(rel)
	if err != nil {
		return nil, err
	}
	return statReadFile(f)
}

func (p *pinnedDir) Rename(oldname, newname string) error {
	oldRel, ok1 := p.rel(oldname)
	newRel, ok2 := p.rel(newname)
	if !ok1 || !ok2 {
		return p.FS.Rename(oldname, newname)
	}
	return p.root.Rename(oldRel, newRel)
}

// RenameNoReplace links, as localFS does, inside the pinned directory.
func (p *pinnedDir) RenameNoReplace(oldname, newname string) error {
	oldRel, ok1 := p.rel(oldname)
	newRel, ok2 := p.rel(newname)
	if !ok1 || !ok2 {
		return p.FS.RenameNoReplace(oldname, newname)
	}
	if err := p.root.Link(oldRel, newRel); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("rename %s: %w", newname, fs.ErrExist)
		}
		return err
	}
	return p.root.Remove(oldRel)
}

func (p *pinnedDir) Remove(name string) error {
	rel, ok := p.rel(name)
	switch {
	case !ok:
		return p.FS.Remove(name)
	case rel == ".":
		return p.removeSelf(p.FS.Remove)
	}
	return p.root.Remove(rel)
}

func (p *pinnedDir) RemoveAll(name string) error {
	rel, ok := p.rel(name)
	switch {
	case !ok:
		return p.FS.RemoveAll(name)
	case rel == ".":
		return p.removeSelf(p.FS.RemoveAll)
	}
	return p.root.RemoveAll(rel)
}

// removeSelf removes the pinned directory, which its handle cannot, by
// path, and only while it is the one at the path: moved away (dropped),
// the path may hold another table's directory or the empty one a CREATE
// just made, which an aborted write removed
// (TestAbortSparesDirectoryCreatedAgain). Between the check and the
// remove the path changes only if a drop and another create both run.
func (p *pinnedDir) removeSelf(remove func(string) error) error {
	if cur, err := p.current(); err != nil {
		return err
	} else if !cur {
		return fmt.Errorf("remove %s: %w", p.dir, errMovedAway)
	}
	return remove(p.dir)
}

func (p *pinnedDir) List(dir string) ([]string, error) {
	rel, ok := p.rel(dir)
	if !ok {
		return p.FS.List(dir)
	}
	d, err := p.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

func (p *pinnedDir) MkdirAll(dir string) error {
	if rel, ok := p.rel(dir); ok {
		return p.root.MkdirAll(rel, 0o755)
	}
	return p.FS.MkdirAll(dir)
}

// MkdirIn creates rel's directories under parent; never the pinned
// directory itself (gone, it stays gone).
func (p *pinnedDir) MkdirIn(parent, rel string) error {
	base, ok := p.rel(parent)
	if !ok {
		return p.FS.MkdirIn(parent, rel)
	}
	return mkdirIn(base, rel, p.root.Mkdir)
}

func (p *pinnedDir) Stat(name string) (fs.FileInfo, error) {
	if rel, ok := p.rel(name); ok {
		return p.root.Stat(rel)
	}
	return p.FS.Stat(name)
}

func (p *pinnedDir) SyncDir(dir string) error {
	rel, ok := p.rel(dir)
	if !ok {
		return p.FS.SyncDir(dir)
	}
	d, err := p.root.Open(rel)
	if err != nil {
		return err
	}
	return syncClose(d)
}

// current reports whether the pinned directory is still the one at its
// path. The open handle keeps the directory's inode allocated, so a
// directory created since at the path cannot have its identity.
func (p *pinnedDir) current() (bool, error) {
	pinned, err := p.root.Stat(".")
	if err != nil {
		return false, err
	}
	now, err := p.FS.Stat(p.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(pinned, now), nil
}
