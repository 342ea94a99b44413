package exec

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestRootCause: the failure of one parallel worker is reported, not the
// cancellations it caused in the others.
func TestRootCause(t *testing.T) {
	cause := fmt.Errorf("%w: overflow", ErrInvalid)
	err := rootCause([]error{context.Canceled, nil, cause, fmt.Errorf("read: %w", context.Canceled)})
	if !errors.Is(err, ErrInvalid) || errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if err := rootCause([]error{context.Canceled, nil}); !errors.Is(err, context.Canceled) {
		t.Fatalf("all cancelled: got %v", err)
	}
	if err := rootCause([]error{nil, nil}); err != nil {
		t.Fatalf("no errors: got %v", err)
	}
}
