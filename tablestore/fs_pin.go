package tablestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// dirPinner is an FS that holds a directory by handle (a local file
// system, through os.Root): what a pinnedDir creates, links and removes
// stays in the directory it pinned, also once another process has renamed
// it away (DROP TABLE moves a table's directory to the trash) and put a
// table created again under its path. A write pins its table's directory
// before it reads anything of the table, and its commit publishes the
// snapshot through the pin: the snapshot lands in the table the write
// read, never in a table of the same name created since on another node.
type dirPinner interface {
	PinDir(dir string) (*pinnedDir, error)
}

// pinnedDir is an FS whose names under dir go through the pinned handle;
// other names go to the underlying FS.
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

// rel returns name relative to the pinned directory, if it is under it.
func (p *pinnedDir) rel(name string) (string, bool) {
	rel, ok := strings.CutPrefix(name, p.dir+"/")
	return rel, ok && rel != ""
}

func (p *pinnedDir) Create(name string) (File, error) {
	if rel, ok := p.rel(name); ok {
		return p.root.OpenFile(rel, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	}
	return p.FS.Create(name)
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
	if rel, ok := p.rel(name); ok {
		return p.root.Remove(rel)
	}
	return p.FS.Remove(name)
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

func (p *pinnedDir) Close() error { return p.root.Close() }
