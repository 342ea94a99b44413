package flightsql

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/flightd/flightd/engine"
)

// Grant gives a user a privilege on a database ("*": every database).
type Grant struct {
	User, Database string
	Privilege      engine.Privilege
}

// ReadAuthFile reads an auth file: lines `user:password` (the password in
// plain text or as a bcrypt hash) and `grant: user privilege database`,
// where privilege is read, write or admin and database may be `*`; `#`
// starts a comment. A user with an empty password, a grant to an unknown
// user and a file without users are refused.
func ReadAuthFile(path string) (map[string]string, []Grant, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	users := map[string]string{}
	var grants []Grant
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "grant:"); ok {
			g, err := parseGrant(rest)
			if err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			grants = append(grants, g)
			continue
		}
		user, pass, ok := strings.Cut(line, ":")
		switch {
		case !ok || user == "":
			return nil, nil, fmt.Errorf("%s:%d: want user:password or grant: user privilege database", path, n)
		case pass == "":
			return nil, nil, fmt.Errorf("%s:%d: user %q has an empty password", path, n, user)
		}
		users[user] = pass
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(users) == 0 {
		return nil, nil, fmt.Errorf("%s: no users", path)
	}
	for _, g := range grants {
		if _, ok := users[g.User]; !ok {
			return nil, nil, fmt.Errorf("%s: grant to unknown user %q", path, g.User)
		}
	}
	return users, grants, nil
}

func parseGrant(s string) (Grant, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return Grant{}, fmt.Errorf("want grant: user privilege database, got %q", strings.TrimSpace(s))
	}
	g := Grant{User: f[0], Database: f[2]}
	for _, p := range []engine.Privilege{engine.Read, engine.Write, engine.Admin} {
		if strings.EqualFold(f[1], p.String()) {
			g.Privilege = p
		}
	}
	if g.Privilege == 0 {
		return Grant{}, fmt.Errorf("unknown privilege %q (want read, write or admin)", f[1])
	}
	return g, nil
}

// grants is the privileges of each user: user -> database (or "*") ->
// the highest privilege granted.
type grants map[string]map[string]engine.Privilege

func newGrants(gs []Grant) grants {
	m := grants{}
	for _, g := range gs {
		if m[g.User] == nil {
			m[g.User] = map[string]engine.Privilege{}
		}
		m[g.User][g.Database] = max(m[g.User][g.Database], g.Privilege)
	}
	return m
}

func (g grants) allows(user, db string, p engine.Privilege) bool {
	return g[user][db] >= p || g[user]["*"] >= p
}

// authorizer is the engine Authorizer of a call: nil (everything allowed)
// without authentication.
func (s *Server) authorizer(ctx context.Context) engine.Authorizer {
	if s.grants == nil {
		return nil
	}
	user := userOf(ctx)
	return func(db string, p engine.Privilege) error { return s.grants.check(user, db, p) }
}

// OwnerGrants is engine.Config.OwnerGrants for the grants of an auth file:
// a materialized table refreshes with its owner's grants.
func OwnerGrants(gs []Grant) func(user string) engine.Authorizer {
	g := newGrants(gs)
	return func(user string) engine.Authorizer {
		return func(db string, p engine.Privilege) error { return g.check(user, db, p) }
	}
}

// allowed reports whether the caller may use p on db.
func (s *Server) allowed(ctx context.Context, db string, p engine.Privilege) error {
	if s.grants == nil {
		return nil
	}
	return s.grants.check(userOf(ctx), db, p)
}

// check is allows as an error for the engine.
func (g grants) check(user, db string, p engine.Privilege) error {
	if g.allows(user, db, p) {
		return nil
	}
	return fmt.Errorf("user %q has no %s privilege on database %q: %w", user, p, db, engine.ErrDenied)
}
