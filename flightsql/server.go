package flightsql

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/quote"
)

// CatalogName is the one Flight SQL catalog flightd serves; its schemas are
// the table store's databases.
const CatalogName = engine.CatalogName

// Limits bound what one server holds for its clients. A client is an
// authenticated user or, without authentication, one connection; one client
// reaching a limit does not affect the others.
type Limits struct {
	// MaxPreparedStatements caps the open prepared statements of a client.
	MaxPreparedStatements int
	// MaxParamRows caps the parameter rows bound to one prepared statement.
	MaxParamRows int64
	// MaxStatementBytes and MaxStatementTokens bound the SQL text of one
	// statement, before it is parsed (SQLSTATE 54000): planning time and
	// memory grow with the tokens (a 1.5M-item IN list took 32 s and
	// 1.2 GB). The 99 TPC-DS queries have at most 1,349 tokens.
	MaxStatementBytes, MaxStatementTokens int
	// MaxParamBytes caps the bytes of parameters one DoPut sends, and what
	// all prepared statements of a client hold: their bound parameters and
	// their plans' estimated size (engine.PlanBytes).
	MaxParamBytes int64
	// MaxPreparedMemory caps what the prepared statements of all clients
	// hold together: their plans' estimated size (engine.PlanBytes) and
	// their bound parameters (0: no bound; MaxParamBytes bounds one
	// client's).
	MaxPreparedMemory int64
	// MaxTransactions caps the open transactions of a client.
	MaxTransactions int
	// PreparedIdle closes a prepared statement no call used for this long.
	PreparedIdle time.Duration
	// TxnIdle rolls back a transaction no call used for this long.
	TxnIdle time.Duration
	// MaxRunningQueries caps the result and change streams (DoGets) a
	// client runs at once.
	MaxRunningQueries int
	// MaxEndpoints caps the endpoints a query result splits into for
	// parallel readers; a client asks for up to that many with the session
	// option flightd.max_endpoints (endpoints.go).
	MaxEndpoints int
	// MinEndpointBytes is the least stored data one endpoint of a split
	// result reads, so small results stay one endpoint.
	MinEndpointBytes int64
	// EndpointLifetime is how long the tickets of a split result stay
	// redeemable (they read the snapshots it was planned on).
	EndpointLifetime time.Duration
}

// DefaultLimits are used for zero fields of Limits.
var DefaultLimits = Limits{MaxPreparedStatements: 1000, MaxParamRows: 1 << 20, MaxParamBytes: 256 << 20, MaxTransactions: 100,
	MaxStatementBytes: 16 << 20, MaxStatementTokens: 1_000_000,
	PreparedIdle: time.Hour, TxnIdle: 10 * time.Minute, MaxRunningQueries: 64,
	MaxEndpoints: 64, MinEndpointBytes: 8 << 20, EndpointLifetime: time.Hour}

// Server serves Flight SQL over an engine.
type Server struct {
	flightsql.BaseServer

	eng    *engine.Engine
	mem    memory.Allocator
	limits Limits
	key    []byte // signs query tickets (and bearer tokens)
	grants grants // nil without authentication: everything is allowed

	prepared    *registry[*prepared]
	paramBudget *paramBudget
	txns        *registry[openTxn]
	txnHistory  *txnHistory
	running     runningQueries
	planned     plannedQueries
	// messages and empties share streaming results' encoding (fanout.go).
	messages *sharedMessages
	empties  emptyBatches

	// nodes is set by Advertise (locations.go): nil, endpoints name no
	// location.
	nodes *nodeView

	stopJanitor chan struct{}
	janitorDone chan struct{}
	closeOnce   sync.Once
}

// NewServer builds the Flight SQL service. Register it with Register.
func NewServer(eng *engine.Engine, limits Limits) (*Server, error) {
	orDefault(&limits.MaxPreparedStatements, DefaultLimits.MaxPreparedStatements)
	orDefault(&limits.MaxParamRows, DefaultLimits.MaxParamRows)
	orDefault(&limits.MaxStatementBytes, DefaultLimits.MaxStatementBytes)
	orDefault(&limits.MaxStatementTokens, DefaultLimits.MaxStatementTokens)
	orDefault(&limits.MaxParamBytes, DefaultLimits.MaxParamBytes)
	orDefault(&limits.MaxTransactions, DefaultLimits.MaxTransactions)
	orDefault(&limits.PreparedIdle, DefaultLimits.PreparedIdle)
	orDefault(&limits.TxnIdle, DefaultLimits.TxnIdle)
	orDefault(&limits.MaxRunningQueries, DefaultLimits.MaxRunningQueries)
	orDefault(&limits.MaxEndpoints, DefaultLimits.MaxEndpoints)
	orDefault(&limits.MinEndpointBytes, DefaultLimits.MinEndpointBytes)
	orDefault(&limits.EndpointLifetime, DefaultLimits.EndpointLifetime)
	s := &Server{eng: eng, mem: eng.Mem(), limits: limits,
		prepared:    newRegistry[*prepared]("prepared statements", limits.MaxPreparedStatements, limits.PreparedIdle),
		txns:        newRegistry[openTxn]("transactions", limits.MaxTransactions, limits.TxnIdle),
		txnHistory:  newTxnHistory(),
		paramBudget: &paramBudget{max: limits.MaxParamBytes, maxTotal: limits.MaxPreparedMemory, used: make(map[string]int64)},
		stopJanitor: make(chan struct{}), janitorDone: make(chan struct{}),
		messages: newSharedMessages(sharedMessagesBytes),
	}
	s.Alloc = s.mem
	s.key = make([]byte, 32)
	_, _ = rand.Read(s.key)
	s.running.m = make(map[string]map[uint64]runningQuery)
	s.running.perOwner = make(map[string]int)
	s.running.max = limits.MaxRunningQueries
	if err := registerSQLInfo(s); err != nil {
		return nil, fmt.Errorf("register SqlInfo: %w", err)
	}
	go s.janitor()
	return s, nil
}

