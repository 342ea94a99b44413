package flightsql

import (
	"context"
	"errors"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// toStatus maps an error from the layers below to a gRPC status. The
// message is the error text, which says what was wrong and where, ending
// in " [SQLSTATE xxxxx]": Flight SQL has no field for it, and the message
// is what ADBC and JDBC clients show.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codeOf(err)
	state := sqlState(err)
	if state == "" {
		state = codeStates[code]
	}
	return status.Error(code, err.Error()+" [SQLSTATE "+state+"]")
}

// codeStates gives every error without a more specific SQLSTATE the one
// of its class (Postgres' codes where the standard has none).
var codeStates = map[codes.Code]string{
	codes.InvalidArgument:   "22023", // invalid parameter value
	codes.NotFound:          "42704", // undefined object
	codes.AlreadyExists:     "42710", // duplicate object
	codes.Unimplemented:     "0A000",
	codes.Aborted:           "40001",
	codes.ResourceExhausted: "53000", // insufficient resources
	codes.PermissionDenied:  "42501",
	codes.Canceled:          "57014",
	codes.DeadlineExceeded:  "57014",
	codes.DataLoss:          "XX001", // data corrupted
	codes.Internal:          "XX000",
}

// sqlState is the SQLSTATE of errors that have one: syntax and semantic
// errors, limits, unsupported features, data exceptions and conflicts.
func sqlState(err error) string {
	var se *sql.Error
	switch {
	case errors.Is(err, engine.ErrNotSupported), errors.Is(err, plan.ErrNotImplemented):
		return "0A000"
	case errors.Is(err, engine.ErrDenied):
		return "42501"
	case errors.As(err, &se):
		if se.SQLState != "" {
			return se.SQLState
		}
		return "42000" // the binder's: syntax error or access rule violation
	case errors.Is(err, vectorized.ErrDivideByZero):
		return "22012"
	case errors.Is(err, vectorized.ErrInvalidValue):
		return "22018"
	case errors.Is(err, vectorized.ErrOverflow):
		return "22003"
	case errors.Is(err, tablestore.ErrConflict):
		return "40001"
	case errors.Is(err, syscall.ENOSPC):
		return "53100"
	case errors.Is(err, exec.ErrMemoryLimit):
		return "53200"
	case errors.Is(err, context.Canceled):
		return "57014"
	}
	return ""
}

func codeOf(err error) codes.Code {
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, engine.ErrDenied):
		return codes.PermissionDenied
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, tablestore.ErrTableNotFound), errors.Is(err, tablestore.ErrDatabaseNotFound), errors.Is(err, tablestore.ErrViewNotFound),
		errors.Is(err, engine.ErrTxnNotFound), errors.Is(err, engine.ErrJobNotFound), errors.Is(err, errNotFound), errors.Is(err, tablestore.ErrSnapshotNotFound):
		return codes.NotFound
	case errors.Is(err, tablestore.ErrTableExists), errors.Is(err, tablestore.ErrDatabaseExists), errors.Is(err, tablestore.ErrViewExists):
		return codes.AlreadyExists
	case errors.Is(err, engine.ErrNotSupported), errors.Is(err, arrow.ErrNotImplemented):
		return codes.Unimplemented
	case errors.Is(err, tablestore.ErrConflict):
		return codes.Aborted
	case errors.Is(err, errExhausted), errors.Is(err, syscall.ENOSPC), errors.Is(err, exec.ErrMemoryLimit):
		return codes.ResourceExhausted
	case errors.Is(err, engine.ErrInvalid), errors.Is(err, tablestore.ErrInvalid), errors.Is(err, arrow.ErrInvalid), errors.Is(err, arrow.ErrType),
		errors.Is(err, arrow.ErrIndex), errors.Is(err, errBadRequest), errors.As(err, new(*sql.Error)),
		errors.Is(err, vectorized.ErrDivideByZero), errors.Is(err, vectorized.ErrOverflow),
		errors.Is(err, vectorized.ErrInvalidValue), errors.Is(err, exec.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, tablestore.ErrCorrupt):
		return codes.DataLoss
	}
	return codes.Internal
}

var (
	errNotFound   = errors.New("not found")
	errBadRequest = errors.New("bad request")
	errExhausted  = errors.New("limit reached")
)
