package tablestore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/flightd/flightd/cache"
)

// DefaultBatchSize is a scan batch's rows by default: a whole row group
// of the default size (64Ki rows). What a batch costs whatever its rows
// (slices, record batches, type checks, expression and filter set-up,
// channel hand-offs) then comes once a row group: TPC-DS SF1 warm, with
// 4,096 rows a batch the geometric mean was 1.21-1.22x DuckDB's, with
// 16Ki 1.05, 32Ki 1.01-1.03, 64Ki 0.97. Results leave in smaller pieces
// (the Flight SQL server splits batches by bytes).
const DefaultBatchSize = 64 << 10

// Options configure a Store.
type Options struct {
	// Mem allocates every Arrow buffer the store creates. Required.
	Mem memory.Allocator
	// WriteBufferSize is the default memory budget of one Write's buffer
	// (bytes of buffered Arrow data) before it flushes sorted level-0 files;
	// a table's 'write-buffer-size' option overrides it. Default 64 MiB.
	WriteBufferSize int64
	// BatchSize is the target row count of scan batches. Default
	// DefaultBatchSize.
	BatchSize int
	// CommitUser names this store's commits in snapshots. Default random.
	CommitUser string
	// Now is the clock used for snapshot times. Default time.Now.
	Now func() time.Time
	// CacheBytes bounds the cache of decoded data-file columns that scans
	// share, so hot data is not decoded again; 0 disables it.
	CacheBytes int64
	// ChangeFeedMemory bounds the decoded changes of recent snapshots that
	// a table's change streams share (one read per snapshot for all of
	// them); a snapshot whose change files are larger is read by each
	// stream itself. Default 64 MiB.
	ChangeFeedMemory int64
	// MetadataMaxAge is how old what the store knows of a table's latest
	// schema and snapshot may be when Table opens it and a Pin resolves
	// it: within it they cost no request. A commit acknowledged by
	// another process is seen by statements that start more than
	// MetadataMaxAge after it; this store's own commits are seen at once.
	// Commits, change streams, lookups and handles without a Pin always
	// ask storage. 0: every Table and Pin asks storage.
	MetadataMaxAge time.Duration
}

// Store is the catalog over one warehouse directory:
//
//	root/<db>.db/<table>/{schema,snapshot,manifest,tag}/...
//	root/<db>.db/<table>/<partition>/bucket-N/data-*.parquet
//
// A Store is safe for concurrent use. Several Stores (or processes) may open
// one warehouse; commits stay atomic and conflicts are detected through
// put-if-absent snapshot publication.
type Store struct {
	fs   FS
	root string
	opts Options

	mu     sync.Mutex
	tables map[string]*tableState // by table directory
	closed bool

	bgCtx    context.Context
	bgCancel context.CancelFunc
	bgWG     sync.WaitGroup

	commitSeq sync.Mutex
	commitN   int64

	columns *cache.Arrays // decoded column chunks; nil: no cache

	verified verifiedFiles // data files whose checksum matched
	footers  footerCache   // data files' parsed Parquet footers

	// beforePublish, a testing knob, runs before a commit writes its
	// snapshot.
	beforePublish func()
}

// verifiedFiles remembers the data files this process has checksummed: they
// never change once written, so a file is read whole for its checksum once,
// not on every scan that reads all its row groups (for a fact table whose
// columns are cached, that read was most of a scan's time). Bounded: when
// full it forgets everything and files are checked again.
type verifiedFiles struct {
	mu sync.Mutex
	m  map[string]struct{}
}

const maxVerifiedFiles = 1 << 16

func (v *verifiedFiles) has(path string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.m[path]
	return ok
}

func (v *verifiedFiles) add(path string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxVerifiedFiles {
		v.m = map[string]struct{}{}
	}
	v.m[path] = struct{}{}
}

// footerCache keeps the parsed Parquet footers of data files, and their
// column layouts (fileLayout), by path:
// like verifiedFiles it relies on a data file never changing once written
// (a file of another size at the path is parsed again). Parsing the footer
// at every scan of every file was 2% of flightd's CPU in TPC-DS's
// throughput test at SF 0.3, with every column cached. Bounded by the
// footers' serialized bytes: when full it forgets everything.
type footerCache struct {
	mu    sync.Mutex
	m     map[string]footerEntry
	bytes int
}

type footerEntry struct {
	md     *metadata.FileMetaData
	layout *fileLayout
}

