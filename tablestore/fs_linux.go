package tablestore

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Exchange swaps the directory entries a and b atomically
// (renameat2 RENAME_EXCHANGE); both must exist.
func (localFS) Exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// Exchange swaps a and b inside the pinned directory, through a handle
// of it opened from the pin.
func (p *pinnedDir) Exchange(a, b string) error {
	relA, okA := p.rel(a)
	relB, okB := p.rel(b)
	if !okA || !okB {
		return localFS{}.Exchange(a, b)
	}
	d, err := p.root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	fd := int(d.Fd())
	return unix.Renameat2(fd, relA, fd, relB, unix.RENAME_EXCHANGE)
}

// lock takes an exclusive flock on the pinned directory, which every
// process of this machine that pins the same directory contends for;
// unlock releases it.
func (p *pinnedDir) lock() (unlock func(), err error) {
	d, err := p.root.Open(".")
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(d.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("lock %s: %w", p.dir, err)
	}
	return func() { _ = d.Close() }, nil
}
