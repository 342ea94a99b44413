package engine

import (
	"errors"
	"fmt"

	"github.com/flightd/flightd/plan"
)

// ErrDenied marks a statement its session's Authorizer refused.
var ErrDenied = errors.New("permission denied")

// Privilege is what a statement does to a database. Each includes the ones
// before it.
type Privilege int

// Privileges.
const (
	// Read: query tables and views, list and describe them, stream changes.
	Read Privilege = iota + 1
	// Write: INSERT, UPDATE, DELETE, compaction.
	Write
	// Admin: create, alter and drop tables, views and the database itself;
	// tags and snapshot expiry.
	Admin
)

func (p Privilege) String() string {
	switch p {
	case Read:
		return "read"
	case Write:
		return "write"
	case Admin:
		return "admin"
	}
	return "none"
}

// Authorizer decides whether a session may use a privilege on a database;
// a refusal should wrap ErrDenied.
type Authorizer func(database string, p Privilege) error

// SetAuthorizer makes the session ask az before it resolves any name in a
// database (Read, so a refused statement learns nothing of its tables, not
// even whether they exist) and before it prepares a statement that writes
// or changes a database. Views are expanded as their caller: reading one
// needs Read on the databases of the tables behind it too.
func (s *Session) SetAuthorizer(az Authorizer) {
	s.mu.Lock()
	s.authorize = az
	s.mu.Unlock()
}

// SetUser names the session's user, who becomes the owner of the
// materialized tables it creates or gives a new query: their refreshes
// run with that user's grants (Config.OwnerGrants).
func (s *Session) SetUser(user string) {
	s.mu.Lock()
	s.user = user
	s.mu.Unlock()
}

func (s *Session) userName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user
}

// ownerSession is a session in database db with the grants of owner, in
// which a materialized table's refreshes and continuous job bind its
// query: a table whose owner lost read on a source stops refreshing.
func (e *Engine) ownerSession(db, owner string) *Session {
	s := &Session{e: e, database: db, user: owner}
	if owner != "" && e.cfg.OwnerGrants != nil {
		s.authorize = e.cfg.OwnerGrants(owner)
	}
	return s
}

func (s *Session) allow(db string, p Privilege) error {
	s.mu.Lock()
	az := s.authorize
	s.mu.Unlock()
	if az == nil {
		return nil
	}
	return az(db, p)
}

// allowStatement checks what a bound statement does beyond reading the
// tables its binding resolved (checked then).
func (s *Session) allowStatement(b plan.Statement) error {
	switch b := b.(type) {
	case *plan.Insert:
		return s.allow(b.Table.Ident().Database, Write)
	case *plan.Delete:
		return s.allow(b.Table.Ident().Database, Write)
	case *plan.Merge:
		return s.allow(b.Table.Ident().Database, Write)
	case *plan.CopyFrom:
		if err := s.allowFiles(); err != nil {
			return err
		}
		return s.allow(b.Table.Ident().Database, Write)
	case *plan.CopyTo:
		return s.allowFiles()
	case *plan.Update:
		return s.allow(b.Table.Ident().Database, Write)
	case *plan.CreateTable:
		return s.allow(b.Ident.Database, Admin)
	case *plan.DropTable:
		return s.allow(b.Ident.Database, Admin)
	case *plan.AlterTable:
		return s.allow(b.Ident.Database, Admin)
	case *plan.CreateView:
		return s.allow(b.Ident.Database, Admin)
	case *plan.CreateMaterialized:
		return s.allow(b.Ident.Database, Admin)
	case *plan.AlterMaterialized:
		return s.allow(b.Table.Ident().Database, Admin)
	case *plan.DropMaterialized:
		return s.allow(b.Ident.Database, Admin)
	case *plan.DropView:
		return s.allow(b.Ident.Database, Admin)
	case *plan.CreateDatabase:
		return s.allow(b.Name, Admin)
	case *plan.AlterDatabase:
		return s.allow(b.Name, Admin)
	case *plan.DropDatabase:
		return s.allow(b.Name, Admin)
	case *plan.UseDatabase:
		return s.allow(b.Name, Read)
	case *plan.Explain:
		return s.allowStatement(b.Target)
	case *plan.StopJob:
		// A job of a database the user cannot read is hidden, as in SHOW
		// JOBS: it is "not found", like an id that does not exist.
		db, ok := s.e.jobDatabase(b.ID)
		if !ok || s.allow(db, Read) != nil {
			return fmt.Errorf("job %q: %w", b.ID, ErrJobNotFound)
		}
		return s.allow(db, Write)
	case *plan.CallProcedure:
		p := Admin // tags and expiry decide what data is kept
		switch b.Proc {
		case "sys.reset_consumer":
			p = Read // a reader records its own position
		case "sys.compact":
			p = Write
		}
		return s.allow(b.Table.Ident().Database, p)
	}
	return nil
}
