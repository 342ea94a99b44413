package flightsql

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// CompressionHeader is the gRPC request header by which a client asks for
// IPC body compression of DoGet results: "zstd" or "lz4". ADBC clients set
// it with the option adbc.flight.sql.rpc.call_header.x-flightd-compression.
const CompressionHeader = "x-flightd-compression"

// flightService is arrow-go's Flight SQL router with DoGet taken over for
// query results, so they can be IPC-compressed on request and foreign
// tickets get a clear error. Metadata results go through the router.
type flightService struct {
	flight.FlightServer
	s *Server
}

func (f *flightService) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	if bytes.HasPrefix(tkt.GetTicket(), []byte(ChangesTicketPrefix)) {
		ctx, cancel := context.WithCancel(stream.Context())
		defer cancel()
		schema, chunks, err := f.s.doGetChanges(ctx, tkt.GetTicket())
		if err != nil {
			return err
		}
		return f.send(ctx, cancel, stream, schema, chunks)
	}
	if bytes.HasPrefix(tkt.GetTicket(), []byte(LookupTicketPrefix)) {
		return toStatus(f.s.doGetLookup(stream.Context(), tkt.GetTicket(), stream))
	}
	var anyCmd anypb.Any
	if err := proto.Unmarshal(tkt.GetTicket(), &anyCmd); err != nil {
		return toStatus(fmt.Errorf("ticket of %d bytes is not a Flight SQL ticket issued by flightd: %w", len(tkt.GetTicket()), errBadRequest))
	}
	// Cancelled on return, so a producer blocked on a full channel stops
	// before the channel is drained.
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	var (
		schema *arrow.Schema
		chunks <-chan flight.StreamChunk
		err    error
	)
	var q pb.TicketStatementQuery
	var p pb.CommandPreparedStatementQuery
	switch {
	case anyCmd.MessageIs(&q):
		if err := anyCmd.UnmarshalTo(&q); err != nil {
			return toStatus(fmt.Errorf("malformed statement ticket: %v: %w", err, errBadRequest))
		}
		schema, chunks, err = f.s.DoGetStatement(ctx, &q)
	case anyCmd.MessageIs(&p):
		if err := anyCmd.UnmarshalTo(&p); err != nil {
			return toStatus(fmt.Errorf("malformed prepared statement ticket: %v: %w", err, errBadRequest))
		}
		schema, chunks, err = f.s.DoGetPreparedStatement(ctx, &p)
	default:
		return f.FlightServer.DoGet(tkt, stream)
	}
	if err != nil {
		return err
	}
	return f.send(ctx, cancel, stream, schema, chunks)
}

// send writes a result stream; cancel stops its producer, whose remaining
// chunks are then drained.
func (f *flightService) send(ctx context.Context, cancel context.CancelFunc, stream flight.FlightService_DoGetServer, schema *arrow.Schema, chunks <-chan flight.StreamChunk) error {
	defer func() {
		cancel()
		drainChunks(chunks)
	}()
	codec, err := compression(stream)
	if err != nil {
		return toStatus(err)
	}
	opts := writeOptions(codec, schema)
	var first flight.StreamChunk
	var ok bool
	select {
	case <-ctx.Done():
		return toStatus(ctx.Err())
	case first, ok = <-chunks:
	}
	if wire, known := grpcEncoding(stream); known && ok && first.AppMetadata != nil && dictionaryFree(schema) {
		// A streaming result (only those label their batches): other
		// streams may send the same batches.
		return f.s.writeShared(ctx, stream, schema, first, chunks, codec+"/"+wire, opts)
	}
	return writeChunks(ctx, stream, first, ok, chunks, opts)
}

// ListActions lists the Flight SQL actions and flightd's own.
func (f *flightService) ListActions(e *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	if err := f.FlightServer.ListActions(e, stream); err != nil {
		return err
	}
	return stream.Send(&flight.ActionType{Type: CommitConsumerAction,
		Description: `Records a change stream consumer's position: {"table": "db.t", "consumer_id": "c1", "next_snapshot": N}`})
}

// DoAction adds flightd's own actions to the Flight SQL ones.
func (f *flightService) DoAction(action *flight.Action, stream flight.FlightService_DoActionServer) error {
	if action.GetType() == CommitConsumerAction {
		if err := f.s.commitConsumer(stream.Context(), action.GetBody()); err != nil {
			return toStatus(err)
		}
		return nil
	}
	return f.FlightServer.DoAction(action, stream)
}

// writeOptions are the IPC options of a result stream of schema whose
// client asked for compression codec (see compression).
func writeOptions(codec string, schema *arrow.Schema) []ipc.Option {
	opts := []ipc.Option{ipc.WithSchema(schema)}
	switch codec {
	case "zstd":
		opts = append(opts, ipc.WithZstd())
	case "lz4":
		opts = append(opts, ipc.WithLZ4())
	}
	return opts
}

// compression is the IPC body compression the client asked for: "",
// "zstd" or "lz4".
func compression(stream flight.FlightService_DoGetServer) (string, error) {
	md, _ := metadata.FromIncomingContext(stream.Context())
	vals := md.Get(CompressionHeader)
	if len(vals) == 0 {
		return "", nil
	}
	switch c := strings.ToLower(strings.TrimSpace(vals[0])); c {
	case "", "none":
		return "", nil
	case "zstd":
		return c, nil
	case "lz4", "lz4_frame":
		return "lz4", nil
	default:
		return "", fmt.Errorf("header %s: unknown compression %q (use zstd or lz4): %w", CompressionHeader, vals[0], errBadRequest)
	}
}

// writeChunks writes batches as they arrive, starting with first (if ok),
// and stops when the client goes away.
func writeChunks(ctx context.Context, stream flight.FlightService_DoGetServer, first flight.StreamChunk, ok bool, chunks <-chan flight.StreamChunk, opts []ipc.Option) error {
	wr := flight.NewRecordWriter(stream, opts...)
	defer wr.Close()
	return forChunks(ctx, first, ok, chunks, func(b arrow.RecordBatch, meta []byte) error {
		defer b.Release()
		return wr.WriteWithAppMetadata(b, meta)
	})
}

// forChunks calls write with first (if ok) and each later chunk's batch,
// which write releases, and metadata, until chunks ends, a chunk carries
// an error, write fails or the client goes away.
func forChunks(ctx context.Context, first flight.StreamChunk, ok bool, chunks <-chan flight.StreamChunk, write func(arrow.RecordBatch, []byte) error) error {
	for chunk := first; ok; {
		if chunk.Err != nil {
			return toStatus(chunk.Err)
		}
		if err := write(chunk.Data, chunk.AppMetadata); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return toStatus(ctx.Err())
		case chunk, ok = <-chunks:
		}
	}
	return nil
}

func drainChunks(chunks <-chan flight.StreamChunk) {
	for chunk := range chunks {
		if chunk.Data != nil {
			chunk.Data.Release()
		}
	}
}
