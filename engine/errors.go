package engine

import (
	"context"
	"errors"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// Kind is the class of failure an error from the engine belongs to: what
// the endpoint reports (a gRPC code) without knowing the layers below.
type Kind int

// Kinds, in the order KindOf tries them: an error that wraps several
// causes takes the first (a statement naming a missing table is NotFound,
// though binding also marks it invalid).
const (
	KindInternal      Kind = iota // a bug, or a failure of nothing the caller controls
	KindCanceled                  // the caller cancelled
	KindDenied                    // the caller may not do this
	KindDeadline                  // the caller's deadline passed
	KindNotFound                  // a named object (database, table, view, snapshot, transaction, job) is missing
	KindAlreadyExists             // the object to create exists
	KindNotSupported              // valid, but flightd does not implement it
	KindConflict                  // a concurrent commit won; retrying may succeed
	KindExhausted                 // a limit (memory, disk, the caller's quota) was reached
	KindInvalid                   // the request or statement is wrong
	KindDataLoss                  // stored data is corrupt
)

var kindNames = [...]string{"internal", "canceled", "denied", "deadline", "not found", "already exists",
	"not supported", "conflict", "exhausted", "invalid", "data loss"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "unknown"
	}
	return kindNames[k]
}

// causes lists, per kind, the sentinel errors of the layers below that
// belong to it.
var causes = [...][]error{
	KindCanceled:      {context.Canceled},
	KindDenied:        {ErrDenied},
	KindDeadline:      {context.DeadlineExceeded},
	KindNotFound:      {tablestore.ErrTableNotFound, tablestore.ErrDatabaseNotFound, tablestore.ErrViewNotFound, ErrTxnNotFound, ErrJobNotFound, tablestore.ErrSnapshotNotFound},
	KindAlreadyExists: {tablestore.ErrTableExists, tablestore.ErrDatabaseExists, tablestore.ErrViewExists},
	KindNotSupported:  {ErrNotSupported, arrow.ErrNotImplemented},
	KindConflict:      {tablestore.ErrConflict},
	KindExhausted:     {syscall.ENOSPC, exec.ErrMemoryLimit, vectorized.ErrTooLarge, ErrLimit, tablestore.ErrTooManyPartitions},
	KindInvalid: {ErrInvalid, ErrTxnActive, ErrNoTxn, ErrTxnAborted, tablestore.ErrInvalid, arrow.ErrInvalid, arrow.ErrType, arrow.ErrIndex,
		vectorized.ErrDivideByZero, vectorized.ErrOverflow, vectorized.ErrInvalidValue, exec.ErrInvalid, plan.ErrParams},
	KindDataLoss: {tablestore.ErrCorrupt},
}

// KindOf classifies err by the sentinels it wraps (errors.Is), including
// those made by NewError; nil and unknown errors are KindInternal.
func KindOf(err error) Kind {
	if err == nil {
		return KindInternal
	}
	for k := KindCanceled; int(k) < len(causes); k++ {
		if errors.Is(err, kindMark(k)) {
			return k
		}
		for _, c := range causes[k] {
			if errors.Is(err, c) {
				return k
			}
		}
		if k == KindInvalid && errors.As(err, new(*sql.Error)) {
			return k
		}
	}
	return KindInternal
}

// kindMark is what an error of NewError matches in errors.Is.
type kindMark Kind

func (k kindMark) Error() string { return Kind(k).String() }

type kindError struct {
	kind Kind
	msg  string
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == kindMark(e.kind) }

// NewError returns a sentinel error with message msg that KindOf puts in
// kind k: the layers above the engine declare their own sentinels with it
// and get them classified like the engine's, in the same order.
func NewError(k Kind, msg string) error { return &kindError{kind: k, msg: msg} }

// SQLState is the SQLSTATE of errors that have one: syntax and semantic
// errors, limits, unsupported features, data exceptions and conflicts;
// "" for the others.
func SQLState(err error) string {
	var se *sql.Error
	switch {
	case errors.Is(err, ErrNotSupported), errors.Is(err, plan.ErrNotImplemented):
		return "0A000"
	case errors.Is(err, ErrDenied):
		return "42501"
	case errors.Is(err, ErrCardinality):
		return "21000"
	case errors.Is(err, ErrTxnActive):
		return "25001"
	case errors.Is(err, ErrNoTxn):
		return "25P01"
	case errors.Is(err, ErrTxnAborted):
		return "25P02"
	case errors.As(err, &se):
		if se.SQLState != "" {
			return se.SQLState
		}
		return "42000" // the binder's: syntax error or access rule violation
	case errors.Is(err, vectorized.ErrDivideByZero):
		return "22012"
	case errors.Is(err, ErrInvalidText):
		return "22021"
	case errors.Is(err, vectorized.ErrInvalidValue):
		return "22018"
	case errors.Is(err, vectorized.ErrDateRange):
		return "22008"
	case errors.Is(err, vectorized.ErrOverflow):
		return "22003"
	case errors.Is(err, tablestore.ErrConflict):
		return "40001"
	case errors.Is(err, tablestore.ErrNotNull):
		return "23502"
	case errors.Is(err, tablestore.ErrNameTooLong):
		return "42622"
	case errors.Is(err, tablestore.ErrTooManyColumns):
		return "54011"
	case errors.Is(err, syscall.ENOSPC):
		return "53100"
	case errors.Is(err, exec.ErrMemoryLimit):
		return "53200"
	case errors.Is(err, ErrLimit):
		return "53400"
	case errors.Is(err, vectorized.ErrTooLarge), errors.Is(err, tablestore.ErrTooManyPartitions):
		return "54000"
	case errors.Is(err, context.Canceled):
		return "57014"
	}
	return ""
}
