package flightsql

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
)

// Change streams. A table's changelog is read with a streaming query (a
// table hint with 'scan.mode') through the usual Flight SQL calls, or with a
// DoGet whose ticket is ChangesTicketPrefix followed by a ChangesTicket in
// JSON, for plain Flight clients. The stream does not end on its own.
//
// Every batch carries app metadata {"snapshot": N}: its rows are changes of
// snapshot N, and the batches of one snapshot are contiguous. A batch with
// no rows and {"snapshot": N, "caught_up": true} says every change up to
// snapshot N has been sent; it comes when the stream catches up and then at
// each heartbeat while no commit arrives (keep-alive). A query that joins
// several streams adds "snapshots": {"db.t": N, ...}, the position of each.
//
// A *-full start first reads the content of snapshot N: a batch with no
// rows and {"snapshot": N, "image": "start"}, then batches of +I rows with
// {"snapshot": N, "image": "rows"}, then {"snapshot": N, "image": "end"}
// with no rows. A client drops its state at "start": a stream that starts
// again from a full read (no committed consumer position) does not send
// the deletes of the rows that went meanwhile.
//
// Consumers: with a consumer id the stream resumes from the consumer's
// position, which only the CommitConsumerAction moves. The delivery is
// at-least-once from that position; a client that records the last snapshot
// it applied completely and skips batches of snapshots up to it gets each
// change applied exactly once.

// ChangesTicketPrefix starts a change stream ticket.
const ChangesTicketPrefix = "flightd/changes1:"

// ChangesTicket names a table and where its change stream starts.
type ChangesTicket struct {
	// Table is "table" (in database Database, default "default") or "db.table".
	Table    string `json:"table"`
	Database string `json:"database,omitempty"`
	// Mode is a scan.mode: latest, latest-full, from-snapshot,
	// from-snapshot-full or from-timestamp (default latest-full).
	Mode       string `json:"mode,omitempty"`
	SnapshotID int64  `json:"snapshot_id,omitempty"`
	// Tag names the start snapshot instead of SnapshotID.
	Tag             string   `json:"tag,omitempty"`
	TimestampMillis int64    `json:"timestamp_millis,omitempty"`
	Columns         []string `json:"columns,omitempty"`
	// Filter is a SQL boolean expression over the table's columns.
	Filter            string `json:"filter,omitempty"`
	ConsumerID        string `json:"consumer_id,omitempty"`
	EndSnapshotID     int64  `json:"end_snapshot_id,omitempty"`
	HeartbeatMillis   int64  `json:"heartbeat_millis,omitempty"`
	DiscoveryInterval int64  `json:"discovery_interval_millis,omitempty"`
}

// request is the engine's change request the ticket stands for: "db.t"
// names a table of database db, and Database, if set, comes before it.
func (t ChangesTicket) request() (engine.ChangeRequest, error) {
	if strings.TrimSpace(t.Table) == "" {
		return engine.ChangeRequest{}, fmt.Errorf("change stream ticket: table is missing: %w", errBadRequest)
	}
	name := strings.Split(t.Table, ".")
	if t.Database != "" {
		name = append([]string{t.Database}, name...)
	}
	return engine.ChangeRequest{
		Table: name, Columns: t.Columns, Filter: t.Filter,
		Mode: t.Mode, SnapshotID: t.SnapshotID, Tag: t.Tag, TimestampMillis: t.TimestampMillis, EndSnapshotID: t.EndSnapshotID,
		ConsumerID: t.ConsumerID, HeartbeatMillis: t.HeartbeatMillis, DiscoveryMillis: t.DiscoveryInterval,
	}, nil
}

// decodeOne decodes the one JSON value dec reads into v, refusing anything
// but white space after it: `{...}garbage` is a malformed ticket, not the
// {...} it starts with.
func decodeOne(dec *json.Decoder, v any) error {
	if err := dec.Decode(v); err != nil {
		return err
	}
	at := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON value, which ends at byte %d", at)
	}
	return nil
}

// doGetChanges serves a change stream ticket.
func (s *Server) doGetChanges(ctx context.Context, ticket []byte) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var t ChangesTicket
	dec := json.NewDecoder(bytes.NewReader(ticket[len(ChangesTicketPrefix):]))
	dec.DisallowUnknownFields()
	if err := decodeOne(dec, &t); err != nil {
		return nil, nil, toStatus(fmt.Errorf("malformed change stream ticket: %v: %w", err, errBadRequest))
	}
	req, err := t.request()
	if err != nil {
		return nil, nil, toStatus(err)
	}
	// The filter is the only SQL text in a ticket: bounded as a statement is.
	if _, err := engine.CheckSize(t.Filter, s.limits.MaxStatementBytes, s.limits.MaxStatementTokens); err != nil {
		return nil, nil, toStatus(fmt.Errorf("change stream ticket: filter: %w", err))
	}
	sess, err := s.session(ctx)
	if err != nil {
		return nil, nil, toStatus(err)
	}
	st, err := sess.PrepareChanges(ctx, req)
	if err != nil {
		return nil, nil, toStatus(fmt.Errorf("change stream ticket: %w", err))
	}
	return s.stream(ctx, ticket, st, nil)
}

