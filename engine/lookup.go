package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/lookup"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
)

// LookupRequest names a batched point lookup: rows of a primary-key table
// by key (package lookup).
type LookupRequest struct {
	// Table is the table's name as in a FROM clause: [table] (in the
	// session's database), [database, table] or [catalog, database, table].
	Table []string
	// Columns are the columns to return, in order; none means all.
	Columns []string
	// SnapshotID pins a snapshot; 0 reads the latest (read-your-writes).
	SnapshotID int64
	// Options are lookup.* options for this request, over the table's.
	Options map[string]string
}

// Lookup is an open lookup of one table, for one client stream. Do may be
// called concurrently.
type Lookup struct {
	e     *Engine
	entry *lookupEntry
	req   lookup.Request
	keys  *arrow.Schema
	out   *arrow.Schema
	once  sync.Once
}

// lookupEntry is an index shared by the lookups of one table version and
// option set; refs counts the open Lookups using it.
type lookupEntry struct {
	x       *lookup.Index
	refs    int
	gone    bool   // replaced in the registry: closed when refs drops to 0
	lastUse uint64 // lookups.clock when last opened
}

// lookups is the engine's registry of indexes.
type lookups struct {
	mu    sync.Mutex
	m     map[string]*lookupEntry
	clock uint64
}

// maxLookupIndexes bounds the registry: an index per table version and
// option set, and per-request options make new sets at will (3,000 option
// sets held 240 MB). Past it the least recently used unused index is
// closed; when all are in use, a new one is refused.
const maxLookupIndexes = 64

