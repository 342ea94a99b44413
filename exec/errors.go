package exec

import "errors"

// Sentinel errors; wrap them with %w and test with errors.Is.
var (
	// ErrInvalid reports an invalid plan, expression or argument.
	ErrInvalid = errors.New("invalid argument")
	// ErrNotImplemented reports a valid request flightd does not support yet.
	ErrNotImplemented = errors.New("not implemented")
	// ErrMemoryLimit reports that an operator exceeded the query memory budget
	// and could not spill.
	ErrMemoryLimit = errors.New("query memory limit exceeded")
)
