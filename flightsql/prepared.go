package flightsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightd/flightd/engine"
)

// prepared is one open prepared statement and its bound parameters.
type prepared struct {
	st *engine.Statement

	mu     sync.Mutex
	params arrow.RecordBatch // owned; nil until bound
}

func (p *prepared) setParams(b arrow.RecordBatch) {
	p.mu.Lock()
	old := p.params
	p.params = b
	p.mu.Unlock()
	if old != nil {
		old.Release()
	}
}

// boundParams returns the bound parameters retained for the caller.
func (p *prepared) boundParams() arrow.RecordBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.params != nil {
		p.params.Retain()
	}
	return p.params
}

type preparedStatements struct {
	mu sync.Mutex
	m  map[string]*prepared
}

func (ps *preparedStatements) get(handle []byte) (*prepared, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[string(handle)]
	if !ok {
		return nil, fmt.Errorf("prepared statement %q is unknown or closed: %w", handle, errNotFound)
	}
	return p, nil
}

func (ps *preparedStatements) closeAll() {
	ps.mu.Lock()
	m := ps.m
	ps.m = make(map[string]*prepared)
	ps.mu.Unlock()
	for _, p := range m {
		p.setParams(nil)
	}
}

func preparedKey(handle []byte) []byte { return append([]byte("p:"), handle...) }

// CreatePreparedStatement parses and binds a statement once; it runs later
// as often as the client executes it.
func (s *Server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	_, st, err := s.prepare(ctx, req.GetQuery(), req.GetTransactionId())
	if err != nil {
		return res, toStatus(err)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	handle := hex.EncodeToString(b[:])
	s.prepared.mu.Lock()
	if len(s.prepared.m) >= s.limits.MaxPreparedStatements {
		s.prepared.mu.Unlock()
		return res, toStatus(fmt.Errorf("%d prepared statements are open; close some first: %w", s.limits.MaxPreparedStatements, errExhausted))
	}
	s.prepared.m[handle] = &prepared{st: st}
	s.prepared.mu.Unlock()

	isUpdate := !st.IsQuery()
	res.Handle = []byte(handle)
	res.IsUpdate = &isUpdate
	res.ParameterSchema = st.ParamSchema()
	if !isUpdate {
		res.DatasetSchema = st.Schema()
	}
	return res, nil
}

// ClosePreparedStatement forgets a statement and its parameters.
func (s *Server) ClosePreparedStatement(_ context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	s.prepared.mu.Lock()
	p, ok := s.prepared.m[string(req.GetPreparedStatementHandle())]
	delete(s.prepared.m, string(req.GetPreparedStatementHandle()))
	s.prepared.mu.Unlock()
	if !ok {
		return toStatus(fmt.Errorf("prepared statement %q is unknown or closed: %w", req.GetPreparedStatementHandle(), errNotFound))
	}
	p.setParams(nil)
	return nil
}

// GetFlightInfoPreparedStatement returns the ticket of a prepared query;
// a prepared update executed this way runs here, once per call.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	p, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, toStatus(err)
	}
	if !p.st.IsQuery() {
		params := p.boundParams()
		if params != nil {
			defer params.Release()
		}
		if _, err := p.st.Exec(ctx, params); err != nil {
			return nil, toStatus(err)
		}
		s.rememberSession(ctx, p.st)
		return s.updateInfo(desc), nil
	}
	params := p.boundParams()
	err = p.st.CheckParams(params)
	if params != nil {
		params.Release()
	}
	if err != nil {
		return nil, toStatus(err)
	}
	anyCmd, err := anypb.New(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: cmd.GetPreparedStatementHandle()})
	if err != nil {
		return nil, toStatus(err)
	}
	tkt, err := proto.Marshal(anyCmd)
	if err != nil {
		return nil, toStatus(err)
	}
	return s.queryInfo(p.st.Schema(), desc, tkt), nil
}

// GetSchemaPreparedStatement returns a prepared query's result schema.
func (s *Server) GetSchemaPreparedStatement(_ context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	p, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, toStatus(err)
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(p.st.Schema(), s.mem)}, nil
}

// PollFlightInfoPreparedStatement is complete on the first poll.
func (s *Server) PollFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	info, err := s.GetFlightInfoPreparedStatement(ctx, cmd, desc)
	if err != nil {
		return nil, err
	}
	return completePoll(info), nil
}

// DoGetPreparedStatement runs a prepared query with its bound parameters.
func (s *Server) DoGetPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	p, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, toStatus(err)
	}
	params := p.boundParams()
	if params != nil {
		defer params.Release()
	}
	return s.stream(ctx, preparedKey(cmd.GetPreparedStatementHandle()), p.st, params)
}

// DoPutPreparedStatementQuery binds parameters (one row per execution).
func (s *Server) DoPutPreparedStatementQuery(_ context.Context, cmd flightsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	p, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, toStatus(err)
	}
	params, err := readParams(s.mem, rdr, s.limits.MaxParamRows)
	if err != nil {
		return nil, toStatus(err)
	}
	p.setParams(params)
	return cmd.GetPreparedStatementHandle(), nil
}

// DoPutPreparedStatementUpdate executes a prepared update once per
// parameter row and returns the total count.
func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	p, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, toStatus(err)
	}
	params, err := readParams(s.mem, rdr, s.limits.MaxParamRows)
	if err != nil {
		return 0, toStatus(err)
	}
	if params == nil {
		params = p.boundParams()
	}
	if params != nil {
		defer params.Release()
	}
	n, err := p.st.Exec(ctx, params)
	if err != nil {
		return 0, toStatus(err)
	}
	s.rememberSession(ctx, p.st)
	return n, nil
}

// readParams concatenates the parameter batches of a DoPut into one batch
// (nil when the client sent no rows).
func readParams(mem memory.Allocator, rdr flight.MessageReader, maxRows int64) (arrow.RecordBatch, error) {
	var (
		batches []arrow.RecordBatch
		rows    int64
	)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	for rdr.Next() {
		b := rdr.RecordBatch()
		rows += b.NumRows()
		if rows > maxRows {
			return nil, fmt.Errorf("more than %d parameter rows bound: %w", maxRows, errExhausted)
		}
		if b.NumRows() > 0 {
			b.Retain()
			batches = append(batches, b)
		}
	}
	if err := rdr.Err(); err != nil {
		return nil, fmt.Errorf("reading parameters: %w", err)
	}
	switch len(batches) {
	case 0:
		return nil, nil
	case 1:
		b := batches[0]
		batches = nil
		return b, nil
	}
	return concatBatches(mem, batches)
}

func concatBatches(mem memory.Allocator, batches []arrow.RecordBatch) (arrow.RecordBatch, error) {
	schema := batches[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(batches))
		for j, b := range batches {
			parts[j] = b.Column(i)
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, fmt.Errorf("parameter column %d: %w", i, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}
