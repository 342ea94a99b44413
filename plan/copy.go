package plan

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// File is a file on the server that COPY reads or writes. Path is as the
// statement wrote it: the engine confines it to its files directory.
type File struct {
	Path   string
	Format string // "parquet" or "csv"
	// Header and Delimiter are CSV's: a header line (default true) and
	// the field separator (default ',').
	Header    bool
	Delimiter rune
}

// CopyFrom is COPY t FROM 'file': the file's rows appended to Table in
// one commit, as a bulk ingest appends them.
type CopyFrom struct {
	Table *tablestore.Table
	File  File
}

// CopyTo is COPY t TO 'file' or COPY (query) TO 'file': Query's rows
// written to a new file.
type CopyTo struct {
	Query *Query
	File  File
}

func (*CopyFrom) boundStmt() {}
func (*CopyTo) boundStmt()   {}

func (b *binder) bindCopy(s *sql.Copy) Statement {
	f := b.copyFile(s)
	if s.From {
		t, _ := b.table(s.Table)
		b.refuseMaterializedWrite(s.Pos, t, "COPY FROM")
		return &CopyFrom{Table: t, File: f}
	}
	q := s.Query
	if q == nil {
		q = &sql.Query{Pos: s.Pos, Body: &sql.Select{Pos: s.Pos, Items: []*sql.SelectItem{{Pos: s.Pos, Expr: &sql.Star{Pos: s.Pos}}},
			From: []sql.TableRef{&sql.TableName{Pos: s.Table.Pos, Name: s.Table}}}}
	}
	b.query = true
	n, _ := b.bindQuery(q, nil, nil)
	b.defaultParamTypes()
	return &CopyTo{Query: b.finishQuery(n), File: f}
}

// copyFile reads COPY's options; the format defaults to the path's
// extension.
func (b *binder) copyFile(s *sql.Copy) File {
	f := File{Path: s.Path, Header: true, Delimiter: ','}
	if strings.TrimSpace(s.Path) == "" {
		b.fail(s.PathPos, "COPY needs a file path")
	}
	seen := map[string]bool{}
	for _, o := range s.Options {
		if seen[o.Key] {
			b.fail(o.Pos, "COPY option %s given twice", strings.ToUpper(o.Key))
		}
		seen[o.Key] = true
		switch o.Key {
		case "format":
			f.Format = strings.ToLower(o.Value)
			if f.Format != "parquet" && f.Format != "csv" {
				b.fail(o.Pos, "COPY FORMAT %s: use parquet or csv", o.Value)
			}
		case "header":
			switch strings.ToLower(o.Value) {
			case "true":
				f.Header = true
			case "false":
				f.Header = false
			default:
				b.fail(o.Pos, "COPY HEADER takes true or false, got %q", o.Value)
			}
		case "delimiter", "delim", "sep":
			r, n := utf8.DecodeRuneInString(o.Value)
			if n == 0 || n != len(o.Value) || r == '"' || r == '\n' || r == '\r' {
				b.fail(o.Pos, "COPY DELIMITER must be one character other than a quote or a line break, got %q", o.Value)
			}
			f.Delimiter = r
		default:
			b.fail(o.Pos, "unknown COPY option %s (FORMAT, HEADER and DELIMITER are supported)", strings.ToUpper(o.Key))
		}
	}
	if f.Format == "" {
		switch strings.ToLower(path.Ext(s.Path)) {
		case ".parquet":
			f.Format = "parquet"
		case ".csv":
			f.Format = "csv"
		default:
			b.fail(s.PathPos, "COPY cannot tell the format of %q: add (FORMAT parquet) or (FORMAT csv)", s.Path)
		}
	}
	if f.Format == "parquet" && (seen["header"] || seen["delimiter"] || seen["delim"] || seen["sep"]) {
		b.fail(s.Pos, "HEADER and DELIMITER are options of CSV, not of Parquet")
	}
	return f
}