const maxFooterBytes = 32 << 20

func (c *footerCache) get(path string, size int64) (*metadata.FileMetaData, *fileLayout) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[path]; ok && e.md.GetSourceFileSize() == size {
		return e.md, e.layout
	}
	return nil, nil
}

func (c *footerCache) add(path string, md *metadata.FileMetaData, layout *fileLayout) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+md.Size() > maxFooterBytes {
		c.m, c.bytes = map[string]footerEntry{}, 0
	}
	if old, ok := c.m[path]; ok {
		c.bytes -= old.md.Size()
	}
	c.m[path] = footerEntry{md, layout}
	c.bytes += md.Size()
}

// Open opens (creating if needed) the warehouse at root.
func Open(ctx context.Context, fsys FS, root string, opts Options) (*Store, error) {
	if opts.Mem == nil {
		return nil, fmt.Errorf("%w: Options.Mem is required", ErrInvalid)
	}
	if fsys == nil {
		return nil, fmt.Errorf("%w: file system is nil", ErrInvalid)
	}
	if opts.WriteBufferSize <= 0 {
		opts.WriteBufferSize = 64 << 20
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.CommitUser == "" {
		opts.CommitUser = newUUID()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := fsys.MkdirAll(root); err != nil {
		return nil, fmt.Errorf("open warehouse %s: %w", root, err)
	}
	s := &Store{fs: fsys, root: root, opts: opts, tables: map[string]*tableState{}}
	if opts.CacheBytes > 0 {
		c, err := cache.NewArrays(opts.CacheBytes)
		if err != nil {
			return nil, err
		}
		s.columns = c
	}
	if err := s.removeTrash(); err != nil {
		return nil, fmt.Errorf("open warehouse %s: remove dropped tables: %w", root, err)
	}
	s.bgCtx, s.bgCancel = context.WithCancel(context.WithoutCancel(ctx))
	return s, nil
}

// Close stops background compaction and waits for it. A compaction that is
// cancelled leaves at most unreferenced files, never a partial snapshot.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.bgCancel()
	s.bgWG.Wait()
	if s.columns != nil {
		s.columns.Close()
	}
	return nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// nextCommitID numbers this store's commits (the snapshot's commit
// identifier); with the commit user it identifies a commit after an
// ambiguous publication error.
func (s *Store) nextCommitID() int64 {
	s.commitSeq.Lock()
	defer s.commitSeq.Unlock()
	s.commitN++
	return s.commitN
}

func (s *Store) dbDir(db string) string { return joinPath(s.root, db+".db") }

func (s *Store) tableDir(id Ident) string { return joinPath(s.dbDir(id.Database), id.Table) }

func (s *Store) dbExists(db string) (bool, error) {
	_, err := s.fs.Stat(s.dbDir(db))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("database %q: %w", db, err)
	}
	return true, nil
}

// CreateDatabase creates a database.
func (s *Store) CreateDatabase(ctx context.Context, name string, ifNotExists bool) error {
	return s.CreateDatabaseWith(ctx, name, ifNotExists, nil)
}

// CreateDatabaseWith creates a database with options (DatabaseOptions);
// an existing one keeps its own with ifNotExists.
func (s *Store) CreateDatabaseWith(ctx context.Context, name string, ifNotExists bool, opts map[string]string) error {
	if err := validateName("database", name); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		ok, err := s.dbExists(name)
		if err != nil {
			return err
		}
		if ok {
			if ifNotExists {
				return nil
			}
			return fmt.Errorf("database %q: %w", name, ErrDatabaseExists)
		}
		err = s.fs.MkdirAll(s.dbDir(name))
		if err == nil {
			break
		}
		// Created and dropped again meanwhile (MkdirAll found the name
		// taken, then not a directory): look again.
		if !errors.Is(err, fs.ErrExist) || attempt >= 3 {
			return fmt.Errorf("create database %q: %w", name, err)
		}
	}
	if len(opts) > 0 {
		if err := s.replaceMeta(s.dbDir(name), "", dbOptionsName, opts); err != nil {
			return fmt.Errorf("create database %q: options: %w", name, err)
		}
	}
	return s.fs.SyncDir(s.root)
}

