package flightsql_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightd/flightd/flightsql"
)

// captured collects the FlightData a real arrow-go writer produces, so
// tests can corrupt exactly what a client would send.
type captured []*flight.FlightData

func (c *captured) Send(fd *flight.FlightData) error {
	*c = append(*c, proto.Clone(fd).(*flight.FlightData))
	return nil
}

// putMessages sends the FlightData of b (schema message, then the batch)
// as a DoPut, with desc on the first message, after mutate has changed
// them; it returns the call's error.
func putMessages(t testing.TB, cl flight.Client, desc *flight.FlightDescriptor, b arrow.RecordBatch, mutate func(msgs []*flight.FlightData)) error {
	t.Helper()
	var msgs captured
	w := flight.NewRecordWriter(&msgs)
	if err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	msgs[0].FlightDescriptor = desc
	if mutate != nil {
		mutate(msgs)
	}
	return sendPut(cl, msgs)
}

func sendPut(cl flight.Client, msgs []*flight.FlightData) error {
	stream, err := cl.DoPut(context.Background())
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			break // the server ended the call; Recv has its status
		}
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func ingestDescriptor(t testing.TB, table string) *flight.FlightDescriptor {
	t.Helper()
	cmd, err := anypb.New(&pb.CommandStatementIngest{
		Table: table,
		TableDefinitionOptions: &pb.CommandStatementIngest_TableDefinitionOptions{
			IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_CREATE,
			IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_APPEND,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}
}

// hostileBatch has a string and an integer column; with nested, also a
// struct column (which the table store refuses), whose schema carries a
// children vector to corrupt.
func hostileBatch(mem memory.Allocator, nested bool) arrow.RecordBatch {
	fields := []arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
	if nested {
		fields = append(fields, arrow.Field{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int32}), Nullable: true})
	}
	bld := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer bld.Release()
	for i, s := range []string{"alpha", "beta", "gamma"} {
		bld.Field(0).(*array.StringBuilder).Append(s)
		bld.Field(1).(*array.Int64Builder).Append(int64(i))
		if nested {
			stb := bld.Field(2).(*array.StructBuilder)
			stb.Append(true)
			stb.FieldBuilder(0).(*array.Int64Builder).Append(int64(i))
			stb.FieldBuilder(1).(*array.Int32Builder).Append(int32(i))
		}
	}
	return bld.NewRecordBatch()
}

func wantCode(t testing.TB, what string, err error, want codes.Code) {
	t.Helper()
	if status.Code(err) != want {
		t.Fatalf("%s: want %v, got %v", what, want, err)
	}
}

// TestHostileDoPuts sends the DoPuts that crashed or fooled the server
// (issue 10) and checks each gets InvalidArgument, nothing is stored, and
// the server still answers.
func TestHostileDoPuts(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cl, mem := ts.rawClient(t)
	cnxn := ts.connect(t, nil)
	b := hostileBatch(mem, false)
	defer b.Release()
	nested := hostileBatch(mem, true)
	defer nested.Release()

	// No descriptor: a nil-pointer panic inside arrow-go's DoPut.
	wantCode(t, "DoPut without descriptor", putMessages(t, cl.Client, nil, b, nil), codes.InvalidArgument)

	// The schema's children count (the struct's two fields) set to 2^31-1:
	// arrow-go allocated about 196 GB for it and the process died.
	err := putMessages(t, cl.Client, ingestDescriptor(t, "h1"), nested, func(msgs []*flight.FlightData) {
		hdr := msgs[0].DataHeader
		n := 0
		for off := 0; off+4 <= len(hdr); off += 4 {
			if binary.LittleEndian.Uint32(hdr[off:]) == 2 {
				binary.LittleEndian.PutUint32(hdr[off:], 0x7fffffff)
				n++
			}
		}
		if n == 0 {
			t.Fatal("no children count found in the schema message")
		}
	})
	wantCode(t, "corrupted children count", err, codes.InvalidArgument)

	// Corrupted string offsets: stored as garbage before.
	err = putMessages(t, cl.Client, ingestDescriptor(t, "h2"), b, func(msgs []*flight.FlightData) {
		body := msgs[1].DataBody
		// The offsets buffer follows the validity bitmap (absent: no
		// nulls), so the first int32 offsets are 0, 5, 9, 14.
		i := strings.Index(string(body), "\x00\x00\x00\x00\x05\x00\x00\x00\x09\x00\x00\x00")
		if i < 0 {
			t.Fatal("string offsets not found in the body")
		}
		binary.LittleEndian.PutUint32(body[i+4:], 1000)
	})
	wantCode(t, "corrupted string offsets", err, codes.InvalidArgument)
	if _, err := tryQuery(cnxn, "SELECT * FROM h2"); status.Code(err) != codes.NotFound && !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a refused ingest left table h2 behind: %v", err)
	}

	// A batch claiming more rows than its buffers hold.
	err = putMessages(t, cl.Client, ingestDescriptor(t, "h3"), b, func(msgs []*flight.FlightData) {
		hdr := msgs[1].DataHeader
		for off := 0; off+8 <= len(hdr); off += 8 {
			if binary.LittleEndian.Uint64(hdr[off:]) == 3 {
				binary.LittleEndian.PutUint64(hdr[off:], 1<<40)
			}
		}
	})
	wantCode(t, "row count beyond the buffers", err, codes.InvalidArgument)

	// Every 4-byte word of the schema message in turn set to large
	// values: no call may crash the server or end as an Internal panic.
	for off := 0; off+4 <= 200; off += 4 {
		for _, v := range []uint32{0x7fffffff, 0xffffffff, 0x00010000} {
			err := putMessages(t, cl.Client, ingestDescriptor(t, "h4"), nested, func(msgs []*flight.FlightData) {
				if off+4 <= len(msgs[0].DataHeader) {
					binary.LittleEndian.PutUint32(msgs[0].DataHeader[off:], v)
				}
			})
			if c := status.Code(err); c == codes.Internal || c == codes.Unknown || c == codes.Unavailable {
				t.Fatalf("schema word %d set to %#x: %v", off/4, v, err)
			}
		}
	}

	// The server is still up and the valid DoPut still works.
	if err := putMessages(t, cl.Client, ingestDescriptor(t, "ok"), b, nil); err != nil {
		t.Fatalf("valid DoPut: %v", err)
	}
	if rows := query(t, cnxn, "SELECT s FROM ok ORDER BY s"); len(rows) != 3 || rows[1][0] != "beta" {
		t.Fatalf("rows = %v", rows)
	}
}
