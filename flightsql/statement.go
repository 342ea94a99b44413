package flightsql

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/arrowshare"
)

// ticketMagic starts every query ticket flightd issues, so a ticket from
// another server is refused with a clear message instead of misparsed.
var ticketMagic = []byte("flightd/q2:")

// queryTicket is what a statement ticket carries: enough to plan the query
// again at DoGet on any flightd over the same warehouse and with the same
// key, for the user who planned it.
type queryTicket struct {
	SQL      string `json:"sql"`
	Database string `json:"db"`
	Txn      string `json:"txn,omitempty"`
	User     string `json:"user,omitempty"`
	// Parts, when set, makes the ticket one of a split result's
	// (endpoints.go): part Part of Parts, redeemable until Expires (Unix
	// milliseconds).
	Parts   *engine.Partitions `json:"parts,omitempty"`
	Part    int                `json:"part,omitempty"`
	Expires int64              `json:"exp,omitempty"`
	// Plan names the statement GetFlightInfo planned, kept for the
	// ticket's DoGet on this server (planned.go).
	Plan string `json:"plan,omitempty"`
}

const ticketDomain = "flightd ticket\x00"

// encodeTicket signs the ticket: magic | HMAC-SHA256 | JSON. The SQL it
// carries runs at DoGet, so a ticket the server did not sign is refused.
func (s *Server) encodeTicket(t queryTicket) ([]byte, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	out := append(bytes.Clone(ticketMagic), mac(s.key, ticketDomain, b)...)
	return append(out, b...), nil
}

func (s *Server) decodeTicket(handle []byte) (queryTicket, error) {
	var t queryTicket
	rest, ok := bytes.CutPrefix(handle, ticketMagic)
	if !ok || len(rest) < sha256.Size {
		return t, fmt.Errorf("ticket was not issued by this flightd version (statement handle of %d bytes): %w", len(handle), errBadRequest)
	}
	sig, body := rest[:sha256.Size], rest[sha256.Size:]
	if !hmac.Equal(sig, mac(s.key, ticketDomain, body)) {
		return t, fmt.Errorf("ticket signature does not match: not issued by a flightd with this server's key, or altered: %w", engine.ErrDenied)
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return t, fmt.Errorf("malformed flightd ticket: %v: %w", err, errBadRequest)
	}
	return t, nil
}

// GetFlightInfoStatement plans a query and returns its schema and a ticket.
// A statement with side effects runs here, once, and the info has no
// endpoints: clients that never fetch still get the effect.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.statementInfo(ctx, cmd.GetQuery(), cmd.GetTransactionId(), desc)
}

func (s *Server) statementInfo(ctx context.Context, query string, txnID []byte, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	sess, st, err := s.prepare(ctx, query, txnID)
	if err != nil {
		return nil, toStatus(err)
	}
	if !st.IsQuery() {
		if _, err := s.exec(ctx, st, nil); err != nil {
			return nil, toStatus(err)
		}
		s.rememberDatabase(ctx, sess)
		return s.updateInfo(desc), nil
	}
	txn := ""
	if tx := st.Txn(); tx != nil {
		txn = tx.ID() // the command's, or the session's (BEGIN)
	}
	t := queryTicket{SQL: query, Database: sess.Database(), Txn: txn, User: userOf(ctx)}
	parts, err := st.Partition(ctx, s.limits.EndpointLifetime)
	if err != nil {
		return nil, toStatus(err)
	}
	if parts != nil {
		info, err := s.splitInfo(st.Schema(), desc, t, parts)
		if err != nil {
			return nil, toStatus(err)
		}
		return info, nil
	}
	if txn == "" {
		t.Plan = s.planned.put(st, time.Now())
	}
	tkt, err := s.encodeTicket(t)
	if err != nil {
		return nil, toStatus(err)
	}
	handle, err := flightsql.CreateStatementQueryTicket(tkt)
	if err != nil {
		return nil, toStatus(err)
	}
	return s.queryInfo(st.Schema(), desc, handle), nil
}

// GetSchemaStatement plans a query and returns its result schema.
func (s *Server) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	return s.statementSchema(ctx, cmd.GetQuery(), cmd.GetTransactionId())
}

func (s *Server) statementSchema(ctx context.Context, query string, txnID []byte) (*flight.SchemaResult, error) {
	_, st, err := s.prepare(ctx, query, txnID)
	if err != nil {
		return nil, toStatus(err)
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(resultSchema(st.Schema()), s.mem)}, nil
}