// DropDatabase drops a database; with cascade its tables too, otherwise it
// must be empty.
func (s *Store) DropDatabase(ctx context.Context, name string, ifExists, cascade bool) error {
	if err := validateName("database", name); err != nil {
		return err
	}
	ok, err := s.dbExists(name)
	if err != nil {
		return err
	}
	if !ok {
		if ifExists {
			return nil
		}
		return fmt.Errorf("database %q: %w", name, ErrDatabaseNotFound)
	}
	tables, err := s.Tables(ctx, name)
	if err != nil {
		return err
	}
	if len(tables) > 0 && !cascade {
		return fmt.Errorf("%w: database %q is not empty (%d tables); use CASCADE", ErrInvalid, name, len(tables))
	}
	ids := make([]Ident, len(tables))
	for i, t := range tables {
		ids[i] = Ident{name, t}
		s.forgetColumns(s.tableDir(ids[i]) + "/")
	}
	// As DropTable does: a writer racing the drop (a statement that opened
	// a table before it) writes into the renamed directory, or fails,
	// instead of leaving files in the one being removed, which made the
	// removal fail ("directory not empty").
	_, unlock := s.lockForDrop(ids)
	trash := joinPath(s.root, trashPrefix+name+"-"+newUUID())
	err = s.fs.Rename(s.dbDir(name), trash)
	unlock(err == nil || errors.Is(err, errors.ErrUnsupported))
	if errors.Is(err, errors.ErrUnsupported) {
		trash = s.dbDir(name)
	} else if errors.Is(err, fs.ErrNotExist) && ifExists {
		return nil // dropped meanwhile
	} else if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("database %q: %w (dropped meanwhile)", name, ErrDatabaseNotFound)
	} else if err != nil {
		return fmt.Errorf("drop database %q: %w", name, err)
	} else if err := s.fs.SyncDir(s.root); err != nil {
		return fmt.Errorf("drop database %q: %w", name, err)
	}
	if err := removeDropped(s.fs, trash); err != nil {
		return fmt.Errorf("drop database %q: %w", name, err)
	}
	return nil
}

