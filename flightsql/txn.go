package flightsql

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightd/flightd/engine"
)

// BeginTransaction opens an engine transaction; its id is the handle.
func (s *Server) BeginTransaction(ctx context.Context, _ flightsql.ActionBeginTransactionRequest) ([]byte, error) {
	tx := s.eng.Begin()
	if err := s.txns.add(callerOf(ctx), tx.ID(), tx); err != nil {
		_ = s.eng.Rollback(tx.ID())
		return nil, toStatus(err)
	}
	return []byte(tx.ID()), nil
}

// EndTransaction commits or rolls back a transaction of the caller.
func (s *Server) EndTransaction(ctx context.Context, req flightsql.ActionEndTransactionRequest) error {
	id := string(req.GetTransactionId())
	action := req.GetAction()
	if action != flightsql.EndTransactionCommit && action != flightsql.EndTransactionRollback {
		return toStatus(fmt.Errorf("EndTransaction: unknown action %v: %w", action, errBadRequest))
	}
	if _, ok := s.txns.remove(callerOf(ctx), id); !ok {
		return toStatus(fmt.Errorf("transaction %q: %w", id, engine.ErrTxnNotFound))
	}
	if action == flightsql.EndTransactionCommit {
		return toStatus(s.eng.Commit(ctx, id))
	}
	return toStatus(s.eng.Rollback(id))
}
