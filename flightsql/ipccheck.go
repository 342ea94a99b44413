package flightsql

import (
	"encoding/binary"
	"fmt"

	"github.com/flightd/flightd/engine"
)

// checkIPCMessage checks the flatbuffer IPC message header of one incoming
// FlightData (and its buffers against the body) before arrow-go decodes it.
// arrow-go trusts the counts in the header: a corrupted child count made
// it allocate about 196 GB, a compressed buffer may claim any decompressed
// size, and nesting drives its recursion. The check walks every table,
// vector and string the decoder will read, with bounded depth and work.
// Semantic checks of the decoded arrays come after (array.ValidateFull).
func checkIPCMessage(header, body []byte) error {
	if len(header) == 0 {
		return nil // a FlightData with only a descriptor or app metadata
	}
	c := &fbCheck{buf: header, budget: len(header)/8 + 16}
	if err := c.message(body); err != nil {
		return fmt.Errorf("malformed IPC message (%d header bytes): %w: %w", len(header), err, errBadRequest)
	}
	return nil
}

const (
	// maxFieldDepth bounds the nesting of a schema's types.
	maxFieldDepth = 64
	// maxDecompressedBytes bounds what the compressed buffers of one
	// message may claim to decompress to.
	maxDecompressedBytes = 1 << 30
)

// Arrow IPC flatbuffer enums (format/Message.fbs, format/Schema.fbs).
const (
	headerSchema          = 1
	headerDictionaryBatch = 2
	headerRecordBatch     = 3
	typeTimestamp         = 10
	typeUnion             = 14
	typeMap               = 17
)

// fbCheck verifies flatbuffer structures in buf. budget counts the tables
// still allowed: offsets may be shared, so without it a small message
// could make the walk (and arrow-go's decoding) exponential.
type fbCheck struct {
	buf    []byte
	budget int
}

// fbTable is a verified table: its position, vtable and inline size.
type fbTable struct {
	pos, vt, vtSize, size uint64
}

func (c *fbCheck) u32(pos uint64) (uint64, error) {
	if pos+4 > uint64(len(c.buf)) {
		return 0, fmt.Errorf("offset %d out of bounds", pos)
	}
	return uint64(binary.LittleEndian.Uint32(c.buf[pos:])), nil
}

func (c *fbCheck) table(pos uint64) (fbTable, error) {
	if c.budget--; c.budget < 0 {
		return fbTable{}, fmt.Errorf("too many tables for the message size")
	}
	if pos+4 > uint64(len(c.buf)) {
		return fbTable{}, fmt.Errorf("table at %d out of bounds", pos)
	}
	vt := int64(pos) - int64(int32(binary.LittleEndian.Uint32(c.buf[pos:])))
	if vt < 0 || uint64(vt)+4 > uint64(len(c.buf)) {
		return fbTable{}, fmt.Errorf("vtable of table at %d out of bounds", pos)
	}
	t := fbTable{pos: pos, vt: uint64(vt)}
	t.vtSize = uint64(binary.LittleEndian.Uint16(c.buf[t.vt:]))
	t.size = uint64(binary.LittleEndian.Uint16(c.buf[t.vt+2:]))
	if t.vtSize < 4 || t.vtSize%2 != 0 || t.vt+t.vtSize > uint64(len(c.buf)) || t.size < 4 || pos+t.size > uint64(len(c.buf)) {
		return fbTable{}, fmt.Errorf("table at %d has a malformed vtable", pos)
	}
	for f := uint64(4); f < t.vtSize; f += 2 {
		if off := uint64(binary.LittleEndian.Uint16(c.buf[t.vt+f:])); off != 0 && (off < 4 || off >= t.size) {
			return fbTable{}, fmt.Errorf("table at %d has a field outside it", pos)
		}
	}
	return t, nil
}

