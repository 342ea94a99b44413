package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// ViewCatalog is implemented by catalogs that store views. Binding expands
// a view where its name is used, from its SQL text, with the view's
// database as the default for the names in it.
type ViewCatalog interface {
	// View returns a view's definition; errors.Is(err,
	// tablestore.ErrViewNotFound) when there is none.
	View(ctx context.Context, id tablestore.Ident) (tablestore.ViewDef, error)
	// Views lists the views of a database.
	Views(ctx context.Context, db string) ([]string, error)
}

// CreateView stores a view whose query bound when it was created.
type CreateView struct {
	Ident       tablestore.Ident
	Def         tablestore.ViewDef
	OrReplace   bool
	IfNotExists bool
}

// DropView removes a view.
type DropView struct {
	Ident    tablestore.Ident
	IfExists bool
}

func (*CreateView) boundStmt() {}
func (*DropView) boundStmt()   {}

func (b *binder) views() ViewCatalog {
	vc, _ := b.cat.(ViewCatalog)
	return vc
}

func (b *binder) bindCreateView(s *sql.CreateView) Statement {
	if s.Temporary {
		b.notImplemented(s.Pos, "temporary views")
	}
	if s.OrReplace && s.IfNotExists {
		b.fail(s.Pos, "CREATE OR REPLACE VIEW cannot have IF NOT EXISTS")
	}
	if b.views() == nil {
		b.notImplemented(s.Pos, "views in this catalog")
	}
	id := b.ident(s.Name)
	b.checkNewName(s.Name, id)
	// The query must bind now, as it will at each use: in the view's
	// database, without the statement's CTEs or parameters, and without
	// reaching the view being (re)defined.
	n := b.bindViewBody(id, s.As)
	if b.maxParam > 0 {
		b.fail(s.As.Pos, "a view cannot have parameters")
	}
	cols := n.Columns()
	names := s.Columns
	if names == nil {
		names = make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name
		}
	}
	// The names are a view's columns as a table's are: bounded alike.
	for _, name := range names {
		if err := tablestore.CheckNameLength("column", name); err != nil {
			b.failState(stateNameTooLong, s.Pos, "view %s: %v", id, err)
		}
	}
	if s.Columns != nil {
		if len(s.Columns) != len(cols) {
			b.fail(s.Pos, "view %s names %d columns but its query produces %d", id, len(s.Columns), len(cols))
		}
		for i, c := range s.Columns {
			if slices.Contains(s.Columns[:i], c) {
				b.fail(s.Pos, "view %s names column %q twice", id, c)
			}
		}
	}
	return &CreateView{
		Ident:       id,
		Def:         tablestore.ViewDef{Query: sql.Format(s.As), Columns: s.Columns},
		OrReplace:   s.OrReplace,
		IfNotExists: s.IfNotExists,
	}
}

// bindViewBody binds a view's query in the view's database, with no CTEs
// of the enclosing statement in scope; bindView refuses a view that reaches
// itself (through other views) by the stack it keeps.
func (b *binder) bindViewBody(id tablestore.Ident, q *sql.Query) Node {
	savedDB, savedCTEs := b.viewDB, b.ctes
	b.viewDB, b.ctes = id.Database, nil
	b.viewStack = append(b.viewStack, id)
	defer func() {
		b.viewDB, b.ctes = savedDB, savedCTEs
		b.viewStack = b.viewStack[:len(b.viewStack)-1]
	}()
	n, _ := b.bindQuery(q, nil, nil)
	return n
}

// A statement may expand at most maxViewRefs view references, or
// maxViewBytes of view text, counting the views inside views: each use of
// a view binds its query again, so 25 views that each name the previous
// twice expanded to 2^24 references and bound until the process ran out of
// memory. A WITH query bound at each of its references (not shared: in a
// streaming or materialized query, or with the rule off) counts as one.
const (
	maxViewRefs  = 1000
	maxViewBytes = 64 << 20
)

// expand counts one more view reference or WITH query bound at pos, of
// text bytes, and fails the statement past the limits.
func (b *binder) expand(pos sql.Pos, text int) {
	if b.viewRefs == 0 {
		// The first reference bound is in the statement's own text.
		b.firstView = pos
	}
	b.viewRefs++
	b.viewBytes += text
	if b.overExpanded() {
		panic(bindFail{sql.StateErrorf(sql.StateTooComplex, b.firstView, "statement too complex: its views expand to more than %d view references or %d MiB of view text (each use of a view expands it again, and so does each reference to a WITH query of a streaming or materialized query)", maxViewRefs, maxViewBytes>>20)})
	}
}

func (b *binder) overExpanded() bool { return b.viewRefs > maxViewRefs || b.viewBytes > maxViewBytes }

