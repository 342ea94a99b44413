package flightsql

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"github.com/apache/arrow-go/v18/arrow/memory"

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

// rememberDatabase stores a database switched by USE in the client's
// session, so it holds for the session's later calls.
func (s *Server) rememberDatabase(ctx context.Context, sess *engine.Session) {
	if fs, err := session.GetSessionFromContext(ctx); err == nil && fs != nil {
		was := fs.GetSessionOption(optSchema).GetStringValue()
		if was == "" {
			was = engine.DefaultDatabase
		}
		// Unchanged, the session stays as it is: a changed session costs the
		// call a cookie (SessionMiddleware).
		if db := sess.Database(); db != was {
			fs.SetSessionOption(optSchema, stringOption(db))
		}
	}
}

// rememberSession carries a session change a prepared statement made (USE)
// into the client's session. Other prepared statements leave it alone: their
// session is the one of the CreatePreparedStatement call, which a later USE
// may have changed since.
func (s *Server) rememberSession(ctx context.Context, st *engine.Statement) {
	if st.ChangesSession() {
		s.rememberDatabase(ctx, st.Session())
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