// field is the absolute position of field i of t, 0 if absent; size is
// the bytes read there.
func (c *fbCheck) field(t fbTable, i int, size uint64) (uint64, error) {
	f := 4 + 2*uint64(i)
	if f >= t.vtSize {
		return 0, nil
	}
	off := uint64(binary.LittleEndian.Uint16(c.buf[t.vt+f:]))
	if off == 0 {
		return 0, nil
	}
	if off+size > t.size {
		return 0, fmt.Errorf("field %d of table at %d out of bounds", i, t.pos)
	}
	return t.pos + off, nil
}

func (c *fbCheck) scalar(t fbTable, i int, size uint64) (uint64, bool, error) {
	p, err := c.field(t, i, size)
	if err != nil || p == 0 {
		return 0, false, err
	}
	var v uint64
	for k := uint64(0); k < size; k++ {
		v |= uint64(c.buf[p+k]) << (8 * k)
	}
	return v, true, nil
}

// ref follows the offset in field i of t (a table, vector or string).
func (c *fbCheck) ref(t fbTable, i int) (uint64, bool, error) {
	p, err := c.field(t, i, 4)
	if err != nil || p == 0 {
		return 0, false, err
	}
	off, err := c.u32(p)
	if err != nil {
		return 0, false, err
	}
	return p + off, true, nil
}

func (c *fbCheck) subtable(t fbTable, i int) (fbTable, bool, error) {
	p, ok, err := c.ref(t, i)
	if err != nil || !ok {
		return fbTable{}, false, err
	}
	sub, err := c.table(p)
	return sub, err == nil, err
}

// vector returns the start and length of the vector in field i of t,
// checking that its elements lie inside the buffer.
func (c *fbCheck) vector(t fbTable, i int, elemSize uint64) (start, n uint64, err error) {
	p, ok, err := c.ref(t, i)
	if err != nil || !ok {
		return 0, 0, err
	}
	if n, err = c.u32(p); err != nil {
		return 0, 0, err
	}
	if p+4+n*elemSize > uint64(len(c.buf)) {
		return 0, 0, fmt.Errorf("vector of %d elements at %d runs past the message's end", n, p)
	}
	return p + 4, n, nil
}

// tables checks each table of the vector in field i of t with check.
func (c *fbCheck) tables(t fbTable, i int, check func(fbTable) error) error {
	start, n, err := c.vector(t, i, 4)
	if err != nil {
		return err
	}
	for k := uint64(0); k < n; k++ {
		p := start + 4*k
		off, _ := c.u32(p)
		sub, err := c.table(p + off)
		if err != nil {
			return err
		}
		if err := check(sub); err != nil {
			return err
		}
	}
	return nil
}

func (c *fbCheck) message(body []byte) error {
	root, err := c.u32(0)
	if err != nil {
		return err
	}
	msg, err := c.table(root)
	if err != nil {
		return err
	}
	kind, _, err := c.scalar(msg, 1, 1)
	if err != nil {
		return err
	}
	if err := c.keyValues(msg, 4); err != nil {
		return err
	}
	header, ok, err := c.subtable(msg, 2)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("message without a header")
	}
	switch kind {
	case headerSchema:
		return c.schema(header)
	case headerRecordBatch:
		return c.recordBatch(header, body)
	case headerDictionaryBatch:
		data, ok, err := c.subtable(header, 1)
		if err != nil || !ok {
			return fmt.Errorf("dictionary batch without data: %v", err)
		}
		return c.recordBatch(data, body)
	}
	return fmt.Errorf("message type %d is not a schema, record batch or dictionary batch", kind)
}

func (c *fbCheck) keyValues(t fbTable, i int) error {
	return c.tables(t, i, func(kv fbTable) error {
		if err := c.str(kv, 0); err != nil {
			return err
		}
		return c.str(kv, 1)
	})
}

func (c *fbCheck) str(t fbTable, i int) error {
	_, _, err := c.vector(t, i, 1)
	return err
}

func (c *fbCheck) schema(s fbTable) error {
	if err := c.keyValues(s, 2); err != nil {
		return err
	}
	if _, _, err := c.vector(s, 3, 8); err != nil { // features
		return err
	}
	return c.tables(s, 1, func(f fbTable) error { return c.schemaField(f, 1, 0) })
}

