package flightsql

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/tablestore"
)

// toStatus maps an error from the layers below to a gRPC status. The
// message is the error text, which says what was wrong and where.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codeOf(err), err.Error())
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
		errors.Is(err, engine.ErrTxnNotFound), errors.Is(err, errNotFound), errors.Is(err, tablestore.ErrSnapshotNotFound):
		return codes.NotFound
	case errors.Is(err, tablestore.ErrTableExists), errors.Is(err, tablestore.ErrDatabaseExists), errors.Is(err, tablestore.ErrViewExists):
		return codes.AlreadyExists
	case errors.Is(err, engine.ErrNotSupported), errors.Is(err, arrow.ErrNotImplemented):
		return codes.Unimplemented
	case errors.Is(err, tablestore.ErrConflict):
		return codes.Aborted
	case errors.Is(err, errExhausted):
		return codes.ResourceExhausted
	case errors.Is(err, engine.ErrInvalid), errors.Is(err, tablestore.ErrInvalid), errors.Is(err, arrow.ErrInvalid), errors.Is(err, arrow.ErrType),
		errors.Is(err, arrow.ErrIndex), errors.Is(err, errBadRequest):
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