// janitor closes idle prepared statements and rolls back idle
// transactions, checking a few times per idle period so none outlives its
// limit by much.
func (s *Server) janitor() {
	defer close(s.janitorDone)
	every := min(s.limits.PreparedIdle, s.limits.TxnIdle) / 4
	t := time.NewTicker(min(max(every, 10*time.Millisecond), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-s.stopJanitor:
			return
		case now := <-t.C:
			for _, p := range s.prepared.expired(now) {
				p.release()
			}
			for id := range s.txns.expired(now) {
				_ = s.eng.Rollback(id) // gone already if it ended meanwhile
			}
			s.txnHistory.expire(now, s.limits.PreparedIdle)
			s.planned.expire(now)
		}
	}
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
	s.closeOnce.Do(func() {
		close(s.stopJanitor)
		<-s.janitorDone
		s.nodes.close()
	})
	for _, p := range s.prepared.all() {
		p.release()
	}
	s.messages.close()
	s.empties.close()
}

// session returns an engine session in the database the client's Flight
// session selected.
func (s *Server) session(ctx context.Context) (*engine.Session, error) {
	return s.sessionIn(ctx, sessionString(ctx, optSchema))
}

// sessionIn returns an engine session of the caller, under its grants, in
// database db ("": the default).
func (s *Server) sessionIn(ctx context.Context, db string) (*engine.Session, error) {
	sess := s.eng.NewSession()
	sess.SetAuthorizer(s.authorizer(ctx))
	sess.SetUser(userOf(ctx))
	sess.SetEndpoints(engine.Endpoints{Max: min(sessionEndpoints(ctx), s.limits.MaxEndpoints), MinBytes: s.limits.MinEndpointBytes})
	if db != "" {
		if err := sess.SetDatabase(ctx, db); err != nil {
			return nil, err
		}
	}
	return sess, nil
}

// prepareSQL checks the size of SQL text from a client, then prepares it.
func (s *Server) prepareSQL(ctx context.Context, sess *engine.Session, text string, tx *engine.Txn) (*engine.Statement, error) {
	if _, err := engine.CheckSize(text, s.limits.MaxStatementBytes, s.limits.MaxStatementTokens); err != nil {
		return nil, err
	}
	return sess.Prepare(ctx, text, tx)
}

// txn resolves a Flight SQL transaction id of the caller; empty means
// the transaction the caller's session opened with BEGIN, if any, else
// autocommit.
func (s *Server) txn(ctx context.Context, id []byte) (*engine.Txn, error) {
	if len(id) == 0 {
		open := sessionString(ctx, optTransaction)
		if open == "" {
			return nil, nil
		}
		o, ok := s.txns.get(ctx, callerOf(ctx), open)
		if !ok {
			return nil, fmt.Errorf("the session's transaction %s has ended (idle past the transaction timeout, or the server restarted) and its writes are lost; ROLLBACK to leave it: %w", quote.Clipped(open, maxQuotedID), engine.ErrTxnNotFound)
		}
		return o.tx, nil
	}
	o, ok := s.txns.get(ctx, callerOf(ctx), string(id))
	if !ok {
		return nil, fmt.Errorf("transaction %s: %w", quote.Clipped(id, maxQuotedID), engine.ErrTxnNotFound)
	}
	return o.tx, nil
}

// runningQueries tracks cancellable DoGets by ticket for CancelFlightInfo.
// Identical tickets (the same query) may run several times at once; a
// cancel stops all of them.
type runningQueries struct {
	max int // per owner

	mu       sync.Mutex
	next     uint64
	m        map[string]map[uint64]runningQuery
	perOwner map[string]int
}

type runningQuery struct {
	cancel    context.CancelFunc
	streaming bool   // a change stream, which never ends on its own
	user      string // who runs it ("" without authentication)
}

// start registers a query of owner's, unless owner runs max already.
func (r *runningQueries) start(ctx context.Context, owner string, ticket []byte, streaming bool) (context.Context, func(), error) {
	key := string(ticket)
	r.mu.Lock()
	if r.perOwner[owner] >= r.max {
		r.mu.Unlock()
		return nil, nil, fmt.Errorf("%s runs %d queries, the most one client may at once; finish or cancel some first: %w", owner, r.max, errExhausted)
	}
	r.perOwner[owner]++
	ctx, cancel := context.WithCancel(ctx)
	r.next++
	id := r.next
	if r.m[key] == nil {
		r.m[key] = make(map[uint64]runningQuery)
	}
	r.m[key][id] = runningQuery{cancel: cancel, streaming: streaming, user: userOf(ctx)}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.m[key], id)
		if len(r.m[key]) == 0 {
			delete(r.m, key)
		}
		if r.perOwner[owner]--; r.perOwner[owner] == 0 {
			delete(r.perOwner, owner)
		}
		r.mu.Unlock()
		cancel()
	}, nil
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

// cancel cancels the queries running for ticket that user runs ("":
// without authentication, any), as only user may DoGet the ticket.
func (r *runningQueries) cancel(ticket []byte, user string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cancelled := false
	for _, q := range r.m[string(ticket)] {
		if q.user == user {
			q.cancel()
			cancelled = true
		}
	}
	return cancelled
}

// orDefault sets a zero or negative limit to its default.
func orDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
