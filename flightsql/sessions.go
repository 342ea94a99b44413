package flightsql

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// SessionMiddleware keeps session options (catalog, schema) in a cookie, so
// sessions survive server restarts and need no server state.
//
// A call gets a cookie only when it changed its session, and in its
// response header (with the first message, or with the status when it
// sends none), not in the trailer as arrow-go's session middleware does:
//   - arrow-go's Go client hands trailers to its cookie middleware only when
//     a stream ends with io.EOF, and not always even then (its context
//     watcher may finish the call first), so a cookie in a trailer can be
//     lost;
//   - for streams its caller does not drain (flightsql.Client.ExecuteUpdate
//     reads one message) it reads the trailer from a finalizer, racing
//     gRPC's reader, which `go test -race` of any Go client reports.
//
// A cookie that cannot be decoded is refused as InvalidArgument.
func SessionMiddleware() flight.ServerMiddleware {
	c := &cookies{manager: session.NewStatelessServerSessionManager()}
	return flight.ServerMiddleware{
		Unary: func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			ctx, err := c.start(ctx)
			if err != nil {
				return nil, err
			}
			resp, err := handler(ctx, req)
			if md := c.changed(ctx); md != nil {
				_ = grpc.SetHeader(ctx, md) // sent with the response
			}
			return resp, err
		},
		Stream: func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			ctx, err := c.start(ss.Context())
			if err != nil {
				return err
			}
			w := &cookieStream{ServerStream: ss, ctx: ctx, c: c}
			err = handler(srv, w)
			if md := c.changed(ctx); md != nil {
				if w.sent {
					ss.SetTrailer(md) // changed after the first message
				} else {
					_ = ss.SetHeader(md) // sent with the status
				}
			}
			return err
		},
	}
}

// cookies creates and encodes the sessions of calls.
type cookies struct {
	manager session.ServerSessionManager
}

// sentCookieKey holds a *string: the cookie the client holds for the
// call's session, as far as the call knows.
type sentCookieKey struct{}

// start puts the call's session (from its cookie, or a new one) in ctx,
// with the cookie that encodes it now.
func (c *cookies) start(ctx context.Context) (context.Context, error) {
	s, err := c.manager.GetSession(ctx)
	if errors.Is(err, session.ErrNoSession) {
		s, err = c.manager.CreateSession(ctx)
	}
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "session cookie: %v", err)
	}
	sent := sessionCookie(s)
	ctx = session.NewSessionContext(ctx, s)
	return context.WithValue(ctx, sentCookieKey{}, &sent), nil
}

// changed is the Set-Cookie metadata for a session the call changed or
// closed since the client's cookie; nil when it did neither. It counts
// the cookie as sent.
func (c *cookies) changed(ctx context.Context) metadata.MD {
	s, err := session.GetSessionFromContext(ctx)
	if err != nil || s == nil {
		return nil
	}
	if s.Closed() {
		_ = c.manager.CloseSession(s)
		// Revoke the client's cookie, if it sent one.
		old, err := session.GetIncomingCookieByName(ctx, session.StatelessSessionCookieName)
		if err != nil {
			return nil
		}
		old.MaxAge = -1
		return metadata.Pairs("Set-Cookie", old.String())
	}
	now := sessionCookie(s)
	sent, _ := ctx.Value(sentCookieKey{}).(*string)
	if now == "" || sent == nil || now == *sent {
		return nil
	}
	*sent = now
	return metadata.Pairs("Set-Cookie", now)
}

// sessionCookie is the cookie that encodes s ("" if it cannot).
func sessionCookie(s session.ServerSession) string {
	c, err := session.CreateCookieForSession(s)
	if err != nil {
		return ""
	}
	return c.String()
}

// cookieStream sends the cookie of a session changed before the first
// message in that message's header.
type cookieStream struct {
	grpc.ServerStream
	ctx  context.Context
	c    *cookies
	sent bool
}

func (w *cookieStream) Context() context.Context { return w.ctx }

func (w *cookieStream) SendMsg(m any) error {
	if !w.sent {
		w.sent = true
		if md := w.c.changed(w.ctx); md != nil {
			if err := w.ServerStream.SetHeader(md); err != nil {
				return err
			}
		}
	}
	return w.ServerStream.SendMsg(m)
}
