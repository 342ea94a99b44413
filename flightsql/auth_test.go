package flightsql_test

import (
	"context"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

// clientFrom is a raw Flight SQL client whose connection comes from the
// loopback address source (127.0.0.x), so tests can play several hosts.
func (ts *testServer) clientFrom(t *testing.T, source string) *arrowflightsql.Client {
	t.Helper()
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
		return d.DialContext(ctx, "tcp", addr)
	}
	cl, _ := ts.rawClient(t, grpc.WithContextDialer(dial))
	return cl
}

// basic is a context whose calls carry Basic credentials.
func basic(user, pass string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization",
		"Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
}

func TestReadAuthFile(t *testing.T) {
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	write := func(body string) string {
		path := filepath.Join(dir, "users")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	users, grants, err := flightsql.ReadAuthFile(write("# users\nalice:plain\nbob:" + string(hash) + "\ngrant: alice admin *\ngrant: bob read sales\n"))
	if err != nil {
		t.Fatal(err)
	}
	if users["alice"] != "plain" || users["bob"] != string(hash) || len(grants) != 2 ||
		grants[1] != (flightsql.Grant{User: "bob", Database: "sales", Privilege: engine.Read}) {
		t.Fatalf("users %v grants %v", users, grants)
	}
	for name, body := range map[string]string{
		"empty password":     "alice:\n",
		"no password":        "alice\n",
		"unknown privilege":  "alice:x\ngrant: alice owner *\n",
		"grant unknown user": "alice:x\ngrant: bob read *\n",
		"short grant":        "alice:x\ngrant: alice read\n",
		"no users":           "# nobody\n",
	} {
		if _, _, err := flightsql.ReadAuthFile(write(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// The server refuses them too, whoever builds its options.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	eng, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv, err := flightsql.NewServer(eng, flightsql.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for name, users := range map[string]map[string]string{
		"empty password": {"alice": "x", "bob": ""},
		"bad bcrypt":     {"alice": "$2a$10$short"},
	} {
		if _, err := flightsql.NewFlightServer(srv, flightsql.Options{Users: users}); err == nil {
			t.Errorf("%s: server accepted %v", name, users)
		}
	}
}

func TestBcryptPasswords(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, flightsql.Options{Users: map[string]string{"alice": string(hash)}})
	cl := ts.clientFrom(t, "127.0.0.1")
	for range 2 { // the second is answered from the cache of verified passwords
		if _, err := cl.Execute(basic("alice", "s3cret"), "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	_, err = cl.Execute(basic("alice", "s3creT"), "SELECT 1")
	wantCode(t, "wrong password", err, codes.Unauthenticated)
	_, err = cl.Execute(basic("alice", string(hash)), "SELECT 1")
	wantCode(t, "the hash as password", err, codes.Unauthenticated)
}

// Tokens are signed, not stored: a server with the same key accepts them
// (restarts, other nodes), one with another key does not, an altered
// token is refused, and every token expires.
func TestTokens(t *testing.T) {
	users := map[string]string{"alice": "pw"}
	key := []byte("0123456789abcdef0123456789abcdef")
	const lifetime = 2 * time.Second
	a := startServer(t, flightsql.Options{Users: users, Key: key, TokenLifetime: lifetime})
	b := startServer(t, flightsql.Options{Users: users, Key: key})
	other := startServer(t, flightsql.Options{Users: users})

	ca := a.clientFrom(t, "127.0.0.1")
	ctx, err := ca.Client.AuthenticateBasicToken(context.Background(), "alice", "pw")
	if err != nil {
		t.Fatal(err)
	}
	issued := time.Now()
	md, _ := metadata.FromOutgoingContext(ctx)
	token := strings.TrimPrefix(md.Get("authorization")[0], "Bearer ")
	bearer := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
	}
	if _, err := ca.Execute(bearer(token), "SELECT 1"); err != nil {
		t.Fatalf("token on the server that issued it: %v", err)
	}
	if _, err := b.clientFrom(t, "127.0.0.1").Execute(bearer(token), "SELECT 1"); err != nil {
		t.Fatalf("token on a server with the same key: %v", err)
	}
	co := other.clientFrom(t, "127.0.0.1")
	_, err = co.Execute(bearer(token), "SELECT 1")
	wantCode(t, "token on a server with another key", err, codes.Unauthenticated)

	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		t.Fatal(err)
	}
	raw[0] ^= 0x7f // a later expiry
	_, err = ca.Execute(bearer(base64.RawURLEncoding.EncodeToString(raw)), "SELECT 1")
	wantCode(t, "altered token", err, codes.Unauthenticated)

	time.Sleep(time.Until(issued.Add(lifetime + time.Second)))
	_, err = ca.Execute(bearer(token), "SELECT 1")
	wantCode(t, "expired token", err, codes.Unauthenticated)
}

// Failed logins lock the user name and the source address out for a
// while; other users from other sources go on.
func TestLoginThrottle(t *testing.T) {
	ts := startServer(t, flightsql.Options{Users: map[string]string{"alice": "pw", "bob": "pw2"}})
	attacker := ts.clientFrom(t, "127.0.0.2")
	for i := range 30 {
		_, err := attacker.Execute(basic("alice", "guess"), "SELECT 1")
		switch {
		case i < 5:
			wantCode(t, "early wrong password", err, codes.Unauthenticated)
		default:
			wantCode(t, "wrong password after 5 failures", err, codes.ResourceExhausted)
		}
	}
	elsewhere := ts.clientFrom(t, "127.0.0.3")
	_, err := elsewhere.Execute(basic("alice", "pw"), "SELECT 1")
	wantCode(t, "right password of the locked user", err, codes.ResourceExhausted)
	_, err = attacker.Execute(basic("bob", "pw2"), "SELECT 1")
	wantCode(t, "another user from the locked source", err, codes.ResourceExhausted)
	if _, err := elsewhere.Execute(basic("bob", "pw2"), "SELECT 1"); err != nil {
		t.Fatalf("another user from another source: %v", err)
	}
	// Made-up user names count against the source only.
	probe := ts.clientFrom(t, "127.0.0.4")
	for range 10 {
		_, _ = probe.Execute(basic("nobody", "x"), "SELECT 1")
	}
	if _, err := elsewhere.Execute(basic("nobody", "x"), "SELECT 1"); err == nil {
		t.Fatal("unknown user accepted")
	} else {
		wantCode(t, "unknown user from a fresh source", err, codes.Unauthenticated)
	}
}
