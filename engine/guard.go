package engine

import (
	"errors"
	"fmt"
	"log"
	"runtime/debug"
)

// ErrInternal marks a broken invariant inside flightd (a bug), reported to
// the client instead of crashing the server.
var ErrInternal = errors.New("internal error")

// recoverInternal turns a panic in the layers below into an error; used as
// `defer recoverInternal(&err)` at the engine's entry points, so one bad
// statement cannot take the server down.
func recoverInternal(err *error) {
	if r := recover(); r != nil {
		log.Printf("flightd: internal error: %v\n%s", r, debug.Stack())
		*err = fmt.Errorf("%w: %v (please report this with the statement)", ErrInternal, r)
	}
}
