package flightsql

import (
	"container/list"
	"context"
	"encoding/binary"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
)

// Fan-out of streaming results. The change streams of a table share the
// batches the table store decoded once (tablestore/changefeed), and
// streams with one projection and no filter of their own send batches of
// the very same arrays, with the same snapshot label. Such streams share
// the encoding of each message, IPC, FlightData protobuf and gRPC framing
// (sharedMessages): the first stream to send it encodes it, the others
// write the same bytes. Their progress markers are batches of one shared
// set of empty arrays per schema (emptyBatches), so they share theirs too.
//
// Each stream still writes on its own gRPC stream, under that stream's
// flow control: a client that does not read blocks only its own stream,
// whose server side holds the two chunks of its channel and the message
// being written, and falls behind in the table store, which never waits
// for it (it reads from the files what the feed no longer keeps).

// sharedMessagesBytes bounds the encoded messages kept for other streams.
// They are needed only while the streams of a table send one snapshot.
const sharedMessagesBytes = 16 << 20

// sharedMessages are the recently encoded messages of streaming results,
// by the identity of their batch's buffers (messageKey). Safe for
// concurrent use.
type sharedMessages struct {
	limit int64

	mu      sync.Mutex
	entries map[string]*sharedMessage
	order   list.List // of the entries' keys, oldest first
	bytes   int64
	closed  bool
	encodes int64 // messages encoded (for tests)
}

// sharedMessage is one encoded message; msg and err are set when ready
// is closed.
type sharedMessage struct {
	ready chan struct{}
	msg   *grpc.PreparedMsg
	err   error
	// batch is retained while the entry is kept: its buffers cannot be
	// freed and their addresses reused by other content under the key.
	batch arrow.RecordBatch
	size  int64
	elem  *list.Element // in order
}

func newSharedMessages(limit int64) *sharedMessages {
	return &sharedMessages{limit: limit, entries: map[string]*sharedMessage{}}
}

// get returns the message of batch b labelled meta in the encoding named
// codec (IPC compression, gRPC codec and compression), encoded by encode unless a stream did it already.
func (c *sharedMessages) get(b arrow.RecordBatch, meta []byte, codec string, encode func() (*grpc.PreparedMsg, int64, error)) (*grpc.PreparedMsg, error) {
	key, pinned, ok := messageKey(b, meta, codec)
	if !ok {
		msg, _, err := encode()
		return msg, err
	}
	c.mu.Lock()
	if e := c.entries[key]; e != nil {
		c.mu.Unlock()
		<-e.ready
		return e.msg, e.err
	}
	if c.closed {
		c.mu.Unlock()
		msg, _, err := encode()
		return msg, err
	}
	e := &sharedMessage{ready: make(chan struct{}), batch: b}
	b.Retain()
	c.entries[key] = e
	e.elem = c.order.PushBack(key)
	c.encodes++
	c.mu.Unlock()

	msg, size, err := encode()
	c.mu.Lock()
	defer c.mu.Unlock()
	// Counted with the buffers it pins: a small slice of a large batch
	// keeps all of it.
	e.msg, e.size, e.err = msg, size+pinned, err
	close(e.ready)
	if c.entries[key] != e {
		// Evicted while it was encoded: it counted for nothing.
		return e.msg, e.err
	}
	if e.err != nil {
		c.drop(key)
		return nil, e.err
	}
	c.bytes += e.size
	for c.bytes > c.limit && c.order.Len() > 0 {
		c.drop(c.order.Front().Value.(string))
	}
	return e.msg, nil
}

// drop forgets the entry of key, if kept (mu held).
func (c *sharedMessages) drop(key string) {
	e := c.entries[key]
	if e == nil {
		return
	}
	delete(c.entries, key)
	c.order.Remove(e.elem)
	c.bytes -= e.size
	e.batch.Release()
}

// close releases every entry; later gets encode without keeping.
func (c *sharedMessages) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for c.order.Len() > 0 {
		c.drop(c.order.Front().Value.(string))
	}
}

// messageKey identifies the message of batch b labelled meta in the
// encoding named codec: the rows, then per column its type's layout, its
// offset, length and null count, and the address and length of each
// buffer. Equal keys of batches alive at once mean equal content, since
// arrays are immutable. pinned is the bytes of those buffers. Columns with
// children or dictionaries are not keyed (ok false): their encoding is
// done per stream.
func messageKey(b arrow.RecordBatch, meta []byte, codec string) (key string, pinned int64, ok bool) {
	buf := make([]byte, 0, 64+len(meta)+len(codec)+48*int(b.NumCols()))
	// Counts first (columns, buffers per column), so no key is a prefix
	// of another's columns followed by a codec and label.
	buf = binary.AppendUvarint(buf, uint64(b.NumRows()))
	buf = binary.AppendUvarint(buf, uint64(b.NumCols()))
	for _, col := range b.Columns() {
		d := col.Data()
		if len(d.Children()) > 0 || d.DataType().ID() == arrow.DICTIONARY {
			return "", 0, false
		}
		buf = binary.AppendUvarint(buf, uint64(d.DataType().ID()))
		if fw, ok := d.DataType().(arrow.FixedWidthDataType); ok {
			buf = binary.AppendUvarint(buf, uint64(fw.BitWidth()))
		}
		buf = binary.AppendUvarint(buf, uint64(d.Offset()))
		buf = binary.AppendUvarint(buf, uint64(d.Len()))
		buf = binary.AppendUvarint(buf, uint64(d.NullN()))
		buf = binary.AppendUvarint(buf, uint64(len(d.Buffers())))
		for _, bf := range d.Buffers() {
			var addr uintptr
			n := 0
			if bf != nil && bf.Len() > 0 {
				addr, n = uintptr(unsafe.Pointer(unsafe.SliceData(bf.Bytes()))), bf.Len()
			}
			buf = binary.AppendUvarint(buf, uint64(addr))
			buf = binary.AppendUvarint(buf, uint64(n))
			pinned += int64(n)
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(codec)))
	buf = append(buf, codec...)
	buf = append(buf, meta...)
	return string(buf), pinned, true
}

