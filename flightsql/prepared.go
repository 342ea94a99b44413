package flightsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/quote"
)

// prepared is one open prepared statement and its bound parameters.
type prepared struct {
	st    *engine.Statement
	query string // its SQL, for the tickets of a split result
	txn   string // the client transaction it last ran in; "" for the session's, if any
	// outside is st bound outside any transaction, for runs after its
	// client ended txn itself: st stays bound to txn, refused there.
	outside *engine.Statement
	owner   string       // the client whose parameter budget it uses
	budget  *paramBudget // shared by all statements of the server
	// planBytes is the estimated size of its plan (engine.PlanBytes),
	// counted in budget while it is open.
	planBytes int64

	mu      sync.Mutex
	params  arrow.RecordBatch // owned; nil until bound
	bytes   int64             // of params, counted in budget
	lastRun time.Time         // when it was prepared or last run
}

// setParams binds b (nil: unbinds), taking it over; if the owner's
// parameter budget cannot hold it, it fails and b stays the caller's.
func (p *prepared) setParams(b arrow.RecordBatch) error {
	var size int64
	if b != nil {
		size = util.TotalRecordSize(b)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.budget.move(p.owner, p.bytes, size); err != nil {
		return err
	}
	if p.params != nil {
		p.params.Release()
	}
	p.params, p.bytes = b, size
	return nil
}

// paramBudget counts what each client's prepared statements hold: their
// bound parameters and the estimated size of their plans (engine.PlanBytes:
// a statement with a 200,000-item IN list keeps about 30 MB, and -max-prepared
// bounds only how many). max bounds one client, maxTotal (0: none) all of
// them together, as clients without authentication are connections and a
// connection that goes away leaves its statements until they idle out.
type paramBudget struct {
	max, maxTotal int64

	mu    sync.Mutex
	used  map[string]int64
	total int64
}

// move replaces from bytes of owner's by to bytes, unless that makes
// owner hold more than max.
func (b *paramBudget) move(owner string, from, to int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.used[owner] - from + to
	if to > from && n > b.max {
		return fmt.Errorf("%s would hold %d bytes of bound parameters, more than %d; close or unbind some prepared statements: %w", owner, n, b.max, errExhausted)
	}
	if to > from && b.maxTotal > 0 && b.total-from+to > b.maxTotal {
		return fmt.Errorf("the prepared statements of all clients would hold %d bytes of plans and bound parameters, more than the server's %d; close or unbind some prepared statements: %w", b.total-from+to, b.maxTotal, errOutOfMemory)
	}
	b.setLocked(owner, n, b.total-from+to)
	return nil
}

func (b *paramBudget) setLocked(owner string, n, total int64) {
	if n == 0 {
		delete(b.used, owner)
	} else {
		b.used[owner] = n
	}
	b.total = total
}

// reservePlan counts size bytes of a plan about to be prepared for owner,
// unless that makes owner or all clients hold more than allowed.
func (b *paramBudget) reservePlan(owner string, size int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, total := b.used[owner]+size, b.total+size
	if n > b.max {
		return fmt.Errorf("prepared statement of about %d bytes (its plan, estimated from its SQL) refused: the prepared statements of %s would hold %d bytes of plans and bound parameters, more than the limit of %d (-max-param-bytes); close some prepared statements: %w",
			size, owner, n, b.max, errOutOfMemory)
	}
	if b.maxTotal > 0 && total > b.maxTotal {
		return fmt.Errorf("prepared statement of about %d bytes (its plan, estimated from its SQL) refused: the prepared statements of all clients would hold %d bytes of plans and bound parameters, more than the server's limit of %d (-max-prepared-memory); close some prepared statements: %w",
			size, total, b.maxTotal, errOutOfMemory)
	}
	b.setLocked(owner, n, total)
	return nil
}

// releasePlan gives back what reservePlan counted.
func (b *paramBudget) releasePlan(owner string, size int64) {
	_ = b.move(owner, size, 0) // giving back always fits
}

// release unbinds p's parameters and gives back its plan's bytes, once it
// is closed.
func (p *prepared) release() {
	_ = p.setParams(nil) // unbinding always fits
	p.mu.Lock()
	size := p.planBytes
	p.planBytes = 0
	p.mu.Unlock()
	p.budget.releasePlan(p.owner, size)
}

// errOutOfMemory classifies an error as the query memory limit is
// (ResourceExhausted, SQLSTATE 53200), without its text.
var errOutOfMemory error = outOfMemory{}

type outOfMemory struct{}

func (outOfMemory) Error() string { return "out of memory" }
func (outOfMemory) Is(target error) bool {
	return target == engine.ErrMemoryLimit || target == errExhausted
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

// preparedStatement finds an open prepared statement of the caller and
// the statement to run for this call, which uses both until it ends. The
// statement runs in the caller's current transaction, as a JDBC
// PreparedStatement runs in its connection's: drivers keep a statement
// prepared for the same text across commits (ADBC's DB-API cursor does),
// and one prepared outside a transaction may run in one the session began
// since. A statement prepared in a transaction that has ended follows the
// one transaction its connection began since the statement last ran (ADBC
// begins the next one as it commits), or none once its client ended that
// one and every later one itself (txnHistory: ADBC with autocommit on
// again); else the engine runs a query outside and refuses a write. A
// transaction begun before, on a connection that several clients share, is
// another client's.
func (s *Server) preparedStatement(ctx context.Context, handle []byte) (*prepared, *engine.Statement, error) {
	p, err := s.openPrepared(ctx, handle)
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.st.TxnControl(); ok {
		return p, p.st, nil // BEGIN, COMMIT, ROLLBACK read the session themselves
	}
	tx, id, found, err := s.currentTxn(ctx, callerOf(ctx), p.txn, p.lastRun)
	if err != nil {
		return nil, nil, err
	}
	p.lastRun = time.Now()
	switch {
	case !found:
		return p, p.st, nil
	case tx == nil && p.txn != "":
		if p.outside == nil {
			if p.outside, err = p.st.In(ctx, nil); err != nil {
				return nil, nil, err
			}
		}
		return p, p.outside, nil
	}
	st, err := p.st.In(ctx, tx)
	if err != nil {
		return nil, nil, err
	}
	p.st, p.outside = st, nil
	if id != "" {
		p.txn = id
	}
	return p, st, nil
}

// currentTxn is the transaction a statement prepared in transaction id
// ("": outside one) and last run at lastRun runs in now (nil: none,
// autocommit). For id "", the session's current one (BEGIN as SQL), else
// none: Flight SQL auto-commits a statement prepared without a transaction
// id. Else id while it is open; else the one transaction c's connection
// began through the API since lastRun; else, with none begun, none when c
// itself ended id and every transaction it began since lastRun
// (txnHistory). found is false when none of these holds.
func (s *Server) currentTxn(ctx context.Context, c caller, id string, lastRun time.Time) (tx *engine.Txn, txID string, found bool, err error) {
	if id == "" {
		tx, err := s.txn(ctx, nil)
		return tx, "", true, err
	}
	if o, ok := s.txns.get(ctx, c, id); ok {
		return o.tx, id, true, nil
	}
	// A session's transaction is not followed: a client that lost its
	// session cookie began it, and is told at COMMIT that its writes since
	// were committed.
	switch keys := s.txns.addedSince(c, lastRun, func(o openTxn) bool { return !o.session }); len(keys) {
	case 0:
		return nil, "", s.txnHistory.endedByClient(c, id, lastRun), nil
	case 1:
		o, ok := s.txns.get(ctx, c, keys[0])
		return o.tx, keys[0], ok, nil
	}
	return nil, "", false, nil
}

// openPrepared finds an open prepared statement of the caller, which
// uses it until the call ends.
func (s *Server) openPrepared(ctx context.Context, handle []byte) (*prepared, error) {
	p, ok := s.prepared.get(ctx, callerOf(ctx), string(handle))
	if !ok {
		return nil, fmt.Errorf("prepared statement %s is unknown or closed: %w", quote.Clipped(handle, maxQuotedID), errNotFound)
	}
	return p, nil
}

func preparedKey(handle []byte) []byte { return append([]byte("p:"), handle...) }

// CreatePreparedStatement parses and binds a statement once; it runs later
// as often as the client executes it.
func (s *Server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	return s.createPrepared(ctx, req.GetQuery(), req.GetTransactionId())
}

func (s *Server) createPrepared(ctx context.Context, query string, txnID []byte) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	// Its plan counts against the budget before it is parsed, so that one
	// past it costs no more than counting its tokens.
	tokens, err := engine.CheckSize(query, s.limits.MaxStatementBytes, s.limits.MaxStatementTokens)
	if err != nil {
		return res, toStatus(err)
	}
	c := callerOf(ctx)
	size := engine.PlanBytes(query, tokens)
	if err := s.paramBudget.reservePlan(c.owner, size); err != nil {
		return res, toStatus(err)
	}
	kept := false
	defer func() {
		if !kept {
			s.paramBudget.releasePlan(c.owner, size)
		}
	}()
	_, st, err := s.prepare(ctx, query, txnID)
	if err != nil {
		return res, toStatus(err)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	handle := hex.EncodeToString(b[:])
	if err := s.prepared.add(c, handle, &prepared{st: st, query: query, txn: string(txnID), owner: c.owner, budget: s.paramBudget, planBytes: size, lastRun: time.Now()}); err != nil {
		return res, toStatus(err)
	}
	kept = true

	isUpdate := !st.IsQuery()
	res.Handle = []byte(handle)
	res.IsUpdate = &isUpdate
	res.ParameterSchema = st.ParamSchema()
	if !isUpdate {
		res.DatasetSchema = resultSchema(st.Schema())
	}
	return res, nil
}

// ClosePreparedStatement forgets a statement and its parameters.
func (s *Server) ClosePreparedStatement(ctx context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	p, ok := s.prepared.remove(callerOf(ctx), string(req.GetPreparedStatementHandle()))
	if !ok {
		return toStatus(fmt.Errorf("prepared statement %s is unknown or closed: %w", quote.Clipped(req.GetPreparedStatementHandle(), maxQuotedID), errNotFound))
	}
	p.release()
	return nil
}

// GetFlightInfoPreparedStatement returns the ticket of a prepared query;
// a prepared update executed this way runs here, once per call.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	p, st, err := s.preparedStatement(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, toStatus(err)
	}
	if !st.IsQuery() {
		params := p.boundParams()
		if params != nil {
			defer params.Release()
		}
		if _, err := s.exec(ctx, st, params); err != nil {
			return nil, toStatus(err)
		}
		s.rememberSession(ctx, st)
		return s.updateInfo(desc), nil
	}
	params := p.boundParams()
	err = st.CheckParams(params)
	if params != nil {
		params.Release()
	}
	if err != nil {
		return nil, toStatus(err)
	}
	if params == nil {
		// Without parameters it may split as a statement does; its parts'
		// tickets stand on their own, as a statement's.
		parts, err := st.Partition(ctx, s.limits.EndpointLifetime)
		if err != nil {
			return nil, toStatus(err)
		}
		if parts != nil {
			t := queryTicket{SQL: p.query, Database: st.Session().Database(), User: userOf(ctx)}
			info, err := s.splitInfo(st.Schema(), desc, t, parts)
			if err != nil {
				return nil, toStatus(err)
			}
			return info, nil
		}
	}
	anyCmd, err := anypb.New(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: cmd.GetPreparedStatementHandle()})
	if err != nil {
		return nil, toStatus(err)
	}
	tkt, err := proto.Marshal(anyCmd)
	if err != nil {
		return nil, toStatus(err)
	}
	return s.queryInfo(st.Schema(), desc, tkt), nil
}

