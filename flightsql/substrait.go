package flightsql

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightd/flightd/engine"
)

// Substrait plans are translated to the SQL they mean and then take the
// statement path: the ticket carries that SQL, so DoGet needs no plan.

// substraitSQL is the plan's SQL, once the schemas the plan claims for
// the tables it reads are checked against the tables as the statement
// will see them (in the same session and transaction as prepare).
func (s *Server) substraitSQL(ctx context.Context, plan, txnID []byte) (string, error) {
	tx, txErr := s.txn(ctx, txnID)
	if txErr != nil && (len(txnID) > 0 || !errors.Is(txErr, engine.ErrTxnNotFound)) {
		return "", txErr
	}
	sess, err := s.session(ctx)
	if err != nil {
		return "", err
	}
	return sess.SubstraitSQL(ctx, plan, tx)
}

// GetFlightInfoSubstraitPlan plans a Substrait query (or runs an update
// once, as for SQL) and returns its schema and a ticket.
func (s *Server) GetFlightInfoSubstraitPlan(ctx context.Context, cmd flightsql.StatementSubstraitPlan, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	text, err := s.substraitSQL(ctx, cmd.GetPlan().Plan, cmd.GetTransactionId())
	if err != nil {
		return nil, toStatus(err)
	}
	return s.statementInfo(ctx, text, cmd.GetTransactionId(), desc)
}

// PollFlightInfoSubstraitPlan answers at once, as for SQL.
func (s *Server) PollFlightInfoSubstraitPlan(ctx context.Context, cmd flightsql.StatementSubstraitPlan, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	info, err := s.GetFlightInfoSubstraitPlan(ctx, cmd, desc)
	if err != nil {
		return nil, err
	}
	return completePoll(info), nil
}

// GetSchemaSubstraitPlan returns a Substrait query's result schema.
func (s *Server) GetSchemaSubstraitPlan(ctx context.Context, cmd flightsql.StatementSubstraitPlan, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	text, err := s.substraitSQL(ctx, cmd.GetPlan().Plan, cmd.GetTransactionId())
	if err != nil {
		return nil, toStatus(err)
	}
	return s.statementSchema(ctx, text, cmd.GetTransactionId())
}

// DoPutCommandSubstraitPlan runs a Substrait plan and returns its update
// count.
func (s *Server) DoPutCommandSubstraitPlan(ctx context.Context, cmd flightsql.StatementSubstraitPlan) (int64, error) {
	text, err := s.substraitSQL(ctx, cmd.GetPlan().Plan, cmd.GetTransactionId())
	if err != nil {
		return 0, toStatus(err)
	}
	return s.update(ctx, text, cmd.GetTransactionId())
}

// CreatePreparedSubstraitPlan prepares a Substrait plan; its dynamic
// parameters are the statement's parameters, in parameter_reference order.
func (s *Server) CreatePreparedSubstraitPlan(ctx context.Context, req flightsql.ActionCreatePreparedSubstraitPlanRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	text, err := s.substraitSQL(ctx, req.GetPlan().Plan, req.GetTransactionId())
	if err != nil {
		return flightsql.ActionCreatePreparedStatementResult{}, toStatus(err)
	}
	return s.createPrepared(ctx, text, req.GetTransactionId())
}
