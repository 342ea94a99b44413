package flightsql

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
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
	state := engine.SQLState(err)
	if state == "" {
		state = codeStates[code]
	}
	return status.Error(code, clip(err.Error())+" [SQLSTATE "+state+"]")
}

// maxMessage bounds the text of an error sent to a client: a message
// quoting a bad value (a cast of a 10 MB string) went out whole, 10 MB of
// trailer for the client to hold, print and log.
const maxMessage = 4096

// clip keeps the start and the end of a long message, each cut at a
// character boundary, and says how much went between.
func clip(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	head, tail := maxMessage/2, len(msg)-maxMessage/4
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return fmt.Sprintf("%s … (%d bytes cut) … %s", msg[:head], tail-head, msg[tail:])
}

// maxQuotedID is how much of a client's handle, id or name an error
// message quotes (quote.Clipped): a 100 MB prepared statement handle quoted
// whole took a server from 40 MB to 2.9 GB RSS for one call; clip cuts the
// message only at the end.
const maxQuotedID = 64

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