// GetSchemaPreparedStatement returns a prepared query's result schema.
func (s *Server) GetSchemaPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	_, st, err := s.preparedStatement(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, toStatus(err)
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(resultSchema(st.Schema()), s.mem)}, nil
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
	p, st, err := s.preparedStatement(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, toStatus(err)
	}
	params := p.boundParams()
	if params != nil {
		defer params.Release()
	}
	return s.stream(ctx, preparedKey(cmd.GetPreparedStatementHandle()), st, params)
}

// DoPutPreparedStatementQuery binds parameters (one row per execution).
func (s *Server) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	p, err := s.openPrepared(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, toStatus(err)
	}
	params, _, err := readParams(s.mem, rdr, s.limits.MaxParamRows, s.limits.MaxParamBytes)
	if err != nil {
		return nil, toStatus(err)
	}
	if err := p.setParams(params); err != nil {
		if params != nil {
			params.Release()
		}
		return nil, toStatus(err)
	}
	return cmd.GetPreparedStatementHandle(), nil
}

// DoPutPreparedStatementUpdate executes a prepared update once per
// parameter row and returns the total count.
func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	p, st, err := s.preparedStatement(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, toStatus(err)
	}
	params, cols, err := readParams(s.mem, rdr, s.limits.MaxParamRows, s.limits.MaxParamBytes)
	if err != nil {
		return 0, toStatus(err)
	}
	if params == nil && cols > 0 {
		// Parameter columns and no rows (executemany of none): the update
		// runs once per row, so not at all; the parameters bound before
		// are not these.
		want := 0
		if ps := st.ParamSchema(); ps != nil {
			want = ps.NumFields()
		}
		if cols != want {
			return 0, toStatus(fmt.Errorf("statement takes %d parameters but %d were bound: %w", want, cols, errBadRequest))
		}
		return 0, nil
	}
	if params == nil {
		// No parameter columns: arrow-go's client sends an empty schema
		// for an update it has no parameters for; those bound before (by
		// a DoPut of the query command) apply.
		params = p.boundParams()
	}
	if params != nil {
		defer params.Release()
	}
	n, err := s.exec(ctx, st, params)
	if err != nil {
		return 0, toStatus(err)
	}
	s.rememberSession(ctx, st)
	return n, nil
}

// readParams concatenates the parameter batches of a DoPut into one batch
// (nil when the client sent no rows), refusing more than maxRows rows or
// maxBytes bytes; cols is the number of columns of the stream's schema.
func readParams(mem memory.Allocator, stream flight.MessageReader, maxRows, maxBytes int64) (_ arrow.RecordBatch, cols int, _ error) {
	rdr, err := newCheckedBatches(stream)
	if err != nil {
		return nil, 0, err
	}
	cols = rdr.Schema().NumFields()
	b, err := readParamBatches(mem, rdr, maxRows, maxBytes)
	return b, cols, err
}

func readParamBatches(mem memory.Allocator, rdr *checkedBatches, maxRows, maxBytes int64) (arrow.RecordBatch, error) {
	var (
		batches []arrow.RecordBatch
		rows    int64
		bytes   int64
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
		if bytes += util.TotalRecordSize(b); bytes > maxBytes {
			return nil, fmt.Errorf("more than %d bytes of parameters bound: %w", maxBytes, errExhausted)
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
