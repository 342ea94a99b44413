package flightsql

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/internal/quote"
)

// DefaultTokenLifetime is how long a bearer token from Handshake stays
// valid unless Options.TokenLifetime says otherwise.
const DefaultTokenLifetime = 8 * time.Hour

// Login throttling: after loginFreeFailures failed logins in a row, a user
// name or a source address is refused for loginBaseLock, doubled with every
// further failure (refused attempts count), up to loginMaxLock. A success
// clears the count; one left alone for loginForget is forgotten.
const (
	loginFreeFailures = 5
	loginBaseLock     = time.Second
	loginMaxLock      = 5 * time.Minute
	loginForget       = 15 * time.Minute
)

// isBcrypt reports whether an auth file password is a bcrypt hash.
func isBcrypt(pass string) bool {
	return strings.HasPrefix(pass, "$2a$") || strings.HasPrefix(pass, "$2b$") || strings.HasPrefix(pass, "$2y$")
}

// authenticator checks Basic credentials and the bearer tokens it issued.
// Handshake with Basic returns a bearer token (header and trailer, where
// the different clients look); every other call must carry that token, or
// Basic credentials whose password is the user's password or a token (for
// tools that cannot send a bearer token).
//
// Tokens are not stored: a token is the user and its expiry signed with the
// server key (HMAC-SHA256), so any number of handshakes costs no memory and
// a token stays valid across restarts and on every server sharing the key,
// until it expires.
type authenticator struct {
	users    map[string]string // user -> password or bcrypt hash
	key      []byte
	lifetime time.Duration
	throttle throttle

	mu       sync.Mutex
	verified map[string][32]byte // user -> SHA-256 of the password bcrypt last accepted
}

func newAuthenticator(users map[string]string, key []byte, lifetime time.Duration) (*authenticator, error) {
	for u, p := range users {
		if p == "" {
			return nil, fmt.Errorf("user %q has an empty password", u)
		}
		if isBcrypt(p) {
			if _, err := bcrypt.Cost([]byte(p)); err != nil {
				return nil, fmt.Errorf("user %q: malformed bcrypt hash: %w", u, err)
			}
		}
	}
	return &authenticator{users: users, key: key, lifetime: lifetime,
		throttle: throttle{m: make(map[string]*failures)}, verified: make(map[string][32]byte)}, nil
}

func (a *authenticator) middleware() flight.ServerMiddleware {
	return flight.ServerMiddleware{Unary: a.unary, Stream: a.stream}
}

// userKey holds the authenticated user of a call in its context.
type userKey struct{}

// userOf is the authenticated user of a call ("" without authentication).
func userOf(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

func (a *authenticator) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	user, err := a.check(ctx)
	if err != nil {
		return nil, err
	}
	return handler(context.WithValue(ctx, userKey{}, user), req)
}

func (a *authenticator) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	user, err := a.check(ss.Context())
	if err != nil {
		return err
	}
	ss = &userStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), userKey{}, user)}
	if strings.HasSuffix(info.FullMethod, "/Handshake") {
		md := metadata.Pairs("authorization", "Bearer "+a.issue(user, time.Now()))
		if err := ss.SetHeader(md); err != nil {
			return status.Errorf(codes.Internal, "handshake: %v", err)
		}
		ss.SetTrailer(md)
	}
	return handler(srv, ss)
}

type userStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *userStream) Context() context.Context { return s.ctx }

// check authenticates a call and returns the user.
func (a *authenticator) check(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return "", status.Error(codes.Unauthenticated, "authentication required: send Basic credentials to Handshake, then the bearer token it returns")
	}
	scheme, cred, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	cred = strings.TrimSpace(cred)
	switch strings.ToLower(scheme) {
	case "bearer":
		if user, ok := a.valid(cred, time.Now()); ok {
			return user, nil
		}
		return "", status.Error(codes.Unauthenticated, "bearer token is invalid or expired: authenticate again")
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			if raw, err = base64.RawStdEncoding.DecodeString(cred); err != nil {
				return "", status.Error(codes.Unauthenticated, "Basic credentials are not valid base64")
			}
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return "", status.Error(codes.Unauthenticated, "Basic credentials must be user:password")
		}
		if tokUser, ok := a.valid(pass, time.Now()); ok && tokUser == user {
			return user, nil
		}
		return user, a.login(user, pass, sourceOf(ctx), time.Now())
	}
	return "", status.Errorf(codes.Unauthenticated, "unsupported authorization scheme %q (use Basic or Bearer)", scheme)
}

