package flightsql

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/session"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/quote"
)

// openTxn is a transaction in the registry. session marks one begun with
// BEGIN as SQL text: only its session's statements run in it, while a
// prepared statement may follow one begun through the API into it.
type openTxn struct {
	tx      *engine.Txn
	session bool
}

// BeginTransaction opens an engine transaction; its id is the handle.
func (s *Server) BeginTransaction(ctx context.Context, _ flightsql.ActionBeginTransactionRequest) ([]byte, error) {
	tx := s.eng.Begin()
	if err := s.txns.add(callerOf(ctx), tx.ID(), openTxn{tx: tx}); err != nil {
		_ = s.eng.Rollback(tx.ID())
		return nil, toStatus(err)
	}
	s.txnHistory.began(callerOf(ctx), tx.ID())
	return []byte(tx.ID()), nil
}

// EndTransaction commits or rolls back a transaction of the caller.
func (s *Server) EndTransaction(ctx context.Context, req flightsql.ActionEndTransactionRequest) error {
	id := string(req.GetTransactionId())
	action := req.GetAction()
	if action != flightsql.EndTransactionCommit && action != flightsql.EndTransactionRollback {
		return toStatus(fmt.Errorf("EndTransaction: unknown action %v: %w", action, errBadRequest))
	}
	c := callerOf(ctx)
	if _, ok := s.txns.remove(c, id); !ok {
		return toStatus(fmt.Errorf("transaction %s: %w", quote.Clipped(id, maxQuotedID), engine.ErrTxnNotFound))
	}
	var err error
	if action == flightsql.EndTransactionCommit {
		err = s.eng.Commit(ctx, id)
	} else {
		err = s.eng.Rollback(id)
	}
	if err != nil {
		return toStatus(err)
	}
	s.txnHistory.ended(c, id)
	return nil
}

// optTransaction is the session option holding the id of the transaction
// a client opened with BEGIN as SQL text.
const optTransaction = "flightd.transaction"

// sqlTransaction runs BEGIN, COMMIT and ROLLBACK given as SQL text (for
// clients whose drivers do not send the transaction actions, such as the
// JDBC driver, whose commit and rollback do nothing). BEGIN opens a
// transaction of the client's Flight session: statements of that session
// that carry no transaction id of their own run in it (Server.txn) until
// COMMIT or ROLLBACK. Without an open transaction, COMMIT and ROLLBACK
// fail (SQLSTATE 25P01). ok is false for other statements.
func (s *Server) sqlTransaction(ctx context.Context, st *engine.Statement) (ok bool, err error) {
	kind, ok := st.TxnControl()
	if !ok {
		return false, nil
	}
	fs, err := session.GetSessionFromContext(ctx)
	if err != nil || fs == nil {
		return true, fmt.Errorf("%s needs a Flight session (cookies): %w", kind, errBadRequest)
	}
	open := fs.GetSessionOption(optTransaction).GetStringValue()
	if kind == engine.TxnBegin {
		if tx := st.Txn(); tx != nil {
			return true, fmt.Errorf("BEGIN: transaction %s is in progress; COMMIT or ROLLBACK it first: %w", tx.ID(), engine.ErrTxnActive)
		}
		tx := s.eng.Begin()
		if err := s.txns.add(callerOf(ctx), tx.ID(), openTxn{tx: tx, session: true}); err != nil {
			_ = s.eng.Rollback(tx.ID())
			return true, err
		}
		s.txnHistory.began(callerOf(ctx), tx.ID())
		fs.SetSessionOption(optTransaction, stringOption(tx.ID()))
		return true, nil
	}
	if tx := st.Txn(); tx != nil && tx.ID() != open {
		// The statement carries a transaction the client began with
		// BeginTransaction (ADBC with autocommit off): the client ends it.
		// This said no transaction was in progress and that writes had been
		// committed, while they were pending in it.
		return true, fmt.Errorf("%s: this statement runs in transaction %s, which the client began through its API; end it there (ADBC: commit() or rollback()), not with SQL: %w", kind, tx.ID(), engine.ErrTxnActive)
	}
	if open == "" {
		// Loud rather than PostgreSQL's warning: a client that does not
		// keep the session cookie sent its BEGIN into a session it then
		// left, and its writes since were committed one by one.
		return true, fmt.Errorf("%s: %w in this session; if a BEGIN came before, the client did not keep the session cookie, so its writes since then were committed (ADBC: set adbc.flight.sql.rpc.with_cookie_middleware=true)", kind, engine.ErrNoTxn)
	}
	fs.EraseSessionOption(optTransaction) // the transaction ends, whatever happens below
	if _, ok := s.txns.remove(callerOf(ctx), open); !ok {
		if kind == engine.TxnRollback {
			return true, nil // gone already: nothing left to roll back
		}
		return true, fmt.Errorf("%s: the session's transaction %s had already ended (idle past the transaction timeout, or the server restarted); its writes are lost: %w", kind, quote.Clipped(open, maxQuotedID), engine.ErrTxnNotFound)
	}
	if kind == engine.TxnCommit {
		err = s.eng.Commit(ctx, open)
	} else {
		err = s.eng.Rollback(open)
	}
	if err == nil {
		s.txnHistory.ended(callerOf(ctx), open)
	}
	return true, err
}