// schemaField checks field f, depth types deep, inside maps MAP types.
func (c *fbCheck) schemaField(f fbTable, depth, maps int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("types nested more than %d deep", maxFieldDepth)
	}
	if err := c.str(f, 0); err != nil {
		return err
	}
	typ, _, err := c.scalar(f, 2, 1)
	if err != nil {
		return err
	}
	if typ == typeMap {
		if maps++; maps > engine.MaxMapNesting {
			return fmt.Errorf("MAP types nested more than %d deep", engine.MaxMapNesting)
		}
	}
	if tt, ok, err := c.subtable(f, 3); err != nil {
		return err
	} else if ok {
		switch typ {
		case typeTimestamp:
			err = c.str(tt, 1) // timezone
		case typeUnion:
			_, _, err = c.vector(tt, 1, 4) // type ids
		}
		if err != nil {
			return err
		}
	}
	if dict, ok, err := c.subtable(f, 4); err != nil {
		return err
	} else if ok {
		if _, _, err := c.subtable(dict, 1); err != nil { // index type
			return err
		}
	}
	if err := c.keyValues(f, 6); err != nil {
		return err
	}
	return c.tables(f, 5, func(child fbTable) error { return c.schemaField(child, depth+1, maps) })
}

func (c *fbCheck) recordBatch(rb fbTable, body []byte) error {
	if n, _, err := c.scalar(rb, 0, 8); err != nil {
		return err
	} else if int64(n) < 0 {
		return fmt.Errorf("negative row count")
	}
	start, n, err := c.vector(rb, 1, 16) // FieldNode{length, null_count}
	if err != nil {
		return err
	}
	for k := uint64(0); k < n; k++ {
		p := start + 16*k
		if int64(binary.LittleEndian.Uint64(c.buf[p:])) < 0 || int64(binary.LittleEndian.Uint64(c.buf[p+8:])) < 0 {
			return fmt.Errorf("field node %d has a negative length or null count", k)
		}
	}
	comp, compressed, err := c.subtable(rb, 3)
	if err != nil {
		return err
	}
	if compressed {
		if _, _, err := c.scalar(comp, 0, 1); err != nil {
			return err
		}
	}
	start, nbufs, err := c.vector(rb, 2, 16) // Buffer{offset, length}
	if err != nil {
		return err
	}
	var decompressed uint64
	for k := uint64(0); k < nbufs; k++ {
		p := start + 16*k
		off, length := binary.LittleEndian.Uint64(c.buf[p:]), binary.LittleEndian.Uint64(c.buf[p+8:])
		if off > uint64(len(body)) || length > uint64(len(body))-off {
			return fmt.Errorf("buffer %d (offset %d, length %d) lies outside the %d-byte body", k, int64(off), int64(length), len(body))
		}
		if !compressed || length == 0 {
			continue
		}
		if length < 8 {
			return fmt.Errorf("compressed buffer %d is shorter than its length prefix", k)
		}
		// A compressed buffer starts with its decompressed length (-1:
		// stored uncompressed), which arrow-go allocates before
		// decompressing.
		if n := int64(binary.LittleEndian.Uint64(body[off:])); n != -1 {
			if n < 0 || decompressed+uint64(n) > maxDecompressedBytes {
				return fmt.Errorf("compressed buffers claim more than %d bytes decompressed", maxDecompressedBytes)
			}
			decompressed += uint64(n)
		}
	}
	start, n, err = c.vector(rb, 4, 8) // variadic buffer counts
	if err != nil {
		return err
	}
	for k := uint64(0); k < n; k++ {
		if v := binary.LittleEndian.Uint64(c.buf[start+8*k:]); v > nbufs {
			return fmt.Errorf("variadic buffer count %d exceeds the %d buffers", int64(v), nbufs)
		}
	}
	return nil
}