// PollFlightInfoStatement answers at once: planning is quick and execution
// happens at DoGet, so the info is complete on the first poll.
func (s *Server) PollFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	info, err := s.GetFlightInfoStatement(ctx, cmd, desc)
	if err != nil {
		return nil, err
	}
	return completePoll(info), nil
}

// DoGetStatement streams the result of the ticket's query: the statement
// GetFlightInfo planned if it is still current, else the query planned
// again.
func (s *Server) DoGetStatement(ctx context.Context, cmd flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	t, err := s.decodeTicket(cmd.GetStatementHandle())
	if err != nil {
		return nil, nil, toStatus(err)
	}
	if u := userOf(ctx); t.User != u {
		return nil, nil, toStatus(fmt.Errorf("ticket was issued to user %q, not %q: %w", t.User, u, engine.ErrDenied))
	}
	sess, err := s.sessionIn(ctx, t.Database) // never "": the ticket has sess.Database()
	if err != nil {
		return nil, nil, toStatus(err)
	}
	st := s.planned.take(ctx, t.Plan, time.Now())
	switch {
	case st != nil:
	case t.Parts != nil:
		// Its snapshots are pinned: no transaction of the reader's applies.
		st, err = s.preparePart(ctx, sess, t)
	default:
		var tx *engine.Txn
		if tx, err = s.txn(ctx, []byte(t.Txn)); err == nil {
			st, err = s.prepareSQL(ctx, sess, t.SQL, tx)
		}
	}
	if err != nil {
		return nil, nil, toStatus(err)
	}
	return s.stream(ctx, cmd.GetStatementHandle(), st, nil)
}

// DoPutCommandStatementUpdate runs a statement and returns its update count.
func (s *Server) DoPutCommandStatementUpdate(ctx context.Context, cmd flightsql.StatementUpdate) (int64, error) {
	return s.update(ctx, cmd.GetQuery(), cmd.GetTransactionId())
}

func (s *Server) update(ctx context.Context, query string, txnID []byte) (int64, error) {
	sess, st, err := s.prepare(ctx, query, txnID)
	if err != nil {
		return 0, toStatus(err)
	}
	n, err := s.exec(ctx, st, nil)
	if err != nil {
		return 0, toStatus(err)
	}
	s.rememberDatabase(ctx, sess)
	return n, nil
}

// exec runs a statement that returns no rows: BEGIN, COMMIT and ROLLBACK
// in the client's session, the others in the engine.
func (s *Server) exec(ctx context.Context, st *engine.Statement, params arrow.RecordBatch) (int64, error) {
	if ok, err := s.sqlTransaction(ctx, st); ok {
		return 0, err
	}
	return st.Exec(ctx, params)
}

func (s *Server) prepare(ctx context.Context, query string, txnID []byte) (*engine.Session, *engine.Statement, error) {
	tx, txErr := s.txn(ctx, txnID)
	if txErr != nil && (len(txnID) > 0 || !errors.Is(txErr, engine.ErrTxnNotFound)) {
		return nil, nil, txErr
	}
	sess, err := s.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.prepareSQL(ctx, sess, query, tx)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := st.TxnControl(); txErr != nil && !ok {
		// The session's transaction ended: only BEGIN, COMMIT or ROLLBACK
		// may leave it.
		return nil, nil, txErr
	}
	return sess, st, nil
}

// stream runs a query statement and hands its batches to the Flight
// writer as they are produced. The query is cancelled when the client goes
// away or calls CancelFlightInfo with the same ticket; a stream that did
// not run to its end always ends with an error, never as if complete.
func (s *Server) stream(ctx context.Context, ticket []byte, st *engine.Statement, params arrow.RecordBatch) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	runCtx, done, err := s.running.start(ctx, callerOf(ctx).owner, ticket, st.Streaming())
	if err != nil {
		return nil, nil, toStatus(err)
	}
	ch := make(chan flight.StreamChunk, 2)
	var (
		progress *streamProgress
		obs      engine.StreamObserver // a nil interface unless streaming
		meta     func() []byte
	)
	if st.Streaming() {
		progress = &streamProgress{ctx: ctx, ch: ch, mem: s.eng.Mem(), empties: &s.empties}
		obs, meta = progress, progress.meta
	}
	rdr, err := st.Rows(runCtx, params, obs)
	if err != nil {
		done()
		return nil, nil, toStatus(err)
	}
	schema := resultSchema(rdr.Schema())
	if progress != nil {
		progress.schema = schema // before the pump reads, which calls it
	}
	go func() {
		defer close(ch)
		defer done()
		defer rdr.Release()
		err := pump(ctx, rdr, schema, ch, meta)
		if err == nil {
			err = runCtx.Err() // cancelled between batches
		}
		if err != nil {
			select {
			case ch <- flight.StreamChunk{Err: toStatus(err)}:
			case <-ctx.Done():
			}
		}
	}()
	return schema, ch, nil
}

