package flightsql

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flightd/flightd/engine"
)

// optMaxEndpoints is the session option by which a client asks for a
// query's result split over up to that many endpoints, to read them in
// parallel (Limits.MaxEndpoints caps it; unset: one endpoint, as clients
// that read only the first endpoint expect). From ADBC:
// adbc.flight.sql.session.option.flightd.max_endpoints.
const optMaxEndpoints = "flightd.max_endpoints"

// parseEndpoints reads a flightd.max_endpoints value: a positive integer,
// as an integer, a double or a string (ADBC sends strings).
func parseEndpoints(v *flight.SessionOptionValue) (int, bool) {
	var n float64
	switch x := v.GetOptionValue().(type) {
	case *pb.SessionOptionValue_Int64Value:
		n = float64(x.Int64Value)
	case *pb.SessionOptionValue_DoubleValue:
		n = x.DoubleValue
	case *pb.SessionOptionValue_StringValue:
		i, err := strconv.ParseInt(strings.TrimSpace(x.StringValue), 10, 64)
		if err != nil {
			return 0, false
		}
		n = float64(i)
	default:
		return 0, false
	}
	if n < 1 || n != math.Trunc(n) {
		return 0, false
	}
	return int(min(n, math.MaxInt32)), true
}

// sessionEndpoints is the endpoints the caller's session asks for (1
// unless set).
func sessionEndpoints(ctx context.Context) int {
	sess, err := session.GetSessionFromContext(ctx)
	if err != nil || sess == nil {
		return 1
	}
	v := sess.GetSessionOption(optMaxEndpoints)
	if v == nil {
		return 1
	}
	n, ok := parseEndpoints(v)
	if !ok {
		return 1
	}
	return n
}

// splitInfo is the FlightInfo of a query split into parts: an endpoint per
// part, its ticket the statement's with the part, the snapshots the parts
// read and an expiry (this process keeps the snapshots until then), all
// signed, so a part is redeemable on its own, in any order, concurrently
// and again until it expires, by the user who planned it.
func (s *Server) splitInfo(schema *arrow.Schema, desc *flight.FlightDescriptor, t queryTicket, p *engine.Partitions) (*flight.FlightInfo, error) {
	expires := p.Expires
	t.Parts, t.Expires = p, expires.UnixMilli()
	info := s.queryInfo(schema, desc, nil)
	info.Endpoint = make([]*flight.FlightEndpoint, p.Parts)
	info.TotalRecords = p.Rows
	for i := range info.Endpoint {
		t.Part = i
		tkt, err := s.encodeTicket(t)
		if err != nil {
			return nil, err
		}
		handle, err := flightsql.CreateStatementQueryTicket(tkt)
		if err != nil {
			return nil, err
		}
		info.Endpoint[i] = &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: handle}, ExpirationTime: timestamppb.New(expires), Location: s.nodes.location(i)}
	}
	return info, nil
}

// preparePart prepares the part a ticket of splitInfo names, if it has
// not expired.
func (s *Server) preparePart(ctx context.Context, sess *engine.Session, t queryTicket) (*engine.Statement, error) {
	if exp := time.UnixMilli(t.Expires); !time.Now().Before(exp) {
		return nil, fmt.Errorf("ticket of part %d of %d expired at %s (the snapshots it reads may be gone): call GetFlightInfo again: %w",
			t.Part+1, t.Parts.Parts, exp.UTC().Format(time.RFC3339Nano), errBadRequest)
	}
	if _, err := engine.CheckSize(t.SQL, s.limits.MaxStatementBytes, s.limits.MaxStatementTokens); err != nil {
		return nil, err
	}
	return sess.PreparePartition(ctx, t.SQL, t.Parts, t.Part)
}
