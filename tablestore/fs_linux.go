package tablestore

import (
	"golang.org/x/sys/unix"
)

// Exchange swaps the directory entries a and b atomically
// (renameat2 RENAME_EXCHANGE); both must exist.
func (localFS) Exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
