// Package flighttest holds helpers for tests that talk to flightd through
// arrow-go's Flight SQL client.
package flighttest

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/protobuf/proto"
)

// CookieRetries bounds how often SetSessionOption repeats a change whose
// cookie the client lost.
const CookieRetries = 5

// SetSessionOption sets one session option through cl (which must carry
// arrow-go's client cookie middleware) and returns once the client holds
// the cookie that carries it, as a GetSessionOptions call shows.
//
// arrow-go's client cookie middleware (v18.8) can drop the Set-Cookie of a
// streaming call such as DoAction: gRPC cancels the stream's context as the
// last Recv sees the end of the stream, and the middleware's context watcher
// may then finish the call as cancelled, which skips the headers. flightd
// sends the cookie and cannot see the client lose it; a change the server
// refuses is reported at once, not retried.
func SetSessionOption(ctx context.Context, cl *flightsql.Client, name string, v any) error {
	val, err := flight.NewSessionOptionValue(v)
	if err != nil {
		return err
	}
	for range CookieRetries {
		res, err := cl.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{name: &val}})
		if err != nil {
			return err
		}
		if len(res.GetErrors()) > 0 {
			return fmt.Errorf("set %s: %v", name, res.GetErrors())
		}
		got, err := cl.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{})
		if err != nil {
			return err
		}
		if proto.Equal(got.GetSessionOptions()[name], &val) {
			return nil
		}
	}
	return fmt.Errorf("set %s: the client lost the session cookie %d times", name, CookieRetries)
}