// pump sends the reader's batches, labelled with schema (the reader's with
// column metadata), until its end, its error, or the client going away
// (ctx); meta, if set, gives each batch's app metadata.
func pump(ctx context.Context, rdr engine.Rows, schema *arrow.Schema, ch chan<- flight.StreamChunk, meta func() []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", engine.ErrInternal, r)
		}
	}()
	for rdr.Next() {
		in := rdr.RecordBatch()
		n := in.NumRows()
		step := messageRows(in)
		for off := int64(0); off < n || off == 0; off += step {
			piece := in
			if step < n { // only a batch over messageBytes is sliced
				piece = in.NewSlice(off, min(off+step, n))
			}
			b := array.NewRecordBatch(schema, piece.Columns(), piece.NumRows())
			if piece != in {
				piece.Release()
			}
			chunk := flight.StreamChunk{Data: b}
			if meta != nil {
				chunk.AppMetadata = meta()
			}
			select {
			case ch <- chunk:
			case <-ctx.Done():
				b.Release()
				return ctx.Err()
			}
		}
	}
	return rdr.Err()
}

// messageBytes is what one sent batch's IPC body should stay under. gRPC
// clients refuse messages over 4 MiB unless told otherwise (arrow-go's
// Flight SQL client does), and a batch of the executor can be larger: a
// scan returns a Parquet row group (64Ki rows) at once.
const messageBytes = 2 << 20

// messageRows is how many rows of b go in one message: all of them, or
// fewer so that each message holds about messageBytes (at least one row).
// A slice counts its own rows (arrowshare.Bytes), not the row group's
// buffers it shares.
func messageRows(b arrow.RecordBatch) int64 {
	n := b.NumRows()
	size := int64(0)
	for _, c := range b.Columns() {
		size += arrowshare.Bytes(c.Data())
	}
	if size <= messageBytes || n == 0 {
		return max(n, 1)
	}
	return max(n*messageBytes/size, 1)
}

// queryInfo is the FlightInfo of a query: its schema and one endpoint.
func (s *Server) queryInfo(schema *arrow.Schema, desc *flight.FlightDescriptor, ticket []byte) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(resultSchema(schema), s.mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}, Location: s.nodes.location(0)}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// updateInfo is the FlightInfo of a statement that already ran: an empty
// schema and no endpoints, so there is nothing to fetch.
func (s *Server) updateInfo(desc *flight.FlightDescriptor) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(arrow.NewSchema(nil, nil), s.mem),
		FlightDescriptor: desc,
		TotalRecords:     0,
		TotalBytes:       0,
	}
}

func completePoll(info *flight.FlightInfo) *flight.PollInfo {
	progress := 1.0
	return &flight.PollInfo{Info: info, Progress: &progress}
}

// CancelFlightInfo cancels the running DoGets of the info's tickets.
func (s *Server) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	cancelled := false
	for _, ep := range req.GetInfo().GetEndpoint() {
		if tkt := ep.GetTicket(); tkt != nil {
			for _, key := range ticketKeys(tkt.GetTicket()) {
				cancelled = s.running.cancel(key, userOf(ctx)) || cancelled
			}
		}
	}
	if cancelled {
		return flight.CancelFlightInfoResult{Status: flight.CancelStatusCancelled}, nil
	}
	// Nothing runs for it: either finished or never fetched. Queries have
	// no server-side state before DoGet, so there is nothing to cancel.
	return flight.CancelFlightInfoResult{Status: flight.CancelStatusNotCancellable}, nil
}

// ticketKeys gives the keys a DoGet for this Flight ticket is registered
// under: the statement handle, or the prepared statement's key.
func ticketKeys(ticket []byte) [][]byte {
	var anyCmd anypb.Any
	if err := proto.Unmarshal(ticket, &anyCmd); err != nil {
		return nil
	}
	var q pb.TicketStatementQuery
	if anyCmd.UnmarshalTo(&q) == nil {
		return [][]byte{q.GetStatementHandle()}
	}
	var p pb.CommandPreparedStatementQuery
	if anyCmd.UnmarshalTo(&p) == nil {
		return [][]byte{preparedKey(p.GetPreparedStatementHandle())}
	}
	return nil
}
