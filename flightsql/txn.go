package flightsql

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// BeginTransaction opens an engine transaction; its id is the handle.
func (s *Server) BeginTransaction(context.Context, flightsql.ActionBeginTransactionRequest) ([]byte, error) {
	return []byte(s.eng.Begin().ID()), nil
}

// EndTransaction commits or rolls back.
func (s *Server) EndTransaction(ctx context.Context, req flightsql.ActionEndTransactionRequest) error {
	id := string(req.GetTransactionId())
	switch req.GetAction() {
	case flightsql.EndTransactionCommit:
		return toStatus(s.eng.Commit(ctx, id))
	case flightsql.EndTransactionRollback:
		return toStatus(s.eng.Rollback(id))
	}
	return toStatus(fmt.Errorf("EndTransaction: unknown action %v: %w", req.GetAction(), errBadRequest))
}
