package flightsql

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
)

// CatalogName is the one Flight SQL catalog flightd serves; its schemas are
// the table store's databases.
const CatalogName = "flightd"

// Limits bound what one server holds for its clients.
type Limits struct {
	// MaxPreparedStatements caps the open prepared statements (all clients).
	MaxPreparedStatements int
	// MaxParamRows caps the parameter rows bound to one prepared statement.
	MaxParamRows int64
}

// DefaultLimits are used for zero fields of Limits.
var DefaultLimits = Limits{MaxPreparedStatements: 10000, MaxParamRows: 1 << 20}

// Server serves Flight SQL over an engine.
type Server struct {
	flightsql.BaseServer

	eng    *engine.Engine
	mem    memory.Allocator
	limits Limits

	prepared preparedStatements
	running  runningQueries
}

// NewServer builds the Flight SQL service. Register it with Register.
func NewServer(eng *engine.Engine, limits Limits) (*Server, error) {
	if limits.MaxPreparedStatements <= 0 {
		limits.MaxPreparedStatements = DefaultLimits.MaxPreparedStatements
	}
	if limits.MaxParamRows <= 0 {
		limits.MaxParamRows = DefaultLimits.MaxParamRows
	}
	s := &Server{eng: eng, mem: eng.Mem(), limits: limits}
	s.Alloc = s.mem
	s.prepared.m = make(map[string]*prepared)
	s.running.m = make(map[string]map[uint64]runningQuery)
	if err := registerSQLInfo(s); err != nil {
		return nil, fmt.Errorf("register SqlInfo: %w", err)
	}
	return s, nil
}

// FlightService wraps the server for registration on a flight.Server.
func (s *Server) FlightService() flight.FlightServer {
	return &flightService{FlightServer: flightsql.NewFlightServerWithAllocator(s, s.mem), s: s}
}

// SessionMiddleware keeps session options (catalog, schema) in a cookie, so
// sessions survive server restarts and need no server state. arrow-go's
// session middleware panics on a cookie it cannot decode; that panic
// becomes an InvalidArgument error here instead of killing the server.
func SessionMiddleware() flight.ServerMiddleware {
	mw := flight.CreateServerMiddleware(quietSessions{session.NewServerSessionMiddleware(session.NewStatelessServerSessionManager())})
	unary, stream := mw.Unary, mw.Stream
	return flight.ServerMiddleware{
		Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
			defer recoverSession(&err)
			return unary(ctx, req, info, handler)
		},
		Stream: func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
			defer recoverSession(&err)
			return stream(srv, ss, info, handler)
		},
	}
}

// quietSessions sends a session cookie in the trailer only when the call
// changed it: arrow-go sends it in the header of a cookieless call and again
// in the trailer. A trailer with metadata is what arrow-go's Go client
// middleware then reads from a finalizer, racing gRPC's reader, for every
// stream its caller did not drain (flightsql.Client.ExecuteUpdate reads one
// message): `go test -race` of any Go client flags it.
type quietSessions struct{ flight.CustomServerMiddleware }

type startCookieKey struct{}

func (q quietSessions) StartCall(ctx context.Context) context.Context {
	ctx = q.CustomServerMiddleware.StartCall(ctx)
	if c, ok := sessionCookie(ctx); ok {
		ctx = context.WithValue(ctx, startCookieKey{}, c)
	}
	return ctx
}

func (q quietSessions) CallCompleted(ctx context.Context, err error) {
	if start, ok := ctx.Value(startCookieKey{}).(string); ok {
		if c, ok := sessionCookie(ctx); ok && c == start {
			return
		}
	}
	q.CustomServerMiddleware.CallCompleted(ctx, err)
}

// sessionCookie is the cookie that carries the call's session now; false
// when there is none or it is closed (its cookie must then be revoked).
func sessionCookie(ctx context.Context) (string, bool) {
	s, err := session.GetSessionFromContext(ctx)
	if err != nil || s == nil || s.Closed() {
		return "", false
	}
	c, err := session.CreateCookieForSession(s)
	if err != nil {
		return "", false
	}
	return c.String(), true
}

func recoverSession(err *error) {
	if r := recover(); r != nil {
		*err = status.Errorf(codes.InvalidArgument, "session cookie: %v", r)
	}
}

// rememberDatabase stores a database switched by USE in the client's
// session, so it holds for the session's later calls.
func (s *Server) rememberDatabase(ctx context.Context, sess *engine.Session) {
	if fs, err := session.GetSessionFromContext(ctx); err == nil && fs != nil {
		if db := sess.Database(); db != fs.GetSessionOption(optSchema).GetStringValue() {
			fs.SetSessionOption(optSchema, stringOption(db))
		}
	}
}

// Close releases server-held state (bound parameters of prepared
// statements). The engine is closed by its owner.
func (s *Server) Close() {
	s.prepared.closeAll()
}

// session returns an engine session in the database the client's Flight
// session selected.
func (s *Server) session(ctx context.Context) (*engine.Session, error) {
	sess := s.eng.NewSession()
	if db := sessionString(ctx, optSchema); db != "" {
		if err := sess.SetDatabase(ctx, db); err != nil {
			return nil, err
		}
	}
	return sess, nil
}

// txn resolves a Flight SQL transaction id (empty: autocommit).
func (s *Server) txn(id []byte) (*engine.Txn, error) {
	if len(id) == 0 {
		return nil, nil
	}
	return s.eng.Txn(string(id))
}

// runningQueries tracks cancellable DoGets by ticket for CancelFlightInfo.
// Identical tickets (the same query) may run several times at once; a
// cancel stops all of them.
type runningQueries struct {
	mu   sync.Mutex
	next uint64
	m    map[string]map[uint64]runningQuery
}

type runningQuery struct {
	cancel    context.CancelFunc
	streaming bool // a change stream, which never ends on its own
}

func (r *runningQueries) start(ctx context.Context, ticket []byte, streaming bool) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	key := string(ticket)
	r.mu.Lock()
	r.next++
	id := r.next
	if r.m[key] == nil {
		r.m[key] = make(map[uint64]runningQuery)
	}
	r.m[key][id] = runningQuery{cancel: cancel, streaming: streaming}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.m[key], id)
		if len(r.m[key]) == 0 {
			delete(r.m, key)
		}
		r.mu.Unlock()
		cancel()
	}
}

// CancelQueries cancels every running DoGet; their clients get Canceled.
// Shutdown uses it when streams outlive the grace period.
func (s *Server) CancelQueries() { s.running.cancelAll(false) }

// CancelStreams cancels every change stream: they never end on their own,
// so shutdown does not wait for them; clients resume by snapshot or
// consumer id.
func (s *Server) CancelStreams() { s.running.cancelAll(true) }

func (r *runningQueries) cancelAll(onlyStreams bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.m {
		for _, q := range m {
			if q.streaming || !onlyStreams {
				q.cancel()
			}
		}
	}
}

func (r *runningQueries) cancel(ticket []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.m[string(ticket)] {
		q.cancel()
	}
	return len(r.m[string(ticket)]) > 0
}