// streamProgress sends a streaming query's progress markers into its
// result channel and labels its batches with their snapshot.
type streamProgress struct {
	ctx      context.Context
	ch       chan<- flight.StreamChunk
	mem      memory.Allocator
	empties  *emptyBatches
	schema   *arrow.Schema
	snapshot int64
	image    bool
	tables   map[string]int64 // for a query over several streams
	// watermark and late are the event time progress of the next
	// progress marker (plan.EventTimeObserver).
	watermark time.Time
	late      int64
}

func (p *streamProgress) Rows(snapshot int64, image bool) { p.snapshot, p.image = snapshot, image }

// Snapshots records the position of every table of a join of streams.
func (p *streamProgress) Snapshots(tables []string, snapshots []int64) {
	p.tables = make(map[string]int64, len(tables))
	for i, t := range tables {
		p.tables[t] = snapshots[i]
	}
}

func (p *streamProgress) EventTime(watermark time.Time, lateRows int64) {
	p.watermark, p.late = watermark, lateRows
}

func (p *streamProgress) CaughtUp(snapshot int64) error {
	m := ChangeProgress{Snapshot: snapshot, CaughtUp: true, LateRows: p.late}
	if !p.watermark.IsZero() {
		m.Watermark = p.watermark.UTC().Format(time.RFC3339Nano)
	}
	return p.marker(m)
}

func (p *streamProgress) Image(snapshot int64, start bool) error {
	m := ChangeProgress{Snapshot: snapshot, Image: ImageEnd}
	if start {
		m.Image = ImageStart
	}
	return p.marker(m)
}

// marker sends a batch without rows labelled m.
func (p *streamProgress) marker(m ChangeProgress) error {
	b := p.empties.get(p.mem, p.schema)
	m.Snapshots = p.tables
	meta, _ := json.Marshal(m)
	select {
	case p.ch <- flight.StreamChunk{Data: b, AppMetadata: meta}:
		return nil
	case <-p.ctx.Done():
		b.Release()
		return p.ctx.Err()
	}
}

// meta labels the batch about to be sent.
func (p *streamProgress) meta() []byte {
	m := ChangeProgress{Snapshot: p.snapshot, Snapshots: p.tables}
	if p.image {
		m.Image = ImageRows
	}
	b, _ := json.Marshal(m)
	return b
}

// Values of ChangeProgress.Image.
const (
	ImageStart = "start"
	ImageRows  = "rows"
	ImageEnd   = "end"
)

// ChangeProgress is the app metadata of every change stream batch.
type ChangeProgress struct {
	// Snapshot: the batch's rows are changes of this snapshot; for a
	// progress marker, every change up to it has been sent.
	Snapshot int64 `json:"snapshot"`
	// CaughtUp marks a progress marker (a batch without rows).
	CaughtUp bool `json:"caught_up,omitempty"`
	// Image is set during the full read of snapshot Snapshot: ImageStart
	// and ImageEnd on batches without rows around it, ImageRows on its
	// rows (of a query over one stream; aggregates label their rows by
	// snapshot only).
	Image string `json:"image,omitempty"`
	// Snapshots, for a query that streams several tables (a join), gives
	// the snapshot of each (by its name in the query, "db.table [AS
	// alias]"); Snapshot is then the largest of them.
	Snapshots map[string]int64 `json:"snapshots,omitempty"`
	// Watermark, on the progress markers of a query with event time (a
	// window aggregation or an interval join), is its watermark (RFC 3339,
	// UTC): the windows ending at or before it have been emitted. LateRows
	// counts the input rows it dropped as late since it started.
	Watermark string `json:"watermark,omitempty"`
	LateRows  int64  `json:"late_rows,omitempty"`
}

// ParseChangeProgress decodes a change stream batch's app metadata.
func ParseChangeProgress(meta []byte) (ChangeProgress, error) {
	var p ChangeProgress
	if err := json.Unmarshal(meta, &p); err != nil {
		return p, fmt.Errorf("change stream batch metadata %q: %w", meta, err)
	}
	return p, nil
}

// CommitConsumerAction records a consumer's position: the body is a
// CommitConsumerRequest in JSON; the stream of that consumer resumes at
// NextSnapshot, and expiry keeps that snapshot and later ones.
const CommitConsumerAction = "flightd.CommitConsumer"

// CommitConsumerRequest is the body of CommitConsumerAction.
type CommitConsumerRequest struct {
	Table        string `json:"table"` // "table" in the session's database, or "db.table"
	ConsumerID   string `json:"consumer_id"`
	NextSnapshot int64  `json:"next_snapshot"`
}

func (s *Server) commitConsumer(ctx context.Context, body []byte) error {
	var req CommitConsumerRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := decodeOne(dec, &req); err != nil {
		return fmt.Errorf("%s: malformed request: %v: %w", CommitConsumerAction, err, errBadRequest)
	}
	if req.NextSnapshot < 1 {
		// CALL without a snapshot would remove the consumer.
		return fmt.Errorf("%s: next snapshot must be positive, got %d: %w", CommitConsumerAction, req.NextSnapshot, errBadRequest)
	}
	// The same as SQL's CALL sys.reset_consumer, which resolves the table
	// name in the session's database.
	sess, err := s.session(ctx)
	if err != nil {
		return err
	}
	if err := sess.ResetConsumer(ctx, req.Table, req.ConsumerID, req.NextSnapshot); err != nil {
		return fmt.Errorf("%s: %w", CommitConsumerAction, err)
	}
	return nil
}