// Databases lists databases, sorted.
func (s *Store) Databases(ctx context.Context) ([]string, error) {
	names, err := s.fs.List(s.root)
	if err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	var out []string
	for _, n := range names {
		if db, ok := strings.CutSuffix(n, ".db"); ok && validateName("database", db) == nil {
			out = append(out, db)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Tables lists the tables of db, sorted.
func (s *Store) Tables(ctx context.Context, db string) ([]string, error) {
	if err := validateName("database", db); err != nil {
		return nil, err
	}
	names, err := s.fs.List(s.dbDir(db))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("database %q: %w", db, ErrDatabaseNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("list tables of %q: %w", db, err)
	}
	var out []string
	for _, n := range names {
		if validateName("table", n) != nil {
			continue
		}
		// A directory without a schema in effect is the leftover of an
		// interrupted CREATE or a create still staged.
		if _, err := s.state(Ident{Database: db, Table: n}).latestSchema(); err == nil {
			out = append(out, n)
		} else if !errors.Is(err, ErrTableNotFound) {
			return nil, err
		}
	}
	return out, nil
}

// CreateTable creates a table and returns it.
func (s *Store) CreateTable(ctx context.Context, id Ident, def TableDef, ifNotExists bool) (*Table, error) {
	sch, st, err := s.newTable(id, def)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		exists, err := st.createSchema(sch)
		switch {
		case exists && ifNotExists:
			return s.Table(ctx, id)
		case exists:
			return nil, fmt.Errorf("create table %s: %w", id, ErrTableExists)
		case err == nil:
			return s.Table(ctx, id)
		}
		if st, err = s.afterPublishFailed(id, st, err, attempt); err != nil {
			return nil, fmt.Errorf("create table %s: %w", id, err)
		}
	}
}

// createSchema publishes sch as the table's first schema, unless the table
// exists. It holds the commit lock and the schema lock, so that a CREATE
// TABLE ... AS of this process or another, whose commit checks that the
// table does not exist under both, cannot publish its rows under this
// schema (an append table's files in a key table), nor this schema land
// above its snapshot.
func (st *tableState) createSchema(sch *tableSchema) (exists bool, err error) {
	st.commitMu.Lock()
	defer st.commitMu.Unlock()
	unlock, err := st.lockSchemaChange()
	if err != nil {
		return false, err
	}
	defer unlock()
	if _, err := st.latestSchema(); err == nil {
		return true, nil
	} else if !errors.Is(err, ErrTableNotFound) {
		return false, err
	}
	if err := st.makeDirs(); err != nil {
		return false, err
	}
	// Above any schema a staged or abandoned replace left.
	if sch.ID, err = st.nextSchemaID(); err != nil {
		return false, err
	}
	sch.Origin = sch.ID
	return false, st.publishSchema(sch)
}

// afterPublishFailed decides whether creating table id tries its schema
// again after publishing it failed with err: when another create published
// that version first, or a DROP TABLE racing this create removed the
// table's directory (then it is prepared again: the drop came first). It
// returns the error to report otherwise, or after a few attempts.
func (s *Store) afterPublishFailed(id Ident, st *tableState, err error, attempt int) (*tableState, error) {
	switch {
	case attempt >= 3:
		return nil, fmt.Errorf("%w: %v", ErrConflict, err)
	case errors.Is(err, fs.ErrExist):
		return st, nil
	case errors.Is(err, ErrTableNotFound):
		return s.prepareTableDir(id)
	}
	return nil, err
}

// newTable checks that table id can be created and returns its first
// schema (no id yet) and its prepared directory.
func (s *Store) newTable(id Ident, def TableDef) (*tableSchema, *tableState, error) {
	if err := validateIdent(id); err != nil {
		return nil, nil, err
	}
	ok, err := s.dbExists(id.Database)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, fmt.Errorf("create table %s: database %q: %w", id, id.Database, ErrDatabaseNotFound)
	}
	sch, err := newTableSchema(def, s.opts.Now().UnixMilli())
	if err != nil {
		return nil, nil, fmt.Errorf("create table %s: %w", id, err)
	}
	st, err := s.prepareTableDir(id)
	if err != nil {
		return nil, nil, fmt.Errorf("create table %s: %w", id, err)
	}
	return sch, st, nil
}

// prepareTableDir creates a table's directory (durably) and returns its
// state; the state makes the directories in it (makeDirs).
func (s *Store) prepareTableDir(id Ident) (*tableState, error) {
	if err := s.fs.MkdirIn(s.dbDir(id.Database), id.Table); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("database %q: %w", id.Database, ErrDatabaseNotFound) // dropped meanwhile
	} else if err != nil {
		return nil, err
	}
	if err := s.fs.SyncDir(s.dbDir(id.Database)); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("database %q: %w (dropped meanwhile)", id.Database, ErrDatabaseNotFound)
	} else if err != nil {
		return nil, err
	}
	return s.state(id), nil
}

// makeDirs creates the table's directories (durably) through the state's
// FS, in the directory its first schema is published into next. The one
// prepareTableDir made may be gone by then (DROP DATABASE moves away a
// table not yet in effect), and the one at the path another CREATE's,
// still making its directories: published there, the table had no
// manifest directory yet and an INSERT failed writing its manifest (engine
// TestRandomDDLAndWrites, 1 statement in 6,330;
// TestCreateIntoDirectoryBeingPrepared).
func (st *tableState) makeDirs() error {
	fsys := st.fs()
	var err error
	for _, sub := range []string{"schema", "snapshot", "manifest"} {
		if err = fsys.MkdirIn(st.dir, sub); err != nil {
			break
		}
	}
	if err == nil {
		err = fsys.SyncDir(st.dir)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: dropped while it was created (%v)", ErrTableNotFound, err)
	}
	return err
}

// StageTable starts a write that creates table id, or with replace swaps
// an existing one for a new table (schema and data). Nothing is visible
// until Commit, which publishes the new table with exactly the rows written
// in one snapshot: readers see the old table or the new one, never a table
// in between, and a failed, aborted or interrupted write leaves the catalog
// as it was. Commit fails with ErrTableExists when, without replace, the
// table exists by then, and with ErrConflict when another replace or an
// ALTER TABLE of the table published after StageTable. Writes begun on the
// replaced table fail at commit with ErrConflict.
func (s *Store) StageTable(ctx context.Context, id Ident, def TableDef, replace bool) (*Write, error) {
	sch, st, err := s.newTable(id, def)
	if err != nil {
		return nil, err
	}
	sch.Replaces = true
	if _, err := st.latestSchema(); err == nil && !replace {
		return nil, fmt.Errorf("create table %s: %w", id, ErrTableExists)
	} else if err != nil && !errors.Is(err, ErrTableNotFound) {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if err := st.publishStaged(sch); err == nil {
			break
		} else if st, err = s.afterPublishFailed(id, st, err, attempt); err != nil {
			return nil, fmt.Errorf("create table %s: %w", id, err)
		}
	}
	w := (&Table{st: st, schema: sch}).NewWrite(WriteOptions{Overwrite: true})
	w.staged, w.createOnly = sch, !replace
	return w, nil
}

