package flightsql_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/flightd/flightd/flightsql"
)

// TestHugeHandlesQuotedShort: an unknown prepared statement handle or
// transaction id of 20 MB gets NotFound quoting 64 bytes of it and its
// length. Quoted whole (%q writes 4 bytes for an unprintable one, and each
// wrapping copied the message) one 100 MB handle took the real binary from
// 40 MB to 2.9 GB RSS before the message was clipped.
func TestHugeHandlesQuotedShort(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	const size = 20_000_000
	handle := []byte(strings.Repeat("\x01", size))
	marshal := func(m proto.Message) []byte { return cmdDescriptor(t, m).Cmd }
	action := func(typ string, m proto.Message) error {
		stream, err := cl.Client.DoAction(ctx, &flight.Action{Type: typ, Body: marshal(m)})
		if err != nil {
			return err
		}
		for {
			if _, err := stream.Recv(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
	query := marshal(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: handle})
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"ClosePreparedStatement", func() error {
			return action("ClosePreparedStatement", &pb.ActionClosePreparedStatementRequest{PreparedStatementHandle: handle})
		}},
		{"EndTransaction", func() error {
			return action("EndTransaction", &pb.ActionEndTransactionRequest{TransactionId: handle, Action: pb.ActionEndTransactionRequest_END_TRANSACTION_ROLLBACK})
		}},
		{"GetFlightInfo of a prepared statement", func() error {
			_, err := cl.Client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: query})
			return err
		}},
		{"DoGet of a prepared statement", func() error {
			stream, err := cl.Client.DoGet(ctx, &flight.Ticket{Ticket: query})
			if err == nil {
				_, err = stream.Recv()
			}
			return err
		}},
		{"a statement in the transaction", func() error {
			_, err := cl.Client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD,
				Cmd: marshal(&pb.CommandStatementQuery{Query: "SELECT 1", TransactionId: handle})})
			return err
		}},
	} {
		err := c.call()
		if status.Code(err) != codes.NotFound {
			t.Errorf("%s: want NotFound, got %.200v", c.name, err)
			continue
		}
		if msg := status.Convert(err).Message(); len(msg) > 1000 || !strings.Contains(msg, fmt.Sprintf("… (%d bytes)", size)) {
			t.Errorf("%s: a message of %d bytes: %.300s…, want 64 bytes of the handle and its length", c.name, len(msg), msg)
		}
	}
}
