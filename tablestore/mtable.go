package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
)

// MaterializedDef is the definition of a materialized table. It lives in
// the table's schema, so creating the table, its first contents and its
// definition are one commit (Store.StageTable), and every change of the
// definition is one schema version (SetMaterialized). The engine runs the
// refreshes; the store only keeps what they need.
type MaterializedDef struct {
	// Query is the SELECT, as SQL text, bound in the table's database.
	Query string `json:"query"`
	// FreshnessMillis is the declared freshness (the refresh interval in
	// FULL mode).
	FreshnessMillis int64 `json:"freshnessMillis"`
	// DeclaredMode is REFRESH_MODE as written ("" when left to the
	// freshness); Mode is the mode the table runs in.
	DeclaredMode string `json:"declaredRefreshMode,omitempty"`
	Mode         string `json:"refreshMode"`
	// FullReason says why a table whose freshness asks for CONTINUOUS runs
	// FULL: its query cannot be maintained as a continuous job.
	FullReason string `json:"fullReason,omitempty"`
	// Suspended stops scheduled refreshes (ALTER ... SUSPEND).
	Suspended bool `json:"suspended,omitempty"`
	// DateFormatters maps partition columns to the date format of their
	// values (partition.fields.<col>.date-formatter): a scheduled refresh
	// then recomputes only the current period's partition.
	DateFormatters map[string]string `json:"dateFormatters,omitempty"`
	// Owner is the user who created the table or last gave it its query:
	// its refreshes and its continuous job read the sources with that
	// user's grants ("": created without authentication).
	Owner string `json:"owner,omitempty"`
}

func (d *MaterializedDef) clone() *MaterializedDef {
	if d == nil {
		return nil
	}
	c := *d
	c.DateFormatters = maps.Clone(d.DateFormatters)
	return &c
}

// Materialized is the table's materialized-table definition, or nil for a
// plain table.
func (t *Table) Materialized() *MaterializedDef { return t.schema.Materialized.clone() }

// SuspendMaterialized suspends (or resumes) a materialized table's
// schedule; suspending a suspended table is an error.
type SuspendMaterialized struct{ Suspended bool }

// SetFreshness changes a materialized table's freshness, and the mode
// (and FullReason) it runs in when REFRESH_MODE was left to the freshness.
type SetFreshness struct {
	Millis           int64
	Mode, FullReason string
}

// Both apply to the latest schema (Store.AlterTable), so concurrent ALTERs
// of different fields do not undo each other.
func (c SuspendMaterialized) apply(s *tableSchema) error {
	return alterMaterialized(s, func(d *MaterializedDef) error {
		if c.Suspended && d.Suspended {
			return fmt.Errorf("%w: already suspended", ErrInvalid)
		}
		d.Suspended = c.Suspended
		return nil
	})
}

func (c SetFreshness) apply(s *tableSchema) error {
	if c.Millis <= 0 {
		return fmt.Errorf("%w: freshness must be positive", ErrInvalid)
	}
	return alterMaterialized(s, func(d *MaterializedDef) error {
		d.FreshnessMillis = c.Millis
		if d.DeclaredMode == "" && c.Mode != "" {
			d.Mode, d.FullReason = c.Mode, c.FullReason
		}
		return nil
	})
}

func alterMaterialized(s *tableSchema, fn func(*MaterializedDef) error) error {
	if s.Materialized == nil {
		return fmt.Errorf("%w: not a materialized table", ErrInvalid)
	}
	d := s.Materialized.clone() // the current version is shared
	if err := fn(d); err != nil {
		return err
	}
	s.Materialized = d
	return nil
}

// LastProperties finds the newest snapshot, at or before the latest one,
// whose properties (WriteOptions.Properties) contain key: its id, commit
// time and properties. id is 0 when none is left (never written, or
// expired).
func (t *Table) LastProperties(ctx context.Context, key string) (id, timeMillis int64, props map[string]string, err error) {
	sn, err := t.resolve(0)
	for ; err == nil && sn != nil; sn, err = t.st.readSnapshot(sn.ID - 1) {
		if _, ok := sn.Properties[key]; ok {
			return sn.ID, sn.TimeMillis, maps.Clone(sn.Properties), nil
		}
		if sn.ID == 1 {
			return 0, 0, nil, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, 0, nil, err
		}
	}
	if errors.Is(err, ErrSnapshotNotFound) {
		return 0, 0, nil, nil
	}
	return 0, 0, nil, err
}

// SnapshotTime is the commit time of a snapshot (0 = latest), in Unix
// milliseconds; 0 for a table without snapshots.
func (t *Table) SnapshotTime(ctx context.Context, id int64) (int64, error) {
	sn, err := t.resolve(id)
	if err != nil || sn == nil {
		return 0, err
	}
	return sn.TimeMillis, nil
}

