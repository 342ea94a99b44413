package flightsql

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	pb "google.golang.org/protobuf/proto"
)

// flightCodec is the server's gRPC codec: protobuf, except that the
// FlightData messages of DoPut and DoExchange are decoded with their byte
// fields pointing into one copy of the message (protobuf copied the body
// again: about 5% of the process's CPU in a Nexmark q0 run), and a
// wireFlightData is sent as it is.
type flightCodec struct{ proto encoding.CodecV2 }

func newFlightCodec() flightCodec { return flightCodec{proto: encoding.GetCodecV2(proto.Name)} }

func (c flightCodec) Name() string { return proto.Name }

func (c flightCodec) Marshal(v any) (mem.BufferSlice, error) {
	if w, ok := v.(wireFlightData); ok {
		return mem.BufferSlice{mem.SliceBuffer(w)}, nil
	}
	return c.proto.Marshal(v)
}

func (c flightCodec) Unmarshal(data mem.BufferSlice, v any) error {
	fd, ok := v.(*flight.FlightData)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	// Materialize's slice is the message's own: the IPC reader's arrays
	// may keep pointing into it after gRPC reuses data's buffers.
	return unmarshalFlightData(data.Materialize(), fd)
}

// FlightData's field numbers (Flight.proto).
const (
	fdDescriptor  protowire.Number = 1
	fdDataHeader  protowire.Number = 2
	fdAppMetadata protowire.Number = 3
	fdDataBody    protowire.Number = 1000
)

// unmarshalFlightData decodes b into fd as proto.Unmarshal does, except
// that the byte fields alias b. A message with a field of another wire
// type, or one it does not know, is left to proto.Unmarshal, so that
// anything unusual keeps protobuf's behaviour (and errors).
func unmarshalFlightData(b []byte, fd *flight.FlightData) error {
	fd.Reset()
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 || typ != protowire.BytesType {
			return pb.Unmarshal(b, fd)
		}
		rest = rest[n:]
		v, n := protowire.ConsumeBytes(rest)
		if n < 0 {
			return fmt.Errorf("flight data: %w", protowire.ParseError(n))
		}
		rest = rest[n:]
		switch num {
		case fdDescriptor:
			// Small and rare (the first message of a stream): protobuf's.
			if fd.FlightDescriptor == nil {
				fd.FlightDescriptor = &flight.FlightDescriptor{}
			}
			if err := (pb.UnmarshalOptions{Merge: true}).Unmarshal(v, fd.FlightDescriptor); err != nil {
				return err
			}
		case fdDataHeader:
			fd.DataHeader = v
		case fdAppMetadata:
			fd.AppMetadata = v
		case fdDataBody:
			fd.DataBody = v
		default:
			return pb.Unmarshal(b, fd)
		}
	}
	return nil
}

// wireFlightData is a FlightData already in protobuf's wire format, which
// flightCodec sends without copying.
type wireFlightData []byte

// encodeFlightData is the FlightData of IPC payload p labelled meta in the
// wire format, written once into a buffer of its final size (marshalling a
// FlightData copies the body a second time, and growing a buffer for it
// copies it more).
func encodeFlightData(p *ipc.Payload, meta []byte) (wireFlightData, error) {
	header := p.Meta()
	defer header.Release()
	var body countWriter
	if err := p.SerializeBody(&body); err != nil {
		return nil, err
	}
	// Fields in protobuf's order, empty ones left out, as proto.Marshal
	// writes them.
	size := 0
	for _, f := range [...]struct {
		num protowire.Number
		n   int
	}{{fdDataHeader, header.Len()}, {fdAppMetadata, len(meta)}, {fdDataBody, int(body)}} {
		if f.n > 0 {
			size += protowire.SizeTag(f.num) + protowire.SizeBytes(f.n)
		}
	}
	b := make([]byte, 0, size)
	b = appendField(b, fdDataHeader, header.Bytes())
	b = appendField(b, fdAppMetadata, meta)
	if body > 0 {
		b = protowire.AppendTag(b, fdDataBody, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(body))
	}
	w := bytes.NewBuffer(b)
	if err := p.SerializeBody(w); err != nil {
		return nil, err
	}
	if w.Len() != size {
		return nil, fmt.Errorf("flight data: encoded %d bytes of %d", w.Len(), size)
	}
	return w.Bytes(), nil
}

// appendField appends bytes field num holding v, unless v is empty.
func appendField(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// countWriter counts the bytes written to it.
type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