// bindView expands a view named in FROM; ok is false when the name is not
// a view. Errors inside the view's text are reported at the reference,
// naming the view.
func (b *binder) bindView(f *sql.TableName) (n Node, sc *scope, ok bool) {
	vc := b.views()
	if vc == nil {
		return nil, nil, false
	}
	id := b.ident(f.Name)
	def, err := vc.View(b.ctx, id)
	if errors.Is(err, tablestore.ErrViewNotFound) || errors.Is(err, tablestore.ErrInvalid) {
		return nil, nil, false
	}
	if err != nil {
		// Not necessarily a view: the lookup fails the same way for a
		// table (a database the user may not read, say).
		b.failWrap(f.Pos, err, "%s: %v", id, err)
	}
	if slices.Contains(b.viewStack, id) {
		b.fail(f.Pos, "view %s refers to itself", id)
	}
	b.expand(f.Pos, len(def.Query))
	if f.SystemTime != nil || len(f.Hints) > 0 && !b.streamingHint(f.Hints, id) {
		b.fail(f.Pos, "view %s: FOR SYSTEM_TIME AS OF and table hints other than a streaming one (OPTIONS('scan.mode'=...)) apply to tables, not views", id)
	}
	q := b.viewQuery(f.Pos, id, def.Query)
	savedStream := b.viewStream
	if len(f.Hints) > 0 {
		b.viewStream = f.Hints
	}
	defer func() { b.viewStream = savedStream }()
	n = func() Node {
		defer func() {
			if r := recover(); r != nil {
				bf, isFail := r.(bindFail)
				if !isFail || b.overExpanded() {
					panic(r) // the limit is the statement's, not this view's
				}
				b.failWrap(f.Pos, bf.err, "view %s no longer binds: %s", id, viewErrText(bf.err, def.Query))
			}
		}()
		return b.bindViewBody(id, q)
	}()
	if def.Columns != nil && len(def.Columns) != len(n.Columns()) {
		b.fail(f.Pos, "view %s no longer binds: it names %d columns but its query now produces %d", id, len(def.Columns), len(n.Columns()))
	}
	qual := id.Table
	if f.Alias != "" {
		qual = f.Alias
	}
	aliases := def.Columns
	if f.ColAliases != nil {
		aliases = f.ColAliases
	}
	return n, b.aliasScope(n, qual, aliases, f.Pos), true
}

// streamingHint reports whether hints, on a reference to view id, are one
// OPTIONS hint with scan.mode: it streams every table the view reads that
// has no hint of its own (Flink takes no hints on views; flightd needs
// one to stream a view, such as Nexmark q12's). A consumer-id is refused:
// it names one stream's position, and a view may read several tables.
func (b *binder) streamingHint(hints []*sql.Hint, id tablestore.Ident) bool {
	if len(hints) != 1 || hints[0].Name != "OPTIONS" {
		return false
	}
	mode := false
	for _, o := range hints[0].Options {
		if o.Key == "consumer-id" {
			b.fail(o.Pos, "view %s: consumer-id applies to a table's stream, not to a view's", id)
		}
		mode = mode || o.Key == "scan.mode"
	}
	return mode
}

// viewErrText is an error from a view's text with the position made
// readable against that text.
func viewErrText(err error, text string) string {
	var se *sql.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (in %q)", se.Error(), text)
	}
	return err.Error()
}

// describeView describes a view's columns as DESCRIBE does a table's.
func (b *binder) describeView(name *sql.Name) (*Query, bool) {
	// The scope names the columns as the view does (its column list).
	_, sc, ok := b.bindView(&sql.TableName{Pos: name.Pos, Name: name})
	if !ok {
		return nil, false
	}
	var rows [][]string
	for _, c := range sc.cols {
		null := "YES"
		if !c.col.Nullable {
			null = "NO"
		}
		rows = append(rows, []string{c.name, SQLTypeName(c.col.Type), null, ""})
	}
	return b.stringValues([]string{"name", "type", "null", "key"}, rows), true
}

// showCreateView renders a view's DDL.
func (b *binder) showCreateView(name *sql.Name) *Query {
	vc := b.views()
	if vc == nil {
		b.notImplemented(name.Pos, "views in this catalog")
	}
	id := b.ident(name)
	def, err := vc.View(b.ctx, id)
	if err != nil {
		b.failWrap(name.Pos, err, "view %s: %v", id, err)
	}
	q := b.viewQuery(name.Pos, id, def.Query)
	cv := &sql.CreateView{Name: &sql.Name{Parts: []string{id.Database, id.Table}}, Columns: def.Columns, As: q}
	return b.stringValues([]string{"create_view"}, [][]string{{sql.Format(cv)}})
}

// viewQuery parses the stored definition of view id, failing at pos when it
// no longer parses or is not a query.
func (b *binder) viewQuery(pos sql.Pos, id tablestore.Ident, text string) *sql.Query {
	stmt, err := sql.ParseOne(text)
	if err != nil {
		b.failWrap(pos, err, "view %s no longer parses: %v", id, err)
	}
	q, ok := stmt.(*sql.Query)
	if !ok {
		b.fail(pos, "view %s: stored definition is not a query", id)
	}
	return q
}