// encodeMessage is the gRPC message of batch b labelled meta on stream: a
// FlightData with its IPC record batch message, as flight.Writer sends it.
func encodeMessage(stream grpc.ServerStream, b arrow.RecordBatch, meta []byte, opts []ipc.Option) (*grpc.PreparedMsg, int64, error) {
	p, err := ipc.GetRecordBatchPayload(b, opts...)
	if err != nil {
		return nil, 0, err
	}
	defer p.Release()
	fd, err := encodeFlightData(&p, meta)
	if err != nil {
		return nil, 0, err
	}
	msg := &grpc.PreparedMsg{}
	if err := msg.Encode(stream, fd); err != nil {
		return nil, 0, err
	}
	return msg, int64(len(fd)), nil
}

// grpcEncoding names the gRPC codec and compression of stream's messages.
// A grpc.PreparedMsg is encoded with those of the stream that encoded it,
// so a stream may send only messages of streams encoding as it does: a
// client gets gRPC compression only if it asked for it (and the process
// registered the compressor), and refuses a compressed message otherwise.
// known is false if the transport does not tell.
func grpcEncoding(stream grpc.ServerStream) (name string, known bool) {
	ts, ok := grpc.ServerTransportStreamFromContext(stream.Context()).(interface {
		SendCompress() string
		ContentSubtype() string
	})
	if !ok {
		return "", false
	}
	c := ts.SendCompress()
	if c == encoding.Identity {
		c = ""
	}
	return ts.ContentSubtype() + "/" + c, true
}

// writeShared writes a streaming result, first the schema, then each
// chunk's message through the shared messages.
func (s *Server) writeShared(ctx context.Context, stream flight.FlightService_DoGetServer, schema *arrow.Schema, first flight.StreamChunk, chunks <-chan flight.StreamChunk, codec string, opts []ipc.Option) error {
	sp := ipc.GetSchemaPayload(schema, s.mem)
	header := sp.Meta()
	err := stream.Send(&flight.FlightData{DataHeader: header.Bytes()})
	header.Release()
	sp.Release()
	if err != nil {
		return err
	}
	return forChunks(ctx, first, true, chunks, func(b arrow.RecordBatch, meta []byte) error {
		msg, err := s.messages.get(b, meta, codec, func() (*grpc.PreparedMsg, int64, error) {
			return encodeMessage(stream, b, meta, opts)
		})
		// Not kept while the client is slow to take the message.
		b.Release()
		if err != nil {
			return err
		}
		return stream.SendMsg(msg)
	})
}

// emptyBatches holds one batch without rows per schema (by fingerprint),
// shared by the progress markers of every stream with that schema.
type emptyBatches struct {
	mu      sync.Mutex
	batches map[string]arrow.RecordBatch
}

// maxEmptyBatches bounds the schemas kept; markers of others get their own.
const maxEmptyBatches = 256

// get returns a retained batch without rows of schema.
func (e *emptyBatches) get(mem memory.Allocator, schema *arrow.Schema) arrow.RecordBatch {
	key := schema.Fingerprint()
	e.mu.Lock()
	defer e.mu.Unlock()
	cached := e.batches[key]
	if cached != nil && cached.Schema().Equal(schema) {
		cached.Retain()
		return cached
	}
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(mem, f.Type, 0)
		defer cols[i].Release()
	}
	b := array.NewRecordBatch(schema, cols, 0)
	// The fingerprint leaves out field metadata, which a record writer
	// compares: a schema differing only there gets a batch of its own.
	if cached == nil && len(e.batches) < maxEmptyBatches {
		if e.batches == nil {
			e.batches = map[string]arrow.RecordBatch{}
		}
		e.batches[key] = b
		b.Retain()
	}
	return b
}

func (e *emptyBatches) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, b := range e.batches {
		b.Release()
		delete(e.batches, k)
	}
}

// dictionaryFree reports whether no field of schema has a dictionary type
// at any depth: their batches can be encoded alone (ipc.Writer tracks
// dictionaries across a stream's batches).
func dictionaryFree(schema *arrow.Schema) bool {
	var free func(t arrow.DataType) bool
	free = func(t arrow.DataType) bool {
		if t.ID() == arrow.DICTIONARY {
			return false
		}
		if n, ok := t.(arrow.NestedType); ok {
			for _, f := range n.Fields() {
				if !free(f.Type) {
					return false
				}
			}
		}
		return true
	}
	for _, f := range schema.Fields() {
		if !free(f.Type) {
			return false
		}
	}
	return true
}