// OpenLookup checks req (read permission on the table's database first, as
// for a query) and opens a lookup of the table. The caller closes it.
func (s *Session) OpenLookup(ctx context.Context, req LookupRequest) (*Lookup, error) {
	id, err := s.lookupTable(req.Table)
	if err != nil {
		return nil, err
	}
	if err := s.allow(id.Database, Read); err != nil {
		return nil, err
	}
	t, err := s.e.store.Table(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(t.PrimaryKey()) == 0 {
		return nil, fmt.Errorf("lookup: table %s has no primary key; lookups need one: %w", id, ErrInvalid)
	}
	opts, err := lookup.ParseOptions(t.Options(), req.Options)
	if err != nil {
		return nil, fmt.Errorf("lookup on %s: %w", id, err)
	}
	if err := tablestore.CheckColumnCount("a lookup's column list", len(req.Columns)); err != nil {
		return nil, fmt.Errorf("lookup on %s: %w", id, err)
	}
	schema := t.Schema()
	var cols []int
	for _, c := range req.Columns {
		i := schema.FieldIndices(c)
		if len(i) == 0 {
			return nil, fmt.Errorf("lookup: table %s has no column %q: %w", id, c, ErrInvalid)
		}
		cols = append(cols, i[0])
	}
	entry, err := s.e.lookupIndex(ctx, t, opts)
	if err != nil {
		return nil, err
	}
	keyFields := make([]arrow.Field, 0, len(t.PrimaryKey()))
	for _, k := range t.PrimaryKey() {
		keyFields = append(keyFields, schema.Field(schema.FieldIndices(k)[0]))
	}
	return &Lookup{
		e: s.e, entry: entry,
		// An answer is bounded as a statement's working memory is.
		req:  lookup.Request{Columns: cols, SnapshotID: req.SnapshotID, MaxBytes: s.e.cfg.QueryMemory},
		keys: arrow.NewSchema(keyFields, nil),
		out:  entry.x.OutputSchema(cols),
	}, nil
}

var _ plan.LookupCatalog = (*catalog)(nil)

// LookupIndex gives the planner the shared index of t with t's lookup
// options, for queries that read keys (plan.LookupScan).
func (c *catalog) LookupIndex(ctx context.Context, t *tablestore.Table) (*lookup.Index, func(), error) {
	c.opaque = true
	opts, err := lookup.ParseOptions(t.Options(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("lookup on %s: %w", t.Ident(), err)
	}
	entry, err := c.s.e.lookupIndex(ctx, t.WithPin(nil), opts) // the index outlives the statement and its snapshot pin
	if err != nil {
		return nil, nil, err
	}
	e := c.s.e
	var once sync.Once
	return entry.x, func() {
		once.Do(func() { e.releaseLookup(entry) })
	}, nil
}

// lookupTable resolves a table name in the session's database.
func (s *Session) lookupTable(name []string) (Ident, error) {
	for i, p := range name {
		if p == "" {
			return Ident{}, fmt.Errorf("lookup: part %d of table name %q is empty: %w", i+1, name, ErrInvalid)
		}
	}
	switch len(name) {
	case 1:
		return Ident{Database: s.Database(), Table: name[0]}, nil
	case 2:
		return Ident{Database: name[0], Table: name[1]}, nil
	case 3:
		if name[0] != CatalogName {
			return Ident{}, fmt.Errorf("lookup: catalog %q does not exist (flightd serves %q): %w", name[0], CatalogName, tablestore.ErrDatabaseNotFound)
		}
		return Ident{Database: name[1], Table: name[2]}, nil
	}
	return Ident{}, fmt.Errorf("lookup: table name %q: want table, database.table or catalog.database.table: %w", name, ErrInvalid)
}

// lookupIndex returns the shared index of t's version with opts, opening
// it on first use; one of an older version of the table is retired.
func (e *Engine) lookupIndex(ctx context.Context, t *tablestore.Table, opts lookup.Options) (*lookupEntry, error) {
	key := fmt.Sprintf("%s\x00%+v", t.Ident(), opts)
	e.lookups.mu.Lock()
	defer e.lookups.mu.Unlock()
	if e.lookups.m == nil {
		e.lookups.m = map[string]*lookupEntry{}
	}
	if en := e.lookups.m[key]; en != nil {
		if en.x.Table().SameVersion(t) {
			en.refs++
			e.lookups.touch(en)
			return en, nil
		}
		en.gone = true
		delete(e.lookups.m, key)
		en.closeIfUnused()
	}
	if len(e.lookups.m) >= maxLookupIndexes && !e.lookups.evictUnused() {
		return nil, NewError(KindExhausted, fmt.Sprintf("lookup on %s: %d lookup indexes (tables and option sets) are in use at once", t.Ident(), maxLookupIndexes))
	}
	x, err := lookup.Open(ctx, t, e.cfg.Mem, opts, e.lookupBudget)
	if err != nil {
		return nil, err
	}
	en := &lookupEntry{x: x, refs: 1}
	e.lookups.m[key] = en
	e.lookups.touch(en)
	return en, nil
}

func (l *lookups) touch(en *lookupEntry) {
	l.clock++
	en.lastUse = l.clock
}

// evictUnused closes the least recently used index no lookup holds and
// reports whether there was one.
func (l *lookups) evictUnused() bool {
	var victim string
	for k, en := range l.m {
		if en.refs == 0 && (victim == "" || en.lastUse < l.m[victim].lastUse) {
			victim = k
		}
	}
	if victim == "" {
		return false
	}
	en := l.m[victim]
	delete(l.m, victim)
	en.gone = true
	en.closeIfUnused()
	return true
}

func (en *lookupEntry) closeIfUnused() {
	if en.gone && en.refs == 0 {
		en.x.Close()
	}
}

// closeLookups closes every index (Engine.Close).
func (e *Engine) closeLookups() {
	e.lookups.mu.Lock()
	defer e.lookups.mu.Unlock()
	for _, en := range e.lookups.m {
		en.x.Close()
	}
	e.lookups.m = nil
}

// KeySchema is the schema of the keys Do takes: the primary-key columns in
// order (batches may use other names and any Arrow variant of the types).
func (l *Lookup) KeySchema() *arrow.Schema { return l.keys }

// Schema is the schema of Do's results: the columns asked for, then a
// boolean "found".
func (l *Lookup) Schema() *arrow.Schema { return l.out }

// Do looks up the keys of one batch: per key, in order, the row (NULLs
// when missing) and whether it was found, and the snapshot read. A key
// with a NULL is not found. Bad keys are an error that leaves the lookup
// usable. The caller releases the result.
func (l *Lookup) Do(ctx context.Context, keys arrow.RecordBatch) (arrow.RecordBatch, int64, error) {
	want := l.keys
	if int(keys.NumCols()) != want.NumFields() {
		return nil, 0, fmt.Errorf("lookup: %d key columns given, the primary key (%s) has %d: %w", keys.NumCols(), strings.Join(fieldNames(want), ", "), want.NumFields(), ErrInvalid)
	}
	mem := l.e.cfg.Mem
	cols := make([]arrow.Array, 0, keys.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i, f := range want.Fields() {
		in := keys.Column(i)
		if !convertible(in.DataType(), f.Type) {
			return nil, 0, fmt.Errorf("lookup: key column %d (%s) is %s, which cannot be a key of type %s: %w", i+1, f.Name, in.DataType(), f.Type, ErrInvalid)
		}
		c, err := convertColumn(ctx, mem, in, f.Type)
		if err != nil {
			return nil, 0, fmt.Errorf("lookup: key column %d (%s): %w", i+1, f.Name, err)
		}
		cols = append(cols, c)
	}
	req := l.req
	req.Keys = cols
	out, snap, err := l.entry.x.Lookup(ctx, req)
	if errors.Is(err, lookup.ErrAnswerTooLarge) {
		err = fmt.Errorf("%w: %w (the answer of one batch is bounded by the query memory, %d bytes: send fewer keys or columns at once)", exec.ErrMemoryLimit, err, req.MaxBytes)
	}
	return out, snap, err
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}

// Close releases the lookup; the index stays for the table's other users.
func (l *Lookup) Close() {
	l.once.Do(func() {
		l.e.releaseLookup(l.entry)
	})
}

// releaseLookup ends one use of an index.
func (e *Engine) releaseLookup(en *lookupEntry) {
	e.lookups.mu.Lock()
	defer e.lookups.mu.Unlock()
	en.refs--
	en.closeIfUnused()
}

// KeyBatch builds a batch of keys from rows of Go values, for clients that
// send keys as JSON (the DoGet lookup ticket): JSON numbers, strings,
// booleans and null, converted to the key columns' types as SQL literals
// would be.
func (l *Lookup) KeyBatch(rows [][]any) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(l.e.cfg.Mem, l.keys)
	defer b.Release()
	for r, row := range rows {
		if len(row) != l.keys.NumFields() {
			return nil, fmt.Errorf("lookup: key %d has %d values, the primary key (%s) has %d: %w", r+1, len(row), strings.Join(fieldNames(l.keys), ", "), l.keys.NumFields(), ErrInvalid)
		}
		for c, v := range row {
			var err error
			switch v := v.(type) {
			case nil:
				b.Field(c).AppendNull()
			case string:
				err = b.Field(c).AppendValueFromString(v)
			default:
				err = b.Field(c).AppendValueFromString(fmt.Sprint(v))
			}
			if err != nil {
				return nil, fmt.Errorf("lookup: key %d, column %s: %v cannot be %s: %w", r+1, l.keys.Field(c).Name, v, l.keys.Field(c).Type, ErrInvalid)
			}
		}
	}
	return b.NewRecordBatch(), nil
}
