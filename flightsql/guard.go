package flightsql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"runtime/debug"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/flightd/flightd/internal/arrowstr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// recoverUnary and recoverStream are the last line of defence: a panic in
// a handler becomes Internal for that call, with the stack in the log,
// instead of ending the process and every other client's work. Goroutines
// a handler starts recover on their own (pump).
func recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (_ any, err error) {
	defer recoverCall(info.FullMethod, &err)
	return handler(ctx, req)
}

func recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer recoverCall(info.FullMethod, &err)
	return handler(srv, ss)
}

func recoverCall(method string, err *error) {
	if r := recover(); r != nil {
		log.Printf("flightd: panic in %s: %v\n%s", method, r, debug.Stack())
		*err = status.Errorf(codes.Internal, "internal error in %s: %v (please report this with the request)", method, r)
	}
}

// DoPut checks what a client sends before arrow-go decodes it: the first
// message must carry a descriptor (arrow-go dereferences it unchecked),
// and every IPC message must be well-formed (checkIPCMessage).
func (f *flightService) DoPut(stream flight.FlightService_DoPutServer) error {
	c := &checkedPut{FlightService_DoPutServer: stream}
	err := f.FlightServer.DoPut(c)
	if c.empty {
		// arrow-go's Flight SQL client (under ADBC's driver) writes the
		// schema with the first batch: an ingest of no batches sends nothing.
		return status.Error(codes.InvalidArgument, "DoPut: the client sent an empty stream (no descriptor, no schema), so there is no table or schema to ingest; "+
			"to ingest zero rows, send the schema (with ADBC: one batch of zero rows)")
	}
	return err
}

type checkedPut struct {
	flight.FlightService_DoPutServer
	started bool
	empty   bool // the stream ended before its first message
}

func (c *checkedPut) Recv() (*flight.FlightData, error) {
	fd, err := c.FlightService_DoPutServer.Recv()
	if err != nil {
		c.empty = !c.started && errors.Is(err, io.EOF)
		return nil, err
	}
	if !c.started {
		c.started = true
		if fd.GetFlightDescriptor() == nil {
			return nil, status.Error(codes.InvalidArgument, "DoPut: the first message carries no FlightDescriptor")
		}
	}
	if err := checkIPCMessage(fd.GetDataHeader(), fd.GetDataBody()); err != nil {
		return nil, status.Error(codes.InvalidArgument, "DoPut: "+err.Error())
	}
	return fd, nil
}

// checkedBatches validates every batch of a DoPut (array.ValidateFull)
// before it reaches the engine, so that corrupted offsets or lengths are
// refused instead of stored, and reports errors in the client's stream as
// bad requests.
type checkedBatches struct {
	flight.MessageReader
	schema *arrow.Schema
	err    error
}

// newCheckedBatches reads the stream's schema, which arrow-go decodes on
// first use without recovering panics.
func newCheckedBatches(rdr flight.MessageReader) (c *checkedBatches, err error) {
	c = &checkedBatches{MessageReader: rdr}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("DoPut: undecodable schema: %v: %w", r, errBadRequest)
		}
	}()
	if c.schema = rdr.Schema(); c.schema == nil {
		return nil, c.Err()
	}
	return c, nil
}

func (c *checkedBatches) Schema() *arrow.Schema { return c.schema }

func (c *checkedBatches) Next() bool {
	if c.err != nil || !c.MessageReader.Next() {
		return false
	}
	// arrow-go's IPC reader labels every batch with the stream's schema (a
	// second schema message is refused as the wrong message type), so only
	// the columns need checking.
	b := c.MessageReader.RecordBatch()
	for i, col := range b.Columns() {
		if err := validateArray(col); err != nil {
			c.err = fmt.Errorf("DoPut: column %d (%s) of a batch is invalid: %w: %w", i, c.schema.Field(i).Name, err, errBadRequest)
			return false
		}
	}
	return true
}

func validateArray(a arrow.Array) (err error) {
	if a.DataType().ID() == arrow.NULL {
		return nil // no buffers to check; arrow-go's IPC reader gives it none, which ValidateFull refuses
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if hasNullChild(a.DataType()) {
		// arrow-go's IPC reader gives a null child (list<null>, a struct
		// field of type null) no buffers too: validate a copy that has the
		// one (absent) validity buffer ValidateFull expects.
		d := withNullBuffers(a.Data())
		defer d.Release()
		b := array.MakeFromData(d)
		defer b.Release()
		return array.ValidateFull(b)
	}
	switch a.DataType().ID() {
	case arrow.STRING:
		return validateStrings(a, arrow.BinaryTypes.Binary)
	case arrow.LARGE_STRING:
		return validateStrings(a, arrow.BinaryTypes.LargeBinary)
	}
	return array.ValidateFull(a)
}

// hasNullChild reports whether a type nested in dt is of type null.
func hasNullChild(dt arrow.DataType) bool {
	nt, ok := dt.(arrow.NestedType)
	if !ok {
		return false
	}
	for _, f := range nt.Fields() {
		if f.Type.ID() == arrow.NULL || hasNullChild(f.Type) {
			return true
		}
	}
	return false
}

// withNullBuffers is d with every array of type null in it given one nil
// buffer where it has none; the caller releases it.
func withNullBuffers(d arrow.ArrayData) arrow.ArrayData {
	bufs := d.Buffers()
	if d.DataType().ID() == arrow.NULL && len(bufs) == 0 {
		bufs = []*memory.Buffer{nil}
	}
	children := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		children[i] = withNullBuffers(c)
	}
	out := array.NewData(d.DataType(), d.Len(), bufs, children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	if d.DataType().ID() == arrow.DICTIONARY && d.Dictionary().(*array.Data) != nil {
		dd := withNullBuffers(d.Dictionary())
		out.SetDictionary(dd)
		dd.Release()
	}
	return out
}

// validateStrings is ValidateFull of a string column, whose UTF-8
// arrowstr.CheckUTF8 checks (ValidateFull's utf8.ValidString per value
// was most of validating a bulk ingest of short strings). The buffers,
// null count and offsets are checked first, by ValidateFull of the same
// buffers read as binary.
func validateStrings(a arrow.Array, bin arrow.DataType) error {
	if err := array.Validate(a); err != nil { // the null count as sent
		return err
	}
	d := a.Data()
	raw := array.NewData(bin, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
	defer raw.Release()
	b := array.MakeFromData(raw)
	defer b.Release()
	if err := array.ValidateFull(b); err != nil {
		return err
	}
	return arrowstr.CheckUTF8(a)
}

// Err is the stream's error: the client's data is at fault unless the
// call itself failed (cancelled, or a status from the transport).
func (c *checkedBatches) Err() error {
	if c.err != nil {
		return c.err
	}
	err := c.MessageReader.Err()
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return fmt.Errorf("DoPut: %w: %w", err, errBadRequest)
}
