package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
)

// IngestMode says what bulk ingest does when the table exists or not.
type IngestMode int

const (
	// IngestCreate creates the table and fails if it exists.
	IngestCreate IngestMode = iota
	// IngestAppend appends and fails if the table does not exist.
	IngestAppend
	// IngestCreateAppend creates the table if needed, then appends.
	IngestCreateAppend
	// IngestReplace replaces the table's contents (and schema) with the input.
	IngestReplace
)

// BatchReader is the stream of batches bulk ingest consumes (what a Flight
// DoPut message reader provides).
type BatchReader interface {
	Schema() *arrow.Schema
	Next() bool
	RecordBatch() arrow.RecordBatch
	Err() error
}

// IngestRequest describes one bulk ingest.
type IngestRequest struct {
	Table     tablestore.Ident // Database "" means the session's database
	Mode      IngestMode
	Temporary bool
	Txn       *Txn // nil: autocommit
}

// Ingest writes a stream of batches into a table and returns the row count.
// The input is checked against the table's schema before anything is
// written, and in autocommit mode all of it is published by one commit, so
// a failed ingest leaves the table as it was. Creating a table, and
// replacing one with a different schema, publish the table with its rows in
// that one commit (tablestore.Store.StageTable): readers see the old table
// or the new one, never an empty or missing table in between.
func (s *Session) Ingest(ctx context.Context, req IngestRequest, rdr BatchReader) (_ int64, err error) {
	defer recoverInternal(&err)
	if req.Txn != nil {
		done, err := req.Txn.start()
		if err != nil {
			return 0, err
		}
		defer done()
	}
	if req.Temporary {
		if req.Table.Database != "" && req.Table.Database != TempDatabase {
			return 0, fmt.Errorf("ingest: a temporary table lives in database %q, not %q: %w", TempDatabase, req.Table.Database, ErrInvalid)
		}
		req.Table.Database = TempDatabase
	}
	if req.Table.Database == "" {
		req.Table.Database = s.Database()
	}
	need := Admin // creates or replaces the table
	if req.Mode == IngestAppend {
		need = Write
	}
	if err := s.allow(req.Table.Database, need); err != nil {
		return 0, err
	}
	if req.Table.Table == "" {
		return 0, fmt.Errorf("ingest: target table name is empty: %w", ErrInvalid)
	}
	store := s.e.store
	t, err := store.Table(ctx, req.Table)
	exists := err == nil
	if err != nil && !errors.Is(err, tablestore.ErrTableNotFound) {
		return 0, err
	}
	if exists && t.Materialized() != nil {
		return 0, fmt.Errorf("ingest: %s is a materialized table; only its refreshes write to it: %w", identString(req.Table), ErrInvalid)
	}
	switch {
	case exists && req.Mode == IngestCreate:
		return 0, fmt.Errorf("ingest: table %s already exists: %w", identString(req.Table), tablestore.ErrTableExists)
	case !exists && req.Mode == IngestAppend:
		if _, verr := store.View(ctx, req.Table); verr == nil {
			// As INSERT INTO a view is refused: InvalidArgument.
			return 0, fmt.Errorf("ingest: %s is a view, not a table; append to a table: %w", identString(req.Table), ErrInvalid)
		}
		return 0, fmt.Errorf("ingest: table %s: %w", identString(req.Table), tablestore.ErrTableNotFound)
	}
	overwrite := req.Mode == IngestReplace
	if fieldIndex(rdr.Schema(), tablestore.RowKindColumn) >= 0 {
		// A changelog (CDC) applies by key to the table as it is.
		switch {
		case !exists || overwrite:
			return 0, fmt.Errorf("ingest: input with a %s column is a changelog, applied by key to an existing table: append it to %s, which must exist with a primary key: %w",
				tablestore.RowKindColumn, identString(req.Table), ErrInvalid)
		case len(t.PrimaryKey()) == 0:
			return 0, fmt.Errorf("ingest: input with a %s column is a changelog, applied by key: table %s has no primary key: %w",
				tablestore.RowKindColumn, identString(req.Table), ErrInvalid)
		}
	}
	stored, err := storedSchema(rdr.Schema())
	if err != nil && (!exists || overwrite) {
		return 0, fmt.Errorf("ingest: table %s: %w", identString(req.Table), err)
	}
	var w *tablestore.Write
	switch {
	case !exists || overwrite && !sameColumns(t.Schema(), stored):
		if !exists && plan.ShadowedName(req.Table.Table) {
			return 0, fmt.Errorf("ingest: table %s cannot be created: queries of that name read a system table: %w", identString(req.Table), ErrInvalid)
		}
		if req.Txn != nil {
			return 0, fmt.Errorf("ingest: creating or replacing table %s with a new schema inside a transaction: %w", identString(req.Table), ErrNotSupported)
		}
		if _, verr := store.View(ctx, req.Table); verr == nil {
			return 0, fmt.Errorf("ingest: %s is a view: %w", identString(req.Table), tablestore.ErrViewExists)
		}
		if w, err = store.StageTable(ctx, req.Table, tablestore.TableDef{Schema: stored}, overwrite); err != nil {
			return 0, err
		}
		t = w.Table()
	case req.Txn != nil:
		if w, err = req.Txn.write(t, tablestore.WriteOptions{Overwrite: overwrite}); err != nil {
			return 0, err
		}
	default:
		w = t.NewWrite(tablestore.WriteOptions{Overwrite: overwrite})
	}
	return s.ingestInto(ctx, w, req, rdr)
}

