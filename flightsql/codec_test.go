package flightsql

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/encoding/protowire"
	pb "google.golang.org/protobuf/proto"
)

// TestEncodeFlightDataIsProtobufs checks that encodeFlightData writes the
// bytes proto.Marshal writes for the FlightData flight.Writer would send,
// over random batches, empty ones and labels included.
func TestEncodeFlightDataIsProtobufs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	for round := range 200 {
		b := array.NewRecordBuilder(mem, schema)
		rows := rng.IntN(3) * rng.IntN(300)
		for range rows {
			if rng.IntN(5) == 0 {
				for _, f := range b.Fields() {
					f.AppendNull()
				}
				continue
			}
			b.Field(0).(*array.Int64Builder).Append(rng.Int64())
			b.Field(1).(*array.StringBuilder).Append(string(make([]byte, rng.IntN(40))))
			lb := b.Field(2).(*array.ListBuilder)
			lb.Append(true)
			for range rng.IntN(4) {
				lb.ValueBuilder().(*array.Int32Builder).Append(rng.Int32())
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		var meta []byte
		if rng.IntN(2) == 0 {
			meta = fmt.Appendf(nil, "label %d", round)
		}
		p, err := ipc.GetRecordBatchPayload(rec, ipc.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeFlightData(&p, meta)
		if err != nil {
			t.Fatal(err)
		}
		header := p.Meta()
		var body bytes.Buffer
		if err := p.SerializeBody(&body); err != nil {
			t.Fatal(err)
		}
		want, err := pb.MarshalOptions{Deterministic: true}.Marshal(&flight.FlightData{DataHeader: header.Bytes(), DataBody: body.Bytes(), AppMetadata: meta})
		if err != nil {
			t.Fatal(err)
		}
		header.Release()
		p.Release()
		rec.Release()
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d (%d rows): encoded %d bytes, protobuf %d", round, rows, len(got), len(want))
		}
	}
}

// FuzzFlightDataCodec checks that unmarshalFlightData decodes any bytes
// as proto.Unmarshal does: the same message, or an error for both.
func FuzzFlightDataCodec(f *testing.F) {
	full, err := pb.Marshal(&flight.FlightData{
		FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("cmd"), Path: []string{"a", "b"}},
		DataHeader:       []byte("header"), AppMetadata: []byte("meta"), DataBody: []byte("body"),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add(full[:len(full)-2])
	// An unknown field, a field repeated, a descriptor in two parts.
	f.Add(protowire.AppendBytes(protowire.AppendTag(bytes.Clone(full), 7, protowire.BytesType), []byte("x")))
	f.Add(append(bytes.Clone(full), full...))
	f.Add(protowire.AppendVarint(protowire.AppendTag(nil, fdDataBody, protowire.VarintType), 3))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want flight.FlightData
		gotErr := unmarshalFlightData(bytes.Clone(b), &got)
		wantErr := pb.Unmarshal(b, &want)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("error %v, protobuf's %v", gotErr, wantErr)
		}
		if gotErr == nil && !pb.Equal(&got, &want) {
			t.Fatalf("decoded %v, protobuf %v", &got, &want)
		}
	})
}
