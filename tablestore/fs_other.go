//go:build !linux

package tablestore

import "errors"

// Exchange is not available here: hints are replaced by rename.
func (localFS) Exchange(a, b string) error { return errors.ErrUnsupported }