func (s *Session) ingestInto(ctx context.Context, w *tablestore.Write, req IngestRequest, rdr BatchReader) (int64, error) {
	t := w.Table()
	target := t.Schema()
	in := rdr.Schema()
	kindCol := fieldIndex(in, tablestore.RowKindColumn)
	if kindCol >= 0 {
		in = arrow.NewSchema(slices.Delete(slices.Clone(in.Fields()), kindCol, kindCol+1), nil)
	}
	if err := checkIngestSchema(t.Ident(), target, in); err != nil {
		if req.Txn == nil {
			w.Abort() // nothing is buffered in a transaction's write yet
		}
		return 0, err
	}
	var n int64
	var kinds []tablestore.RowKind
	for rdr.Next() {
		in := rdr.RecordBatch()
		if in.NumRows() == 0 {
			continue
		}
		var err error
		if kinds, err = s.rowKinds(ctx, in, kindCol, n, kinds); err != nil {
			return 0, s.abortIngest(req, w, err)
		}
		b, err := conform(ctx, s.e, target, in)
		if err != nil && n > 0 {
			// Its rows are numbered from the batch's first.
			err = fmt.Errorf("in the batch starting at input row %d: %w", n, err)
		}
		if err == nil {
			err = w.WriteKinds(ctx, b, kinds)
			b.Release()
		}
		if err != nil {
			return 0, s.abortIngest(req, w, err)
		}
		n += in.NumRows()
	}
	if err := rdr.Err(); err != nil {
		return 0, s.abortIngest(req, w, fmt.Errorf("ingest: reading input stream: %w", err))
	}
	if req.Txn != nil {
		return n, nil
	}
	if _, err := w.Commit(ctx); err != nil {
		return 0, err
	}
	return n, nil
}

