package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/engine"
	qexec "github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// classified lists the errors of the layers below with the kind and
// SQLSTATE the endpoint reports for them: the contract flightsql's status
// mapping relies on without importing those layers.
var classified = []struct {
	err   error
	kind  engine.Kind
	state string
}{
	{context.Canceled, engine.KindCanceled, "57014"},
	{engine.ErrDenied, engine.KindDenied, "42501"},
	{context.DeadlineExceeded, engine.KindDeadline, ""},
	{tablestore.ErrTableNotFound, engine.KindNotFound, ""},
	{tablestore.ErrDatabaseNotFound, engine.KindNotFound, ""},
	{tablestore.ErrViewNotFound, engine.KindNotFound, ""},
	{tablestore.ErrSnapshotNotFound, engine.KindNotFound, ""},
	{engine.ErrTxnNotFound, engine.KindNotFound, ""},
	{engine.ErrJobNotFound, engine.KindNotFound, ""},
	{tablestore.ErrTableExists, engine.KindAlreadyExists, ""},
	{tablestore.ErrDatabaseExists, engine.KindAlreadyExists, ""},
	{tablestore.ErrViewExists, engine.KindAlreadyExists, ""},
	{engine.ErrNotSupported, engine.KindNotSupported, "0A000"},
	{arrow.ErrNotImplemented, engine.KindNotSupported, ""},
	{tablestore.ErrConflict, engine.KindConflict, "40001"},
	{tablestore.ErrSerialization, engine.KindConflict, "40001"},
	{syscall.ENOSPC, engine.KindExhausted, "53100"},
	{qexec.ErrMemoryLimit, engine.KindExhausted, "53200"},
	{engine.ErrInvalid, engine.KindInvalid, ""},
	{tablestore.ErrInvalid, engine.KindInvalid, ""},
	{qexec.ErrInvalid, engine.KindInvalid, ""},
	{arrow.ErrInvalid, engine.KindInvalid, ""},
	{arrow.ErrType, engine.KindInvalid, ""},
	{arrow.ErrIndex, engine.KindInvalid, ""},
	{vectorized.ErrDivideByZero, engine.KindInvalid, "22012"},
	{vectorized.ErrInvalidValue, engine.KindInvalid, "22018"},
	{vectorized.ErrOverflow, engine.KindInvalid, "22003"},
	{vectorized.ErrDateRange, engine.KindInvalid, "22008"},
	{sql.Errorf(sql.Pos{Line: 1, Col: 8}, "no column x"), engine.KindInvalid, "42000"},
	{sql.StateErrorf(sql.StateSyntax, sql.Pos{Line: 1, Col: 1}, "bad"), engine.KindInvalid, "42601"},
	{tablestore.ErrCorrupt, engine.KindDataLoss, ""},
	{engine.ErrInternal, engine.KindInternal, ""},
	{errors.New("something else"), engine.KindInternal, ""},
}

// TestErrorKinds: each error of the layers below, wrapped, has its kind
// and SQLSTATE; an error wrapping two takes the first kind in Kind order,
// whichever way round they are wrapped (random pairs, seed printed).
func TestErrorKinds(t *testing.T) {
	for _, c := range classified {
		err := fmt.Errorf("statement: %w", c.err)
		if got := engine.KindOf(err); got != c.kind {
			t.Errorf("KindOf(%v) = %v, want %v", err, got, c.kind)
		}
		if got := engine.SQLState(err); got != c.state {
			t.Errorf("SQLState(%v) = %q, want %q", err, got, c.state)
		}
	}
	if engine.SQLState(plan.ErrNotImplemented) != "0A000" {
		t.Errorf("plan.ErrNotImplemented has SQLSTATE %q, want 0A000", engine.SQLState(plan.ErrNotImplemented))
	}
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	for range 2000 {
		a, b := classified[rng.IntN(len(classified))], classified[rng.IntN(len(classified))]
		want := min(a.kind, b.kind)
		if a.kind == engine.KindInternal || b.kind == engine.KindInternal {
			want = max(a.kind, b.kind) // unknown causes do not count
		}
		ea, eb := a.err, b.err
		if rng.IntN(2) == 0 {
			ea = engine.NewError(a.kind, "own "+a.kind.String())
		}
		if rng.IntN(2) == 0 {
			ea, eb = eb, ea
		}
		err := fmt.Errorf("%w: %w", ea, eb)
		if rng.IntN(2) == 0 {
			err = fmt.Errorf("outer: %w", err)
		}
		if got := engine.KindOf(err); got != want {
			t.Fatalf("seed %d: KindOf(%v) = %v, want %v", seed, err, got, want)
		}
	}
}

// TestNewError: an error of NewError keeps its message and identity and
// matches no other sentinel, so wrapping it changes no message.
func TestNewError(t *testing.T) {
	a := engine.NewError(engine.KindInvalid, "bad request")
	b := engine.NewError(engine.KindInvalid, "bad request")
	err := fmt.Errorf("ticket: %w", a)
	if err.Error() != "ticket: bad request" || !errors.Is(err, a) || errors.Is(err, b) || errors.Is(err, engine.ErrInvalid) {
		t.Errorf("NewError: %q, is a %v, is b %v, is ErrInvalid %v", err, errors.Is(err, a), errors.Is(err, b), errors.Is(err, engine.ErrInvalid))
	}
	if engine.SQLState(err) != "" {
		t.Errorf("NewError has SQLSTATE %q", engine.SQLState(err))
	}
}

// TestBindErrorKeepsItsKind: a statement naming a table that does not
// exist fails as not found, and its message does not call it an invalid
// argument (it read "invalid argument: line 1:15: table ... not found").
func TestBindErrorKeepsItsKind(t *testing.T) {
	e := newEngine(t)
	s := e.NewSession()
	_, err := s.Prepare(context.Background(), "SELECT * FROM nope", nil)
	if engine.KindOf(err) != engine.KindNotFound || strings.Contains(fmt.Sprint(err), "invalid argument") {
		t.Fatalf("got %v (%v), want a not-found error", err, engine.KindOf(err))
	}
	_, err = s.Prepare(context.Background(), "SELECT nope FROM (VALUES (1)) AS v(a)", nil)
	if engine.KindOf(err) != engine.KindInvalid {
		t.Fatalf("unknown column: got %v (%v), want invalid", err, engine.KindOf(err))
	}
}
