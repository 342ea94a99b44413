package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// View errors.
var (
	ErrViewNotFound = errors.New("view not found")
	ErrViewExists   = errors.New("view already exists")
)

// ViewDef is a stored view: the SQL text of its query, bound again at
// every use (so it sees the tables' current schemas), with names resolved
// against the view's own database.
type ViewDef struct {
	// Query is the SELECT, as SQL text.
	Query string `json:"query"`
	// Columns renames the query's output columns (empty: keep them).
	Columns []string `json:"columns,omitempty"`
	// TimeMillis is when the definition was written.
	TimeMillis int64 `json:"timeMillis"`
}

// Views live beside the tables of their database, one metadata file each,
// in a directory whose name no table can have (a leading '_').
const viewDirName = "_views"

func (s *Store) viewDir(db string) string { return joinPath(s.dbDir(db), viewDirName) }

func (s *Store) viewPath(id Ident) string { return joinPath(s.viewDir(id.Database), id.Table) }

// CreateView stores a view definition atomically. A table of the same name
// is refused (ErrTableExists); an existing view is refused (ErrViewExists)
// unless orReplace, which swaps the definition in one rename.
func (s *Store) CreateView(ctx context.Context, id Ident, def ViewDef, orReplace bool) error {
	if err := validateIdent(id); err != nil {
		return err
	}
	if strings.TrimSpace(def.Query) == "" {
		return fmt.Errorf("%w: view %s has no query", ErrInvalid, id)
	}
	ok, err := s.dbExists(id.Database)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("create view %s: database %q: %w", id, id.Database, ErrDatabaseNotFound)
	}
	if _, err := s.Table(ctx, id); err == nil {
		return fmt.Errorf("create view %s: a table of that name exists: %w", id, ErrTableExists)
	} else if !errors.Is(err, ErrTableNotFound) {
		return fmt.Errorf("create view %s: %w", id, err)
	}
	dir := s.viewDir(id.Database)
	if err := s.fs.MkdirIn(s.dbDir(id.Database), viewDirName); err != nil {
		return fmt.Errorf("create view %s: %w", id, err)
	}
	def.TimeMillis = s.opts.Now().UnixMilli()
	tmp := joinPath(dir, ".tmp-"+newUUID())
	if _, err := writeMeta(s.fs, tmp, def); err != nil {
		return fmt.Errorf("create view %s: %w", id, err)
	}
	publish := s.fs.RenameNoReplace
	if orReplace {
		publish = s.fs.Rename
	}
	if err := publish(tmp, s.viewPath(id)); err != nil {
		_ = s.fs.Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create view %s: %w", id, ErrViewExists)
		}
		return fmt.Errorf("create view %s: %w", id, err)
	}
	for _, d := range []string{dir, s.dbDir(id.Database)} {
		if err := s.fs.SyncDir(d); err != nil {
			return fmt.Errorf("create view %s: %w", id, err)
		}
	}
	return nil
}

// View reads a view definition; errors.Is(err, ErrViewNotFound) when there
// is none.
func (s *Store) View(ctx context.Context, id Ident) (ViewDef, error) {
	var def ViewDef
	if err := validateIdent(id); err != nil {
		return def, err
	}
	if err := readMeta(s.fs, s.viewPath(id), &def); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return def, fmt.Errorf("view %s: %w", id, ErrViewNotFound)
		}
		return def, fmt.Errorf("view %s: %w", id, err)
	}
	return def, nil
}

// Views lists the views of db, sorted.
func (s *Store) Views(ctx context.Context, db string) ([]string, error) {
	if err := validateName("database", db); err != nil {
		return nil, err
	}
	ok, err := s.dbExists(db)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("database %q: %w", db, ErrDatabaseNotFound)
	}
	names, err := s.fs.List(s.viewDir(db))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list views of %q: %w", db, err)
	}
	var out []string
	for _, n := range names {
		if validateName("view", n) == nil { // skips .tmp- leftovers
			out = append(out, n)
		}
	}
	return out, nil // FS.List sorts
}

// DropView removes a view definition.
func (s *Store) DropView(ctx context.Context, id Ident, ifExists bool) error {
	if _, err := s.View(ctx, id); err != nil {
		if ifExists && errors.Is(err, ErrViewNotFound) {
			return nil
		}
		return err
	}
	if err := s.fs.Remove(s.viewPath(id)); err != nil {
		if ifExists && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("drop view %s: %w", id, err)
	}
	if err := s.fs.SyncDir(s.viewDir(id.Database)); err != nil {
		return fmt.Errorf("drop view %s: %w", id, err)
	}
	return nil
}
