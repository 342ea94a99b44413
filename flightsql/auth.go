package flightsql

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// tokenTTL is how long a bearer token from Handshake stays valid.
const tokenTTL = 24 * time.Hour

// authenticator checks Basic credentials and the bearer tokens it issued.
// Handshake with Basic returns a bearer token (header and trailer, where
// the different clients look); every other call must carry that token, or
// Basic credentials whose password is the user's password or a token (for
// tools that cannot send a bearer token).
type authenticator struct {
	users map[string]string

	mu     sync.Mutex
	tokens map[string]tokenInfo
}

type tokenInfo struct {
	user    string
	expires time.Time
}

func newAuthenticator(users map[string]string) *authenticator {
	return &authenticator{users: users, tokens: make(map[string]tokenInfo)}
}

func (a *authenticator) middleware() flight.ServerMiddleware {
	return flight.ServerMiddleware{Unary: a.unary, Stream: a.stream}
}

func (a *authenticator) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if _, err := a.check(ctx); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (a *authenticator) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if strings.HasSuffix(info.FullMethod, "/Handshake") {
		return a.handshake(srv, ss, handler)
	}
	if _, err := a.check(ss.Context()); err != nil {
		return err
	}
	return handler(srv, ss)
}

func (a *authenticator) handshake(srv any, ss grpc.ServerStream, handler grpc.StreamHandler) error {
	user, err := a.check(ss.Context())
	if err != nil {
		return err
	}
	token := a.issue(user)
	md := metadata.Pairs("authorization", "Bearer "+token)
	if err := ss.SetHeader(md); err != nil {
		return status.Errorf(codes.Internal, "handshake: %v", err)
	}
	ss.SetTrailer(md)
	return handler(srv, ss)
}

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
		if user, ok := a.valid(cred); ok {
			return user, nil
		}
		return "", status.Error(codes.Unauthenticated, "bearer token is unknown or expired: authenticate again")
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
		if want, ok := a.users[user]; ok && subtle.ConstantTimeCompare([]byte(want), []byte(pass)) == 1 {
			return user, nil
		}
		if tokUser, ok := a.valid(pass); ok && tokUser == user {
			return user, nil
		}
		return "", status.Errorf(codes.Unauthenticated, "invalid user name or password for %q", user)
	}
	return "", status.Errorf(codes.Unauthenticated, "unsupported authorization scheme %q (use Basic or Bearer)", scheme)
}

func (a *authenticator) issue(user string) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for t, info := range a.tokens { // expire lazily; issuing is rare
		if now.After(info.expires) {
			delete(a.tokens, t)
		}
	}
	a.tokens[tok] = tokenInfo{user: user, expires: now.Add(tokenTTL)}
	return tok
}

func (a *authenticator) valid(token string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	info, ok := a.tokens[token]
	if !ok || time.Now().After(info.expires) {
		return "", false
	}
	return info.user, true
}
