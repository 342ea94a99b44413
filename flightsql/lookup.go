package flightsql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/flightd/flightd/engine"
)

// Lookups: rows of a primary-key table by key (engine.Lookup).
//
// DoExchange: the first message's FlightDescriptor is a CMD holding a
// LookupCommand in JSON (or a PATH naming the table); the client then
// streams batches of key columns (the primary key, in order; any Arrow
// variant of their types), and the server answers each batch, in order,
// with one batch of the same length: the requested columns (NULLs for a
// missing key) and a boolean "found", with app metadata {"snapshot": N},
// the snapshot read. Up to lookupDepth batches are looked
// up at once; beyond that the server stops reading (backpressure).
//
// DoGet of LookupTicketPrefix followed by a LookupTicket in JSON answers
// the keys of the ticket the same way, for clients without DoExchange.

// LookupTicketPrefix starts a lookup ticket.
const LookupTicketPrefix = "flightd/lookup1:"

// lookupDepth bounds the batches of one exchange being looked up.
const lookupDepth = 8

// LookupCommand names the table of a lookup.
type LookupCommand struct {
	// Table is "table" (in database Database, default the session's) or
	// "db.table".
	Table    string `json:"table"`
	Database string `json:"database,omitempty"`
	// Columns to return, in order (default all).
	Columns []string `json:"columns,omitempty"`
	// SnapshotID pins a snapshot (default the latest).
	SnapshotID int64 `json:"snapshot_id,omitempty"`
	// Options are lookup.* options, e.g. "lookup.cache": "NONE".
	Options map[string]string `json:"options,omitempty"`
}

// LookupTicket is a LookupCommand with its keys: one JSON array of key
// values per key, in primary-key order (numbers, strings as SQL literals
// of the column's type, null).
type LookupTicket struct {
	LookupCommand
	Keys [][]any `json:"keys"`
}

func (c LookupCommand) request() (engine.LookupRequest, error) {
	if strings.TrimSpace(c.Table) == "" {
		return engine.LookupRequest{}, fmt.Errorf("lookup: table is missing: %w", errBadRequest)
	}
	name := strings.Split(c.Table, ".")
	if c.Database != "" {
		name = append([]string{c.Database}, name...)
	}
	return engine.LookupRequest{Table: name, Columns: c.Columns, SnapshotID: c.SnapshotID, Options: c.Options}, nil
}

// decodeLookup decodes a lookup command or ticket strictly (numbers kept
// exact).
func decodeLookup(what string, data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := decodeOne(dec, v); err != nil {
		return fmt.Errorf("malformed lookup %s: %v: %w", what, err, errBadRequest)
	}
	return nil
}

// openLookup opens the lookup req in the caller's session.
func (s *Server) openLookup(ctx context.Context, cmd LookupCommand) (*engine.Lookup, error) {
	req, err := cmd.request()
	if err != nil {
		return nil, err
	}
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	return sess.OpenLookup(ctx, req)
}

// doGetLookup serves a lookup ticket.
func (s *Server) doGetLookup(ctx context.Context, ticket []byte, stream flight.FlightService_DoGetServer) error {
	var t LookupTicket
	if err := decodeLookup("ticket", ticket[len(LookupTicketPrefix):], &t); err != nil {
		return err
	}
	l, err := s.openLookup(ctx, t.LookupCommand)
	if err != nil {
		return err
	}
	defer l.Close()
	keys, err := l.KeyBatch(t.Keys)
	if err != nil {
		return err
	}
	defer keys.Release()
	out, snap, err := l.Do(ctx, keys)
	if err != nil {
		return err
	}
	defer out.Release()
	codec, err := compression(stream)
	if err != nil {
		return err
	}
	wr := flight.NewRecordWriter(stream, writeOptions(codec, l.Schema())...)
	defer wr.Close()
	return wr.WriteWithAppMetadata(out, snapshotMetadata(snap))
}

