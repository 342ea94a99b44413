package merge

import (
	"errors"
	"fmt"
)

// ErrInvalid: the merge engine cannot take the input (a retraction its
// functions cannot apply). tablestore's ErrInvalid is this error.
var ErrInvalid = errors.New("invalid argument")

// RowKind is the change kind of a row, stored in data files as _VALUE_KIND.
type RowKind int8

// Row kinds, numbered as Paimon numbers them.
const (
	Insert       RowKind = 0 // +I
	UpdateBefore RowKind = 1 // -U
	UpdateAfter  RowKind = 2 // +U
	Delete       RowKind = 3 // -D
)

func (k RowKind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return fmt.Sprintf("RowKind(%d)", int8(k))
}

// IsRetract reports whether the kind removes the key's row (-U, -D).
func (k RowKind) IsRetract() bool { return k == UpdateBefore || k == Delete }
