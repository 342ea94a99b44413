package flightsql_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/internal/hostile"
)

// The fuzz targets send their inputs to a real server on loopback. Any
// answer is fine except one that says the server broke: Internal or
// Unknown (a recovered panic or an unmapped error), Unavailable (it
// died) or DeadlineExceeded (it hung). Their seed corpora (testdata/fuzz) hold the inputs that crashed
// the server (issue 10) and run with go test.

func checkAnswer(t *testing.T, what string, err error) {
	t.Helper()
	switch status.Code(err) {
	case codes.Internal, codes.Unknown, codes.Unavailable, codes.DeadlineExceeded:
		t.Fatalf("%s: %v", what, err)
	}
}

// fuzzServer starts a server with a table t to read.
func fuzzServer(f *testing.F) (*testServer, flight.Client) {
	ts := startServer(f, flightsql.Options{})
	cl, _ := ts.rawClient(f)
	cnxn := ts.connect(f, nil)
	mustExec(f, cnxn, "CREATE TABLE t (k BIGINT, v VARCHAR)")
	mustExec(f, cnxn, "INSERT INTO t VALUES (1, 'a'), (2, NULL)")
	return ts, cl.Client
}

// FuzzDoPut sends an ingest DoPut of a schema message and one batch
// message, as raw IPC bytes.
func FuzzDoPut(f *testing.F) {
	_, cl := fuzzServer(f)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(f, 0)
	for _, nested := range []bool{false, true} {
		b := hostile.Batch(mem, nested)
		for _, opts := range [][]ipc.Option{nil, {ipc.WithLZ4()}, {ipc.WithZstd()}} {
			m, err := hostile.Messages(b, opts...)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(m[0].DataHeader, m[1].DataHeader, m[1].DataBody)
		}
		b.Release()
	}
	desc := hostile.IngestDescriptor("fz")
	f.Fuzz(func(t *testing.T, schema, header, body []byte) {
		err := hostile.SendPut(cl, []*flight.FlightData{
			{FlightDescriptor: desc, DataHeader: schema},
			{DataHeader: header, DataBody: body},
		})
		checkAnswer(t, "DoPut", err)
	})
}

// doGet reads at most a few messages of a DoGet: a valid change ticket
// streams without end.
func doGet(cl flight.Client, ticket []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	s, err := cl.DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err != nil {
		return err
	}
	for i := 0; i < 4; i++ {
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) || status.Code(err) == codes.DeadlineExceeded {
				// A change stream waits for commits.
				return nil
			}
			return err
		}
	}
	return nil
}

// FuzzQueryTicket sends statement tickets: flightd's own are JSON with SQL
// inside a TicketStatementQuery.
func FuzzQueryTicket(f *testing.F) {
	_, cl := fuzzServer(f)
	for _, s := range []string{
		`flightd/q1:{"sql":"SELECT k, v FROM t","db":"default"}`,
		`flightd/q1:{"sql":"SELECT * FROM t WHERE k > ?","db":"default","txn":"x"}`,
		`flightd/q1:{"sql":"SELECT 1` + strings.Repeat("+1", 5000) + `","db":"default"}`,
		`flightd/q1:{"sql":"DROP TABLE t","db":"nope"}`,
		`flightd/q1:`, `{}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, handle []byte) {
		tkt, err := anypb.New(&pb.TicketStatementQuery{StatementHandle: handle})
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(tkt)
		if err != nil {
			t.Fatal(err)
		}
		checkAnswer(t, "DoGet", doGet(cl, b))
		checkAnswer(t, "DoGet raw", doGet(cl, handle))
	})
}

// FuzzChangeTicket sends change stream tickets (JSON after a prefix).
func FuzzChangeTicket(f *testing.F) {
	_, cl := fuzzServer(f)
	for _, tk := range []flightsql.ChangesTicket{
		{Table: "t", EndSnapshotID: 1},
		{Table: "t", Mode: "from-snapshot", SnapshotID: 1, EndSnapshotID: 2, Columns: []string{"k"}, Filter: "k > 0"},
		{Table: "t", Mode: "from-timestamp", TimestampMillis: -1, ConsumerID: "c", HeartbeatMillis: 1},
		{Table: "nope.t", Filter: "1) OR (1"},
	} {
		b, _ := json.Marshal(tk)
		f.Add(b)
	}
	f.Add([]byte(`{"table":"t","filter":"k = 1` + strings.Repeat(" OR k = 1", 5000) + `"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, "DoGet", doGet(cl, append([]byte(flightsql.ChangesTicketPrefix), body...)))
	})
}

// FuzzCommand sends Any-wrapped Flight SQL commands to GetFlightInfo and
// GetSchema, and as the descriptor of an empty DoPut.
func FuzzCommand(f *testing.F) {
	_, cl := fuzzServer(f)
	for _, m := range []proto.Message{
		&pb.CommandStatementQuery{Query: "SELECT * FROM t"},
		&pb.CommandStatementUpdate{Query: "INSERT INTO t VALUES (3, 'c')"},
		&pb.CommandGetTables{IncludeSchema: true},
		&pb.CommandGetDbSchemas{},
		&pb.CommandGetPrimaryKeys{Table: "t"},
		&pb.CommandGetSqlInfo{Info: []uint32{0, 1, 500}},
		&pb.CommandGetXdbcTypeInfo{},
		&pb.CommandPreparedStatementQuery{PreparedStatementHandle: []byte("nope")},
		&pb.CommandStatementIngest{Table: "t"},
		&pb.CommandStatementSubstraitPlan{},
	} {
		a, err := anypb.New(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(a.GetTypeUrl(), a.GetValue())
	}
	f.Fuzz(func(t *testing.T, typeURL string, value []byte) {
		cmd, err := proto.Marshal(&anypb.Any{TypeUrl: typeURL, Value: value})
		if err != nil {
			return
		}
		desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = cl.GetFlightInfo(ctx, desc)
		checkAnswer(t, "GetFlightInfo", err)
		_, err = cl.GetSchema(ctx, desc)
		checkAnswer(t, "GetSchema", err)
		checkAnswer(t, "DoPut", hostile.SendPut(cl, []*flight.FlightData{{FlightDescriptor: desc}}))
	})
}