// MaterializedState is what the scheduler of a materialized table keeps
// between runs that no commit records: the last failure.
type MaterializedState struct {
	LastError       string `json:"lastError,omitempty"`
	LastErrorMillis int64  `json:"lastErrorMillis,omitempty"`
	// Failures counts the failed refreshes (or job runs) in a row, which
	// space the retries.
	Failures int `json:"failures,omitempty"`
}

// The state of materialized tables lives beside the tables of their
// database, one file each, in a directory no table can be named (as views).
const mtableDirName = "_mtables"

func (s *Store) mtableStatePath(id Ident) string {
	return joinPath(s.dbDir(id.Database), mtableDirName, id.Table)
}

// PutMaterializedState replaces the state of materialized table id
// atomically.
func (s *Store) PutMaterializedState(ctx context.Context, id Ident, state MaterializedState) error {
	if err := validateIdent(id); err != nil {
		return err
	}
	if err := s.replaceMeta(s.dbDir(id.Database), mtableDirName, id.Table, state); err != nil {
		return fmt.Errorf("materialized table %s: %w", id, err)
	}
	return nil
}

// replaceMeta replaces file name in directory sub of parent (sub created
// if missing, "" for parent itself) with v, atomically. parent must exist:
// a write racing the drop of a database does not bring it back.
func (s *Store) replaceMeta(parent, sub, name string, v any) error {
	dir := parent
	if sub != "" {
		dir = joinPath(parent, sub)
		if err := s.fs.MkdirIn(parent, sub); err != nil {
			return err
		}
	}
	tmp := joinPath(dir, ".tmp-"+newUUID())
	if _, err := writeMeta(s.fs, tmp, v); err != nil {
		return err
	}
	if err := s.fs.Rename(tmp, joinPath(dir, name)); err != nil {
		_ = s.fs.Remove(tmp)
		return err
	}
	return s.fs.SyncDir(dir)
}

// A database's options (CREATE DATABASE ... WITH, ALTER DATABASE ... SET)
// live in one file beside its tables, under a name no table can have.
const dbOptionsName = "_options"

// DatabaseOptions reads the options of database db (none: an empty map).
func (s *Store) DatabaseOptions(ctx context.Context, db string) (map[string]string, error) {
	if err := validateName("database", db); err != nil {
		return nil, err
	}
	if ok, err := s.dbExists(db); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("database %q: %w", db, ErrDatabaseNotFound)
		}
		return nil, err
	}
	opts := map[string]string{}
	if err := readMeta(s.fs, joinPath(s.dbDir(db), dbOptionsName), &opts); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("database %q options: %w", db, err)
	}
	return opts, nil
}

// SetDatabaseOptions sets options of database db, keeping its others.
// Concurrent calls on one database may lose one's keys: they are DDL.
func (s *Store) SetDatabaseOptions(ctx context.Context, db string, set map[string]string) error {
	opts, err := s.DatabaseOptions(ctx, db)
	if err != nil {
		return err
	}
	maps.Copy(opts, set)
	if err := s.replaceMeta(s.dbDir(db), "", dbOptionsName, opts); err != nil {
		return fmt.Errorf("database %q options: %w", db, err)
	}
	return nil
}

// MaterializedState reads the state of materialized table id; the zero
// state when none was written.
func (s *Store) MaterializedState(ctx context.Context, id Ident) (MaterializedState, error) {
	var st MaterializedState
	if err := validateIdent(id); err != nil {
		return st, err
	}
	if err := readMeta(s.fs, s.mtableStatePath(id), &st); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("materialized table %s: %w", id, err)
	}
	return st, nil
}

// DeleteMaterializedState removes the state of a dropped materialized table.
func (s *Store) DeleteMaterializedState(ctx context.Context, id Ident) error {
	if err := validateIdent(id); err != nil {
		return err
	}
	if err := s.fs.Remove(s.mtableStatePath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("materialized table %s: %w", id, err)
	}
	return nil
}

// SetProperties sets the properties the commit's snapshot carries
// (WriteOptions.Properties), for a write made by Store.StageTable.
func (w *Write) SetProperties(props map[string]string) { w.opts.Properties = props }

// SnapshotProperties returns the properties of snapshot id (0 = latest).
func (t *Table) SnapshotProperties(ctx context.Context, id int64) (map[string]string, error) {
	sn, err := t.resolve(id)
	if err != nil || sn == nil {
		return nil, err
	}
	return maps.Clone(sn.Properties), nil
}