// publishStaged makes the table's directories and publishes sch, staged,
// above every schema there, under the locks an abandoned stage removes
// the directories under (tableState.abandonStaged).
func (st *tableState) publishStaged(sch *tableSchema) (err error) {
	st.commitMu.Lock()
	defer st.commitMu.Unlock()
	unlock, err := st.lockSchemaChange()
	if err != nil {
		return err
	}
	defer unlock()
	if err := st.makeDirs(); err != nil {
		return err
	}
	if sch.ID, err = st.nextSchemaID(); err != nil {
		return err
	}
	sch.Origin = sch.ID
	return st.publishSchema(sch)
}

func validateIdent(id Ident) error {
	if err := validateName("database", id.Database); err != nil {
		return err
	}
	return validateName("table", id.Table)
}

// publishSchema writes schema-<id> atomically; it fails with fs.ErrExist
// when that version already exists. The schema kept for Table is
// forgotten, so this store's next statements see the new version.
func (st *tableState) publishSchema(sch *tableSchema) (err error) {
	defer st.forgetSchema()
	defer func() {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w: dropped while its schema was written (%v)", ErrTableNotFound, err)
		}
	}()
	fsys, dir := st.fs(), st.dir
	name := joinPath(dir, "schema", "schema-"+strconv.FormatInt(sch.ID, 10))
	tmp := joinPath(dir, "schema", ".tmp-"+newUUID())
	if _, err := writePaimonJSON(fsys, tmp, sch); err != nil {
		return err
	}
	if err := fsys.RenameNoReplace(tmp, name); err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	if err := fsys.SyncDir(joinPath(dir, "schema")); err != nil {
		return err
	}
	// Read back: a rename the file system acknowledged but lost must not
	// be acknowledged to the caller.
	var got tableSchema
	if err := readMeta(fsys, name, &got); err != nil {
		return fmt.Errorf("publish %s: %w", name, err)
	}
	if got.ID != sch.ID || got.TimeMillis != sch.TimeMillis {
		return fmt.Errorf("%w: publish %s: another schema was published", ErrConflict, name)
	}
	return nil
}

// forgetColumns drops the cached columns of the data files under prefixes
// (a dropped table's directory, an expired file's path), which no scan
// reads again: in the cache they would hold memory until evicted (a
// benchmark that drops and creates its tables per query filled the
// default cache, a third of the memory limit, with them).
func (s *Store) forgetColumns(prefixes ...string) {
	if s.columns != nil && len(prefixes) > 0 {
		s.columns.Forget(prefixes...)
	}
}

// trashPrefix starts the name a dropped table's directory is renamed to
// before its files are removed; table names cannot start with '.'.
const trashPrefix = ".trash-"

// DropTable drops a table and its files. The table directory is renamed
// away first, atomically: the name is free at once, and removing the files
// does not race with a writer still creating files under the table's path
// (its commit fails with ErrTableNotFound and removes them).
func (s *Store) DropTable(ctx context.Context, id Ident, ifExists bool) error {
	if _, err := s.FreshTable(ctx, id); err != nil {
		if ifExists && errors.Is(err, ErrTableNotFound) {
			return nil
		}
		return err
	}
	s.forgetColumns(s.tableDir(id) + "/")
	locked, unlock := s.lockForDrop([]Ident{id})
	// The table found above may have been dropped while this drop waited
	// for the locks: the name may hold no table now, or one being created
	// (its schema staged or not yet published), not this drop's to move
	// away (TestDropAfterDropSparesStagedCreate).
	if _, err := locked[0].latestSchema(); err != nil {
		unlock(false)
		if ifExists && errors.Is(err, ErrTableNotFound) {
			return nil
		}
		return fmt.Errorf("drop table %s: %w", id, err)
	}
	trash := joinPath(s.dbDir(id.Database), trashPrefix+id.Table+"-"+newUUID())
	err := s.fs.Rename(s.tableDir(id), trash)
	if errors.Is(err, errors.ErrUnsupported) {
		err = s.dropInPlace(id)
		unlock(err == nil)
		return err
	}
	unlock(err == nil)
	if errors.Is(err, fs.ErrNotExist) && ifExists {
		return nil // dropped meanwhile
	} else if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("drop table %s: %w (dropped meanwhile)", id, ErrTableNotFound)
	} else if err != nil {
		return fmt.Errorf("drop table %s: %w", id, err)
	}
	if err := s.fs.SyncDir(s.dbDir(id.Database)); errors.Is(err, fs.ErrNotExist) {
		return nil // a DROP DATABASE moved the database away since, with the table's files
	} else if err != nil {
		return fmt.Errorf("drop table %s: %w", id, err)
	}
	if err := removeDropped(s.fs, trash); err != nil {
		return fmt.Errorf("drop table %s: dropped, but removing its files failed (Open retries): %w", id, err)
	}
	return nil
}

