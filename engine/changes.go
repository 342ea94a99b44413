package engine

import (
	"context"
	"fmt"
	"strconv"

	"github.com/flightd/flightd/sql"
)

// ChangeRequest asks for a table's change stream as fields, not SQL text:
// PrepareChanges builds the streaming query's syntax tree from them, so no
// field can change the statement's shape (a filter cannot close its
// parenthesis, a name cannot end the hint). The query is the one a client
// would write:
//
//	SELECT columns FROM table /*+ OPTIONS('scan.mode'=Mode, ...) */ WHERE filter
type ChangeRequest struct {
	// Table is the table's name as in a FROM clause: [table] (in the
	// session's database), [database, table] or [catalog, database, table].
	Table []string
	// Columns are the columns to send, in order; none means all.
	Columns []string
	// Filter is a boolean SQL expression over the table's columns; ""
	// means every change.
	Filter string
	// Mode is a scan.mode: latest, latest-full, from-snapshot,
	// from-snapshot-full or from-timestamp; "" means latest-full.
	Mode string
	// Where the stream starts (scan.snapshot-id, scan.tag-name,
	// scan.timestamp-millis) and ends (scan.bounded.snapshot-id); zero
	// values are not given.
	SnapshotID, TimestampMillis, EndSnapshotID int64
	Tag                                        string
	// ConsumerID resumes from, and keeps, a named consumer's position.
	ConsumerID string
	// HeartbeatMillis and DiscoveryMillis, if not zero, set
	// stream.heartbeat-interval and continuous.discovery-interval.
	HeartbeatMillis, DiscoveryMillis int64
}

// DefaultChangeMode is the scan.mode of a ChangeRequest without one.
const DefaultChangeMode = "latest-full"

// PrepareChanges prepares the streaming query req stands for in session s,
// as Prepare would its SQL text: the same binding, checks and errors.
func (s *Session) PrepareChanges(ctx context.Context, req ChangeRequest) (*Statement, error) {
	ast, err := req.query()
	if err != nil {
		return nil, err
	}
	return s.PrepareAST(ctx, ast, nil)
}

func (req ChangeRequest) query() (*sql.Query, error) {
	if len(req.Table) == 0 {
		return nil, fmt.Errorf("change stream: table is missing: %w", ErrInvalid)
	}
	for i, p := range req.Table {
		if p == "" {
			return nil, fmt.Errorf("change stream: part %d of table name %q is empty: %w", i+1, req.Table, ErrInvalid)
		}
	}
	start := sql.Pos{Line: 1, Col: 1}
	sel := selectFrom(req.Table, req.Columns)
	mode := req.Mode
	if mode == "" {
		mode = DefaultChangeMode
	}
	opts := []*sql.Property{{Pos: start, Key: "scan.mode", Value: mode}}
	add := func(k, v string) { opts = append(opts, &sql.Property{Pos: start, Key: k, Value: v}) }
	addInt := func(k string, v int64, unit string) {
		if v != 0 {
			add(k, strconv.FormatInt(v, 10)+unit)
		}
	}
	addInt("scan.snapshot-id", req.SnapshotID, "")
	addInt("scan.timestamp-millis", req.TimestampMillis, "")
	addInt("scan.bounded.snapshot-id", req.EndSnapshotID, "")
	if req.Tag != "" {
		add("scan.tag-name", req.Tag)
	}
	if req.ConsumerID != "" {
		add("consumer-id", req.ConsumerID)
	}
	addInt("stream.heartbeat-interval", req.HeartbeatMillis, "ms")
	addInt("continuous.discovery-interval", req.DiscoveryMillis, "ms")
	sel.From[0].(*sql.TableName).Hints = []*sql.Hint{{Pos: start, Name: "OPTIONS", Options: opts}}
	if req.Filter != "" {
		where, err := sql.ParseExpr(req.Filter)
		if err != nil {
			return nil, fmt.Errorf("%w: filter: %w", ErrInvalid, err)
		}
		sel.Where = where
	}
	return &sql.Query{Pos: start, Body: sel}, nil
}

// selectFrom is SELECT columns (none: *) FROM table, as a syntax tree.
func selectFrom(table, columns []string) *sql.Select {
	start := sql.Pos{Line: 1, Col: 1}
	sel := &sql.Select{Pos: start, From: []sql.TableRef{&sql.TableName{Pos: start, Name: &sql.Name{Pos: start, Parts: table}}}}
	if len(columns) == 0 {
		sel.Items = []*sql.SelectItem{{Pos: start, Expr: &sql.Star{Pos: start}}}
	}
	for _, c := range columns {
		sel.Items = append(sel.Items, &sql.SelectItem{Pos: start, Expr: &sql.Ident{Pos: start, Parts: []string{c}}})
	}
	return sel
}

// ResetConsumer moves a change stream consumer of a table ("table" in the
// session's database, or "db.table") to start at snapshot next (0 removes
// it), as CALL sys.reset_consumer(table, consumer, next) does, with its
// checks.
func (s *Session) ResetConsumer(ctx context.Context, table, consumer string, next int64) error {
	if next < 0 {
		return fmt.Errorf("consumer %q: next snapshot %d is negative: %w", consumer, next, ErrInvalid)
	}
	pos := sql.Pos{Line: 1, Col: 1}
	lit := func(k sql.LitKind, v string) *sql.CallArg {
		return &sql.CallArg{Pos: pos, Value: &sql.Literal{Pos: pos, Kind: k, Value: v}}
	}
	call := &sql.Call{Pos: pos, Name: &sql.Name{Pos: pos, Parts: []string{"sys", "reset_consumer"}},
		Args: []*sql.CallArg{lit(sql.LitString, table), lit(sql.LitString, consumer), lit(sql.LitNumber, strconv.FormatInt(next, 10))}}
	st, err := s.PrepareAST(ctx, call, nil)
	if err != nil {
		return err
	}
	_, err = st.Exec(ctx, nil)
	return err
}