// rowKinds reads the row kinds of a batch from its column kindCol (a
// changelog: "+I", "-U", "+U", "-D"), or makes every row an insert when
// kindCol is -1. before is the number of rows ingested before the batch,
// for error messages; kinds is reused.
func (s *Session) rowKinds(ctx context.Context, b arrow.RecordBatch, kindCol int, before int64, kinds []tablestore.RowKind) ([]tablestore.RowKind, error) {
	kinds = kinds[:0]
	n := int(b.NumRows())
	if kindCol < 0 {
		for range n {
			kinds = append(kinds, tablestore.Insert)
		}
		return kinds, nil
	}
	col, err := convertColumn(ctx, s.e.cfg.Mem, b.Column(kindCol), arrow.BinaryTypes.String)
	if err != nil {
		return nil, fmt.Errorf("ingest: column %s: %w", tablestore.RowKindColumn, err)
	}
	defer col.Release()
	strs, ok := col.(*array.String)
	if !ok {
		return nil, fmt.Errorf("ingest: column %s must be a string column, got %s: %w", tablestore.RowKindColumn, b.Column(kindCol).DataType(), ErrInvalid)
	}
	for i := range n {
		k, ok := tablestore.ParseRowKind(strs.Value(i))
		if strs.IsNull(i) || !ok {
			return nil, fmt.Errorf("ingest: row %d: %s is %q; a changelog row is +I, -U, +U or -D: %w", before+int64(i)+1, tablestore.RowKindColumn, strs.Value(i), ErrInvalid)
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

func (s *Session) abortIngest(req IngestRequest, w *tablestore.Write, err error) error {
	if req.Txn != nil {
		req.Txn.fail(err)
	} else {
		w.Abort()
	}
	return err
}

// checkIngestSchema accepts input whose columns are a subset of the
// table's, matched by name (case-insensitively) with types convertible to
// the table's; table columns left out must be nullable. Input of no
// columns carries nothing but a row count: appended, it made that many
// rows of NULLs.
func checkIngestSchema(id tablestore.Ident, table, in *arrow.Schema) error {
	if in.NumFields() == 0 {
		return fmt.Errorf("ingest into %s: the input has no columns: %w", identString(id), ErrInvalid)
	}
	seen := make(map[int]bool, in.NumFields())
	byName := foldIndex(table)
	for _, f := range in.Fields() {
		i, ok := byName[foldKey(f.Name)]
		if !ok {
			return fmt.Errorf("ingest into %s: column %q does not exist in the table: %w", identString(id), f.Name, ErrInvalid)
		}
		if seen[i] {
			return fmt.Errorf("ingest into %s: column %q given twice: %w", identString(id), f.Name, ErrInvalid)
		}
		seen[i] = true
		if want := table.Field(i).Type; !convertible(f.Type, want) {
			return fmt.Errorf("ingest into %s: column %q has type %s, the table has %s: %w", identString(id), f.Name, f.Type, want, ErrInvalid)
		}
	}
	for i, f := range table.Fields() {
		if !seen[i] && !f.Nullable {
			return fmt.Errorf("ingest into %s: NOT NULL column %q is missing from the input: %w", identString(id), f.Name, ErrInvalid)
		}
	}
	return nil
}

// conform returns in rearranged to the table's column order and types, with
// NULL columns for the ones the input leaves out. The caller releases it.
func conform(ctx context.Context, e *Engine, table *arrow.Schema, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, table.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	byName := foldIndex(in.Schema())
	for i, f := range table.Fields() {
		j, ok := byName[foldKey(f.Name)]
		if !ok {
			cols[i] = array.MakeArrayOfNull(e.cfg.Mem, f.Type, int(in.NumRows()))
			continue
		}
		c := in.Column(j)
		if !f.Nullable && c.NullN() > 0 {
			return nil, fmt.Errorf("%w: ingest: column %q cannot hold NULL, and the input has %d", tablestore.ErrNotNull, f.Name, c.NullN())
		}
		var err error
		if cols[i], err = convertColumn(ctx, e.cfg.Mem, c, f.Type); err != nil {
			return nil, fmt.Errorf("ingest: column %q: %w", f.Name, err)
		}
	}
	return array.NewRecordBatch(table, cols, in.NumRows()), nil
}

// fieldIndex is the first column of s named name, ignoring case (-1 if
// none). It reads s.Field(i): s.Fields() copies every field, and matching
// the columns of a wide input one by one that way cost 20,000 columns 70 s.
func fieldIndex(s *arrow.Schema, name string) int {
	for i := range s.NumFields() {
		if strings.EqualFold(s.Field(i).Name, name) {
			return i
		}
	}
	return -1
}

// foldIndex maps each column name of s, by foldKey, to its first column,
// so matching the columns of two schemas costs linear time.
func foldIndex(s *arrow.Schema) map[string]int {
	m := make(map[string]int, s.NumFields())
	for i := range s.NumFields() {
		k := foldKey(s.Field(i).Name)
		if _, ok := m[k]; !ok {
			m[k] = i
		}
	}
	return m
}

// foldKey maps each rune of name to the smallest rune of its simple case
// folding orbit, so two names have one key exactly when strings.EqualFold
// calls them equal.
func foldKey(name string) string {
	return strings.Map(func(r rune) rune {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		return m
	}, name)
}

func sameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i, f := range a.Fields() {
		g := b.Field(i)
		if !strings.EqualFold(f.Name, g.Name) || !arrow.TypeEqual(f.Type, g.Type) {
			return false
		}
	}
	return true
}
