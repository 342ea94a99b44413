package plan

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/sql"
)

// FileCatalog is a Catalog that reads files on the server for
// read_parquet and read_csv (the engine's, confined to its files
// directory).
type FileCatalog interface {
	// ReadFiles returns the schema of the files' rows, in the types the
	// table store keeps (the files must agree on it), and what reads them.
	ReadFiles(ctx context.Context, files []File) (*arrow.Schema, func(ctx context.Context) (exec.BatchSource, error), error)
}

// FileScanNode reads the rows of files (read_parquet, read_csv).
type FileScanNode struct {
	Files []File
	Cols  []Column
	open  func(ctx context.Context) (exec.BatchSource, error)
}

func (n *FileScanNode) Columns() []Column { return n.Cols }
func (n *FileScanNode) Inputs() []Node    { return nil }

// Rows is a guess: nothing is known of the files before they are read.
func (n *FileScanNode) Rows() float64 { return 1000 * float64(len(n.Files)) }

// bindReadFile binds read_parquet(path | ARRAY[paths]) and read_csv(path |
// ARRAY[paths] [, header => bool] [, delimiter => 'c']): the files are
// opened when the statement is bound, for their schema.
func (b *binder) bindReadFile(f *sql.TableFunc) (Node, *scope) {
	call := f.Call
	format := strings.TrimPrefix(call.Name, "read_")
	tmpl := File{Format: format, Header: true, Delimiter: ','}
	var paths []string
	for i, a := range call.Args {
		na, named := a.(*sql.NamedArg)
		if !named {
			if i > 0 {
				b.fail(a.Position(), "%s takes one path or ARRAY of paths, then named options", call.Name)
			}
			paths = b.filePaths(call.Name, a)
			continue
		}
		if format != "csv" {
			b.fail(a.Position(), "%s takes no options", call.Name)
		}
		lit, ok := na.Value.(*sql.Literal)
		switch strings.ToLower(na.Name) {
		case "header":
			if !ok || lit.Kind != sql.LitBool {
				b.fail(na.Value.Position(), "header takes TRUE or FALSE")
			}
			tmpl.Header = lit.Value == "TRUE"
		case "delimiter", "delim", "sep":
			r, n := utf8.RuneError, 0
			if ok && lit.Kind == sql.LitString {
				r, n = utf8.DecodeRuneInString(lit.Value)
			}
			if n == 0 || n != len(lit.Value) || r == '"' || r == '\n' || r == '\r' {
				b.fail(na.Value.Position(), "delimiter must be one character other than a quote or a line break")
			}
			tmpl.Delimiter = r
		default:
			b.fail(na.Pos, "unknown option %s of read_csv (header and delimiter are supported)", na.Name)
		}
	}
	if len(paths) == 0 {
		b.fail(call.Pos, "%s needs a path", call.Name)
	}
	fc, ok := b.cat.(FileCatalog)
	if !ok {
		b.notImplemented(f.Pos, call.Name+" here")
	}
	files := make([]File, len(paths))
	for i, p := range paths {
		files[i] = tmpl
		files[i].Path = p
	}
	schema, open, err := fc.ReadFiles(b.ctx, files)
	if err != nil {
		b.failWrap(call.Pos, err, "%s: %v", call.Name, err)
	}
	n := &FileScanNode{Files: files, open: open}
	for _, fd := range schema.Fields() {
		n.Cols = append(n.Cols, b.newCol(fd.Name, fd.Type, true))
	}
	qual := f.Alias
	if qual == "" {
		qual = call.Name
	}
	return n, b.aliasScope(n, qual, f.ColAliases, f.Pos)
}

// filePaths reads a path argument: a string literal or an ARRAY of them.
func (b *binder) filePaths(fn string, a sql.Expr) []string {
	var elems []sql.Expr
	switch x := a.(type) {
	case *sql.Literal:
		elems = []sql.Expr{x}
	case *sql.Collection:
		if x.Kind == "ARRAY" {
			elems = x.Elems
		}
	}
	if len(elems) == 0 {
		b.fail(a.Position(), "%s takes a path as a string literal or an ARRAY of them", fn)
	}
	var out []string
	for _, e := range elems {
		lit, ok := e.(*sql.Literal)
		if !ok || lit.Kind != sql.LitString {
			b.fail(e.Position(), "%s takes a path as a string literal or an ARRAY of them", fn)
		}
		out = append(out, lit.Value)
	}
	return out
}

func (n *FileScanNode) explain() string {
	paths := make([]string, len(n.Files))
	for i, f := range n.Files {
		paths[i] = f.Path
	}
	return fmt.Sprintf("ReadFiles %s [%s]", n.Files[0].Format, strings.Join(paths, ", "))
}