// dropInPlace drops a table on a file system that cannot rename
// directories (object stores): removing its schema files first makes it
// not found at once (latestSchema), then its other files go. Unlike the
// rename, this does not keep a writer racing the drop from leaving files
// (a snapshot too) in the emptied directory (docs/STATUS.md).
func (s *Store) dropInPlace(id Ident) error {
	if err := s.fs.RemoveAll(joinPath(s.tableDir(id), "schema")); err != nil {
		return fmt.Errorf("drop table %s: %w", id, err)
	}
	if err := s.fs.RemoveAll(s.tableDir(id)); err != nil {
		return fmt.Errorf("drop table %s: dropped, but removing its files failed: %w", id, err)
	}
	return nil
}

// removeTrash removes what interrupted drops left (see DropTable).
func (s *Store) removeTrash() error {
	dbs, err := s.Databases(context.Background())
	if err != nil {
		return err
	}
	roots, err := s.fs.List(s.root)
	if err != nil {
		return err
	}
	for _, n := range roots {
		if strings.HasPrefix(n, trashPrefix) { // a database's (DropDatabase)
			if err := s.fs.RemoveAll(joinPath(s.root, n)); err != nil {
				return err
			}
		}
	}
	for _, db := range dbs {
		names, err := s.fs.List(s.dbDir(db))
		if err != nil {
			return err
		}
		for _, n := range names {
			if strings.HasPrefix(n, trashPrefix) {
				if err := s.fs.RemoveAll(joinPath(s.dbDir(db), n)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removeDropped removes a dropped table's or database's directory, again
// when a writer that opened the table before the drop created a file in it
// meanwhile ("directory not empty").
func removeDropped(fsys FS, dir string) error {
	hideMetadata(fsys, dir)
	var err error
	for range 3 {
		if err = fsys.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// hideMetadata moves the schema and snapshot directories of the dropped
// tables in dir (a table's or a database's) aside, one rename each, before
// their files are removed. Another process's state of a table reads its
// pinned directory until it notices the drop, and the listing of a
// half-removed directory shows an older version as the latest: the first
// schema of a key table over the files of the append table that replaced
// it ("key-table file without system columns"). Without the directories
// it finds the table gone. Where directories cannot be renamed (object
// stores) nothing pins them.
func hideMetadata(fsys FS, dir string) {
	tables := []string{dir}
	if names, err := fsys.List(dir); err == nil && !slices.Contains(names, "schema") {
		tables = tables[:0] // a database's: its tables
		for _, n := range names {
			tables = append(tables, joinPath(dir, n))
		}
	}
	for _, t := range tables {
		for _, sub := range []string{"schema", "snapshot"} {
			_ = fsys.Rename(joinPath(t, sub), joinPath(t, ".dropped-"+sub))
		}
	}
}

// lockForDrop takes the commit and expiry locks of the tables (in path
// order, as a commit of several tables does) while they are dropped, and
// returns their states, locked. The returned func ends the drop: when it
// took effect, it marks them dropped, so no write of this process
// publishes into their directories afterwards (a table created again
// under the name may hold them), and forgets their state.
func (s *Store) lockForDrop(ids []Ident) (locked []*tableState, end func(dropped bool)) {
	sts := make([]*tableState, len(ids))
	for {
		for i, id := range ids {
			sts[i] = s.state(id)
		}
		slices.SortFunc(sts, func(a, b *tableState) int { return strings.Compare(a.dir, b.dir) })
		for _, st := range sts {
			st.commitMu.Lock()
		}
		// A drop racing this one took a state first: the name may hold
		// a new table by now, whose state is the one to lock.
		if !slices.ContainsFunc(sts, func(st *tableState) bool { return st.dropped.Load() }) {
			break
		}
		for _, st := range sts {
			st.commitMu.Unlock()
		}
	}
	// And expiry's, which a commit may take under its own (a lookup
	// changelog's scan): an expiry that read the table before must not
	// delete files by the dropped table's state in the new one.
	for _, st := range sts {
		st.expireMu.Lock()
		st.dropping.Store(true)
	}
	return sts, func(dropped bool) {
		for _, st := range sts {
			// Marked before either lock goes: a commit or an expiry
			// waiting for it must see the drop.
			if dropped {
				st.dropped.Store(true)
				s.mu.Lock()
				if s.tables[st.dir] == st {
					delete(s.tables, st.dir)
				}
				s.mu.Unlock()
			}
			st.dropping.Store(false)
			st.expireMu.Unlock()
			st.commitMu.Unlock()
		}
		if dropped {
			for _, st := range sts {
				st.stopBackground() // unlocked: compaction may wait for the lock
			}
		}
	}
}

// Table opens a table; errors.Is(err, ErrTableNotFound) when it does not exist.
func (s *Store) Table(ctx context.Context, id Ident) (*Table, error) {
	if err := validateIdent(id); err != nil {
		return nil, err
	}
	st := s.state(id)
	sch := st.recentSchema()
	if sch == nil {
		var err error
		if sch, err = st.latestSchemaKept(); err != nil {
			return nil, err
		}
	}
	return &Table{st: st, schema: sch}, nil
}

// FreshTable opens a table with its schema read from storage, for what
// must not act on a stale view of it (DROP, ALTER, a job checking that it
// is still wanted), where Table may give a view up to
// Options.MetadataMaxAge old.
func (s *Store) FreshTable(_ context.Context, id Ident) (*Table, error) {
	if err := validateIdent(id); err != nil {
		return nil, err
	}
	st := s.state(id)
	sch, err := st.latestSchemaKept()
	if err != nil {
		return nil, err
	}
	return &Table{st: st, schema: sch}, nil
}

func (s *Store) state(id Ident) *tableState {
	dir := s.tableDir(id)
	s.mu.Lock()
	st := s.tables[dir]
	if st != nil && !st.movedAway() {
		s.mu.Unlock()
		return st
	}
	old := st
	st = newTableState(s, id, dir)
	s.tables[dir] = st
	s.mu.Unlock()
	if old != nil {
		// Another process dropped the table: the old state's commits
		// fail (publish checks), its background work stops (not waited
		// for: it may be what asks for the new state).
		old.bgCancel()
	}
	return st
}

// AlterTable applies schema changes atomically as a new schema version.
func (s *Store) AlterTable(ctx context.Context, id Ident, changes ...SchemaChange) error {
	t, err := s.FreshTable(ctx, id)
	if err != nil {
		return err
	}
	// The schema it extends stays the latest until it publishes: a
	// replace (CREATE OR REPLACE, here or on another process) committing
	// between the two would leave this version, of the replaced table,
	// in effect over the new table's rows.
	t.st.commitMu.Lock()
	defer t.st.commitMu.Unlock()
	unlock, err := t.st.lockSchemaChange()
	if err != nil {
		return fmt.Errorf("alter table %s: %w", id, err)
	}
	defer unlock()
	for attempt := 0; ; attempt++ {
		cur, err := t.st.latestSchema()
		if err != nil {
			return err
		}
		next := cur.clone()
		next.Replaces = false
		if next.ID, err = t.st.nextSchemaID(); err != nil {
			return err
		}
		next.TimeMillis = s.opts.Now().UnixMilli()
		for _, c := range changes {
			if c == nil {
				return fmt.Errorf("alter table %s: %w: nil change", id, ErrInvalid)
			}
			if err := c.apply(next); err != nil {
				return fmt.Errorf("alter table %s: %w", id, err)
			}
			if err := next.init(); err != nil {
				return fmt.Errorf("alter table %s: %w", id, err)
			}
		}
		err = t.st.publishSchema(next)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("alter table %s: %w", id, err)
		}
		if attempt >= 3 {
			return fmt.Errorf("alter table %s: %w: concurrent schema changes", id, ErrConflict)
		}
	}
}
