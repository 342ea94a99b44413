package flightsql

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
)

// toStatus maps an error from the layers below to a gRPC status. The
// message is the error text, which says what was wrong and where, ending
// in " [SQLSTATE xxxxx]" when the error has a SQLSTATE: Flight SQL has no
// field for it, and the message is what ADBC and JDBC clients show.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	msg := err.Error()
	if state := engine.SQLState(err); state != "" {
		msg += " [SQLSTATE " + state + "]"
	}
	return status.Error(codeOf(err), msg)
}

// kindCodes is the gRPC code of each engine error kind.
var kindCodes = map[engine.Kind]codes.Code{
	engine.KindInternal:      codes.Internal,
	engine.KindCanceled:      codes.Canceled,
	engine.KindDenied:        codes.PermissionDenied,
	engine.KindDeadline:      codes.DeadlineExceeded,
	engine.KindNotFound:      codes.NotFound,
	engine.KindAlreadyExists: codes.AlreadyExists,
	engine.KindNotSupported:  codes.Unimplemented,
	engine.KindConflict:      codes.Aborted,
	engine.KindExhausted:     codes.ResourceExhausted,
	engine.KindInvalid:       codes.InvalidArgument,
	engine.KindDataLoss:      codes.DataLoss,
}

func codeOf(err error) codes.Code {
	if c, ok := kindCodes[engine.KindOf(err)]; ok {
		return c
	}
	return codes.Internal
}

// The endpoint's own errors, classified by the engine like its own.
var (
	errNotFound   = engine.NewError(engine.KindNotFound, "not found")
	errBadRequest = engine.NewError(engine.KindInvalid, "bad request")
	errExhausted  = engine.NewError(engine.KindExhausted, "limit reached")
)
