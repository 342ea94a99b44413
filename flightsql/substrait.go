package flightsql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightd/flightd/engine"
)

// Substrait plans are translated to the SQL they mean and then take the
// statement path: the ticket carries that SQL, so DoGet needs no plan.

// GetFlightInfoSubstraitPlan plans a Substrait query (or runs an update
// once, as for SQL) and returns its schema and a ticket.
func (s *Server) GetFlightInfoSubstraitPlan(ctx context.Context, cmd flightsql.StatementSubstraitPlan, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	text, err := engine.SubstraitSQL(cmd.GetPlan().Plan)
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
	text, err := engine.SubstraitSQL(cmd.GetPlan().Plan)
	if err != nil {
		return nil, toStatus(err)
	}
	return s.statementSchema(ctx, text, cmd.GetTransactionId())
}

// DoPutCommandSubstraitPlan runs a Substrait plan and returns its update
// count.
func (s *Server) DoPutCommandSubstraitPlan(ctx context.Context, cmd flightsql.StatementSubstraitPlan) (int64, error) {
	text, err := engine.SubstraitSQL(cmd.GetPlan().Plan)
	if err != nil {
		return 0, toStatus(err)
	}
	return s.update(ctx, text, cmd.GetTransactionId())
}

// CreatePreparedSubstraitPlan prepares a Substrait plan; its dynamic
// parameters are the statement's parameters, in parameter_reference order.
func (s *Server) CreatePreparedSubstraitPlan(ctx context.Context, req flightsql.ActionCreatePreparedSubstraitPlanRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	text, err := engine.SubstraitSQL(req.GetPlan().Plan)
	if err != nil {
		return flightsql.ActionCreatePreparedStatementResult{}, toStatus(err)
	}
	return s.createPrepared(ctx, text, req.GetTransactionId())
}
