package flightsql

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
)

// panicky is a gRPC service whose handlers panic, registered on flightd's
// own server to check its recover interceptors.
type panicky struct {
	healthpb.UnimplementedHealthServer
}

func (panicky) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	panic("unary handler bug")
}

func (panicky) Watch(*healthpb.HealthCheckRequest, healthpb.Health_WatchServer) error {
	var m map[string]int
	m["x"] = 1 // a nil-map write, as a real bug would
	return nil
}

// TestRecoverInterceptors: a panic in a unary or streaming handler ends
// that call with Internal, and the server keeps serving.
func TestRecoverInterceptors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	eng, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv, err := NewServer(eng, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fs, err := NewFlightServer(srv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs.RegisterService(&healthpb.Health_ServiceDesc, panicky{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs.InitListener(lis)
	go fs.Serve()
	defer fs.Shutdown()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	for i := 0; i < 3; i++ {
		_, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "unary handler bug") {
			t.Fatalf("unary panic: %v", err)
		}
		w, err := hc.Watch(context.Background(), &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "nil map") {
			t.Fatalf("stream panic: %v", err)
		}
	}
}

// TestStatusCodes: errors map to the code and SQLSTATE their cause calls
// for; a full disk is ResourceExhausted, not Internal; an error without a
// specific SQLSTATE gets its class's.
func TestStatusCodes(t *testing.T) {
	for _, c := range []struct {
		err   error
		code  codes.Code
		state string
	}{
		{fmt.Errorf("write data file: %w", syscall.ENOSPC), codes.ResourceExhausted, "53100"},
		{fmt.Errorf("ingest: %w", errBadRequest), codes.InvalidArgument, "22023"},
		{errors.New("a bug"), codes.Internal, "XX000"},
		{fmt.Errorf("prepared statements: %w", errExhausted), codes.ResourceExhausted, "53000"},
		{fmt.Errorf("start job: %w", engine.ErrLimit), codes.ResourceExhausted, "53400"},
		{fmt.Errorf("query: %w", context.Canceled), codes.Canceled, "57014"},
		{fmt.Errorf("list: %w", errNotFound), codes.NotFound, "42704"},
		{fmt.Errorf("bind: %w: %w", engine.ErrInvalid, errNotFound), codes.NotFound, "42704"},
	} {
		st, _ := status.FromError(toStatus(c.err))
		if st.Code() != c.code || !strings.HasSuffix(st.Message(), " [SQLSTATE "+c.state+"]") {
			t.Errorf("%v: got %v %q, want %v SQLSTATE %q", c.err, st.Code(), st.Message(), c.code, c.state)
		}
	}
}

// TestKindCodes: every kind of engine error has its own code, and only
// KindInternal is Internal: a kind added to the engine without a code here
// would report bad input as a server bug.
func TestKindCodes(t *testing.T) {
	seen := map[codes.Code]engine.Kind{}
	for k := engine.KindInternal; k.String() != "unknown"; k++ {
		c, ok := kindCodes[k]
		if !ok {
			t.Fatalf("engine kind %v has no gRPC code", k)
		}
		if other, dup := seen[c]; dup {
			t.Errorf("kinds %v and %v both map to %v", other, k, c)
		}
		seen[c] = k
		if got := codeOf(engine.NewError(k, "x")); got != c {
			t.Errorf("an error of kind %v maps to %v, want %v", k, got, c)
		}
	}
	if len(seen) != len(kindCodes) {
		t.Errorf("kindCodes maps %d kinds, the engine has %d", len(kindCodes), len(seen))
	}
}
