package flightsql_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/internal/hostile"
)

// TestHostileDoPuts sends the DoPuts that crashed or fooled the server
// (issue 10) and checks each gets InvalidArgument, nothing is stored, and
// the server still answers.
func TestHostileDoPuts(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cl, mem := ts.rawClient(t)
	cnxn := ts.connect(t, nil)
	puts, err := hostile.Puts(mem, "h")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range puts {
		if err := hostile.SendPut(cl.Client, p.Msgs); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", p.Name, err)
		}
	}
	if _, err := tryQuery(cnxn, "SELECT * FROM h"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a refused ingest left table h behind: %v", err)
	}

	// The same batches as parameters of a prepared statement.
	prep, err := cl.Prepare(context.Background(), "SELECT CAST(? AS VARCHAR), CAST(? AS BIGINT)")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(context.Background())
	cmd, err := anypb.New(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: prep.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range puts[1:] { // all but the one without descriptor
		p.Msgs[0].FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: desc}
		if err := hostile.SendPut(cl.Client, p.Msgs); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s as parameters: want InvalidArgument, got %v", p.Name, err)
		}
	}

	// Every 4-byte word of a schema message in turn set to large values:
	// no call may crash the server or end as an Internal panic.
	nested := hostile.Batch(mem, true)
	defer nested.Release()
	for off := 0; off < 200; off += 4 {
		for _, v := range []uint32{0x7fffffff, 0xffffffff, 0x00010000} {
			msgs, err := hostile.Messages(nested)
			if err != nil {
				t.Fatal(err)
			}
			msgs[0].FlightDescriptor = hostile.IngestDescriptor("h4")
			if off+4 <= len(msgs[0].DataHeader) {
				binary.LittleEndian.PutUint32(msgs[0].DataHeader[off:], v)
			}
			if c := status.Code(hostile.SendPut(cl.Client, msgs)); c == codes.Internal || c == codes.Unknown || c == codes.Unavailable {
				t.Fatalf("schema word %d set to %#x: %v", off/4, v, c)
			}
		}
	}

	// The server is still up and a valid DoPut works.
	b := hostile.Batch(mem, false)
	defer b.Release()
	msgs, err := hostile.Messages(b)
	if err != nil {
		t.Fatal(err)
	}
	msgs[0].FlightDescriptor = hostile.IngestDescriptor("ok")
	if err := hostile.SendPut(cl.Client, msgs); err != nil {
		t.Fatalf("valid DoPut: %v", err)
	}
	if rows := query(t, cnxn, "SELECT s FROM ok ORDER BY s"); len(rows) != 3 || rows[1][0] != "beta" {
		t.Fatalf("rows = %v", rows)
	}
}

func wantCode(t testing.TB, what string, err error, want codes.Code) {
	t.Helper()
	if status.Code(err) != want {
		t.Fatalf("%s: want %v, got %v", what, want, err)
	}
}