// login checks a password, refusing user names and sources that failed too
// often lately.
func (a *authenticator) login(user, pass, source string, now time.Time) error {
	keys := []string{"source " + source}
	if _, known := a.users[user]; known {
		// Only known names: made-up ones would grow the table without bound.
		keys = append(keys, "user "+user)
	}
	if wait := a.throttle.locked(keys, now); wait > 0 {
		return status.Errorf(codes.ResourceExhausted, "too many failed logins for %s or from %s: retry in %v", quote.Clipped(user, maxQuotedID), source, wait.Round(time.Second))
	}
	if a.password(user, pass) {
		a.throttle.succeeded(keys)
		return nil
	}
	a.throttle.failed(keys, now)
	return status.Errorf(codes.Unauthenticated, "invalid user name or password for %s", quote.Clipped(user, maxQuotedID))
}

// password reports whether pass is user's password. A bcrypt check costs
// tens of milliseconds, and tools sending Basic on every call would pay it
// each time, so the last accepted password is remembered as its SHA-256.
func (a *authenticator) password(user, pass string) bool {
	want, ok := a.users[user]
	if !ok {
		return false
	}
	if !isBcrypt(want) {
		return subtle.ConstantTimeCompare([]byte(want), []byte(pass)) == 1
	}
	sum := sha256.Sum256([]byte(pass))
	a.mu.Lock()
	last, seen := a.verified[user]
	a.mu.Unlock()
	if seen && subtle.ConstantTimeCompare(last[:], sum[:]) == 1 {
		return true
	}
	if bcrypt.CompareHashAndPassword([]byte(want), []byte(pass)) != nil {
		return false
	}
	a.mu.Lock()
	a.verified[user] = sum
	a.mu.Unlock()
	return true
}

// sourceOf is the address a call comes from, as login throttling counts
// it: the IP, or for IPv6 its /64, which one host usually holds whole.
func sourceOf(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "?"
	}
	host, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil {
		return p.Addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

// Tokens: base64url(expiry unix seconds, 8 bytes | user | HMAC-SHA256).
const tokenDomain = "flightd token\x00"

func (a *authenticator) issue(user string, now time.Time) string {
	var b []byte
	b = binary.BigEndian.AppendUint64(b, uint64(now.Add(a.lifetime).Unix()))
	b = append(b, user...)
	b = append(b, mac(a.key, tokenDomain, b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (a *authenticator) valid(token string, now time.Time) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) < 8+sha256.Size {
		return "", false
	}
	body, sig := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if !hmac.Equal(sig, mac(a.key, tokenDomain, body)) {
		return "", false
	}
	user := string(body[8:])
	if now.Unix() >= int64(binary.BigEndian.Uint64(body)) {
		return "", false
	}
	if _, ok := a.users[user]; !ok { // removed from the auth file since
		return "", false
	}
	return user, true
}

// mac signs msg with key, separated by domain from the key's other uses.
func mac(key []byte, domain string, msg []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(domain))
	h.Write(msg)
	return h.Sum(nil)
}

// throttle counts failed logins by key (a user name or a source).
type throttle struct {
	mu        sync.Mutex
	m         map[string]*failures
	pruneFrom int // prune when the table grows to this size
}

type failures struct {
	n     int
	last  time.Time
	until time.Time
}

// locked is how long the most locked of keys stays locked (0: none is).
func (t *throttle) locked(keys []string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var wait time.Duration
	for _, k := range keys {
		if f := t.m[k]; f != nil && f.until.After(now) {
			wait = max(wait, f.until.Sub(now))
			t.fail(k, now) // hammering a locked name keeps it locked
		}
	}
	return wait
}

func (t *throttle) failed(keys []string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		t.fail(k, now)
	}
}

func (t *throttle) fail(k string, now time.Time) {
	f := t.m[k]
	if f == nil || now.Sub(f.last) > loginForget {
		if len(t.m) >= max(t.pruneFrom, 1024) {
			t.prune(now)
			t.pruneFrom = 2 * len(t.m) // amortized: pruning costs O(1) per new key
		}
		f = &failures{}
		t.m[k] = f
	}
	f.n++
	f.last = now
	if over := f.n - loginFreeFailures; over >= 0 {
		lock := loginMaxLock
		if over < 20 {
			lock = min(loginBaseLock<<over, loginMaxLock)
		}
		f.until = now.Add(lock)
	}
}

// prune forgets entries left alone for loginForget, so the table holds at
// most the keys that failed within that window.
func (t *throttle) prune(now time.Time) {
	for k, f := range t.m {
		if now.Sub(f.last) > loginForget {
			delete(t.m, k)
		}
	}
}

func (t *throttle) succeeded(keys []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		delete(t.m, k)
	}
}