// snapshotMetadata labels a lookup result with the snapshot it read.
func snapshotMetadata(snap int64) []byte {
	return []byte(fmt.Sprintf(`{"snapshot":%d}`, snap))
}

// DoExchange serves lookups (the only exchange flightd offers).
func (f *flightService) DoExchange(stream flight.FlightService_DoExchangeServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	return toStatus(f.s.exchangeLookups(ctx, cancel, stream))
}

type pendingLookup struct {
	out  arrow.RecordBatch
	snap int64
	err  error
	done chan struct{}
}

// exchangeLookups runs a lookup exchange; cancel stops its lookups.
func (s *Server) exchangeLookups(ctx context.Context, cancel context.CancelFunc, stream flight.FlightService_DoExchangeServer) error {
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(s.mem))
	if err != nil {
		return fmt.Errorf("DoExchange: the first message must carry a FlightDescriptor naming the table and the schema of the keys: %v: %w", err, errBadRequest)
	}
	var cmd LookupCommand
	desc := rdr.LatestFlightDescriptor()
	switch {
	case desc == nil:
		rdr.Release()
		return fmt.Errorf("DoExchange: the first message carries no FlightDescriptor: %w", errBadRequest)
	case desc.GetType() == flight.DescriptorPATH:
		cmd.Table = strings.Join(desc.GetPath(), ".")
	default:
		if err := decodeLookup("command", desc.GetCmd(), &cmd); err != nil {
			rdr.Release()
			return err
		}
	}
	l, err := s.openLookup(ctx, cmd)
	if err != nil {
		rdr.Release()
		return err
	}
	defer l.Close()
	if err := checkKeySchema(rdr.Schema(), l.KeySchema()); err != nil {
		rdr.Release()
		return err
	}
	wr := flight.NewRecordWriter(stream, ipc.WithSchema(l.Schema()), ipc.WithAllocator(s.mem))
	defer wr.Close()
	// The reader hands batches, in order, to lookups running concurrently;
	// the queue holds their results in input order and bounds them.
	queue := make(chan *pendingLookup, lookupDepth)
	readErr := make(chan error, 1)
	go func() {
		defer rdr.Release()
		defer close(queue)
		for rdr.Next() {
			in := rdr.RecordBatch()
			in.Retain()
			p := &pendingLookup{done: make(chan struct{})}
			select {
			case queue <- p:
			case <-ctx.Done():
				in.Release()
				readErr <- ctx.Err()
				return
			}
			go func() {
				defer close(p.done)
				defer in.Release()
				p.out, p.snap, p.err = l.Do(ctx, in)
			}()
		}
		if err := rdr.Err(); err != nil && !errors.Is(err, context.Canceled) {
			readErr <- fmt.Errorf("DoExchange: reading keys: %v: %w", err, errBadRequest)
		}
	}()
	var failed error
	for p := range queue {
		<-p.done
		if failed == nil && p.err != nil {
			failed = p.err
		}
		if p.out != nil {
			if failed == nil {
				failed = wr.WriteWithAppMetadata(p.out, snapshotMetadata(p.snap))
			}
			p.out.Release()
		}
		if failed != nil {
			// The reader ends when the call does (its Recv fails): drain
			// what it queued without waiting for it here.
			cancel()
			go drainLookups(queue)
			return failed
		}
	}
	select {
	case err := <-readErr:
		return err
	default:
		return nil
	}
}

func checkKeySchema(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		names := make([]string, want.NumFields())
		for i, f := range want.Fields() {
			names[i] = f.Name + " " + f.Type.String()
		}
		return fmt.Errorf("lookup: the keys have %d columns, the primary key has %d (%s): %w", got.NumFields(), want.NumFields(), strings.Join(names, ", "), errBadRequest)
	}
	return nil
}

func drainLookups(queue <-chan *pendingLookup) {
	for p := range queue {
		<-p.done
		if p.out != nil {
			p.out.Release()
		}
	}
}
