//go:build !linux

package tablestore

import "errors"

// Exchange is not available here: hints are replaced by rename.
func (localFS) Exchange(a, b string) error { return errors.ErrUnsupported }

// lock locks nothing here: publications of a table's schema by processes
// sharing a warehouse directory are serialized on Linux only.
func (p *pinnedDir) lock() (unlock func(), err error) { return func() {}, nil }
