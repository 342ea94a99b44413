package engine

import (
	"context"
	"crypto/rand"
	stdcsv "encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/internal/arrowstr"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/vectorized"
)

// COPY reads and writes files of one directory of the server
// (Config.FilesDir), never outside it: a path is relative to it (or
// absolute within it), and os.Root refuses ".." and symbolic links that
// lead out. Without the directory COPY is refused.

// errFileExists: COPY TO does not replace a file.
var errFileExists = NewError(KindAlreadyExists, "file exists")

// allowFiles: files on the server hold whatever was exported there, from
// any database, so only a user with admin on every database (grant: user
// admin *) reads or writes them.
func (s *Session) allowFiles() error {
	if err := s.allow("*", Admin); err != nil {
		return fmt.Errorf("files on the server (COPY, read_parquet, read_csv) need admin on every database (grant: user admin *): %w", err)
	}
	return nil
}

// copyBatchRows is how many rows a Parquet or CSV reader decodes at once.
const copyBatchRows = 64 << 10

// filesRoot opens the files directory and names f's path within it.
func (e *Engine) filesRoot(f plan.File) (*os.Root, string, error) {
	dir := e.cfg.FilesDir
	if f.Path == "" {
		return nil, "", fmt.Errorf("an empty path names no file: %w", ErrInvalid)
	}
	if dir == "" {
		return nil, "", fmt.Errorf("%q: files on the server are off (start flightd with -files-dir): %w", f.Path, ErrDenied)
	}
	rel := f.Path
	if filepath.IsAbs(rel) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, "", err
		}
		if rel, err = filepath.Rel(abs, filepath.Clean(f.Path)); err != nil {
			rel = ".."
		}
	}
	if !filepath.IsLocal(rel) {
		return nil, "", fmt.Errorf("%q: the path leaves the files directory: %w", f.Path, ErrDenied)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", fmt.Errorf("files directory: %w", err)
	}
	return root, rel, nil
}

// fileError says what went wrong with the file at path: a missing file
// or directory is invalid input, anything else (a link leading out of the
// directory, no permission) is refused.
func fileError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%q: no such file in the files directory: %w", path, ErrInvalid)
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%q: the file exists (COPY TO writes new files only): %w", path, errFileExists)
	}
	return fmt.Errorf("%q: %v: %w", path, err, ErrDenied)
}

// copyFrom appends the file's rows to the table in one commit (or into
// the transaction) through bulk ingest, which converts them to the
// table's types as it converts a client's.
func (st *Statement) copyFrom(ctx context.Context, c *plan.CopyFrom) (int64, error) {
	rdr, done, err := st.s.e.openRows(ctx, c.File, c.Table.Schema())
	if err != nil {
		return 0, fmt.Errorf("COPY FROM %w", err)
	}
	defer done()
	n, err := st.s.Ingest(ctx, IngestRequest{Table: c.Table.Ident(), Mode: IngestAppend, Txn: st.tx}, rdr)
	if err != nil {
		return 0, fmt.Errorf("COPY FROM %q: %w", c.File.Path, err)
	}
	return n, nil
}

// fileRows makes a file's decoding errors bad input, and strings that are
// not UTF-8 (CSV and Parquet readers pass on any bytes) one of those.
type fileRows struct {
	BatchReader
	read int64 // rows in the batches returned so far
	err  error
}

func (r *fileRows) Next() bool {
	if r.err != nil || !r.BatchReader.Next() {
		return false
	}
	b := r.BatchReader.RecordBatch()
	first := r.read + 1
	r.read += b.NumRows()
	for i, c := range b.Columns() {
		var bad *arrowstr.NotUTF8
		if errors.As(arrowstr.CheckUTF8(c), &bad) {
			where := fmt.Sprintf("row %d", first+int64(bad.Index))
			if bad.Nested {
				where = fmt.Sprintf("a value nested in rows %d to %d", first, r.read)
			}
			r.err = fmt.Errorf("%s, column %s: %q: %w", where, b.ColumnName(i), bad.Value, ErrInvalidText)
			return false
		}
	}
	return true
}

func (r *fileRows) Err() error {
	if r.err != nil {
		return r.err
	}
	if err := r.BatchReader.Err(); err != nil {
		return fmt.Errorf("decoding the file: %v: %w", err, ErrInvalid)
	}
	return nil
}

// copyTo writes the query's rows to a new file: into a hidden temporary
// file first, linked to its name only when complete, so the name never
// shows part of a file and an existing file is never replaced.
func (st *Statement) copyTo(ctx context.Context, c *plan.CopyTo, params arrow.RecordBatch) (int64, error) {
	root, rel, err := st.s.e.filesRoot(c.File)
	if err != nil {
		return 0, fmt.Errorf("COPY TO %w", err)
	}
	defer root.Close()
	if _, err := root.Lstat(rel); err == nil || !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			err = fs.ErrExist
		}
		return 0, fmt.Errorf("COPY TO %w", fileError(c.File.Path, err))
	}
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(filepath.Dir(rel), ".copy-"+hex.EncodeToString(suffix[:])+".tmp")
	fh, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fmt.Errorf("COPY TO %w", fileError(c.File.Path, err))
	}
	defer root.Remove(tmp)
	n, err := st.writeFile(ctx, c, params, fh)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("COPY TO %q: %w", c.File.Path, err)
	}
	if err := root.Link(tmp, rel); err != nil {
		return 0, fmt.Errorf("COPY TO %w", fileError(c.File.Path, err))
	}
	return n, nil
}

// writeFile streams the query's rows into fh in the file's format and
// syncs it.
func (st *Statement) writeFile(ctx context.Context, c *plan.CopyTo, params arrow.RecordBatch, fh *os.File) (int64, error) {
	schema := c.Query.Schema()
	var (
		write func(arrow.RecordBatch) error
		done  func() error
	)
	if c.File.Format == "parquet" {
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithAllocator(st.s.e.cfg.Mem))
		// The writer closes a sink it can; the file is synced after.
		pw, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{fh}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return 0, fmt.Errorf("%v: %w", err, ErrNotSupported)
		}
		write, done = pw.WriteBuffered, pw.Close
	} else {
		cw := csv.NewWriter(fh, schema, csv.WithHeader(c.File.Header), csv.WithComma(c.File.Delimiter), csv.WithNullWriter(""))
		// The writer writes the header with its first batch: an empty one
		// writes it now, so that a query of no rows gets it too.
		bld := array.NewRecordBuilder(st.s.e.cfg.Mem, schema)
		empty := bld.NewRecordBatch()
		bld.Release()
		err := cw.Write(empty)
		empty.Release()
		if err != nil {
			return 0, err
		}
		write = cw.Write
		done = func() error { cw.Flush(); return cw.Error() }
	}
	var n int64
	err := st.pull(ctx, c.Query, params, func(b arrow.RecordBatch) error {
		n += b.NumRows()
		return write(b)
	})
	if derr := done(); err == nil {
		err = derr
	}
	if err == nil {
		err = fh.Sync()
	}
	return n, err
}

var _ plan.FileCatalog = (*catalog)(nil)

// ReadFiles opens files for read_parquet and read_csv, in the files
// directory only: the schema is the first file's (a CSV file's types
// inferred from its values), each column in its stored type; the reader
// converts every file's columns to it, as ingest converts a client's, and
// a file of other columns fails the read.
func (c *catalog) ReadFiles(ctx context.Context, files []plan.File) (*arrow.Schema, func(ctx context.Context) (exec.BatchSource, error), error) {
	c.opaque = true
	if err := c.s.allowFiles(); err != nil {
		return nil, nil, err
	}
	e := c.s.e
	matched, err := e.expandGlobs(files)
	if err != nil {
		return nil, nil, err
	}
	first, closeFirst, err := e.openRows(ctx, matched[0], nil)
	if err != nil {
		return nil, nil, err
	}
	in := first.Schema()
	closeFirst()
	schema, err := storedSchema(in)
	if err != nil {
		return nil, nil, fmt.Errorf("%q: %v: %w", files[0].Path, err, ErrInvalid)
	}
	open := func(ctx context.Context) (exec.BatchSource, error) {
		matched, err := e.expandGlobs(files) // again: a prepared query reads the files there now
		if err != nil {
			return nil, err
		}
		return &fileSource{e: e, files: matched, in: in, schema: schema}, nil
	}
	return schema, open, nil
}

// expandGlobs replaces each path with a glob pattern (*, ? or [...], as
// path.Match) by the files of the files directory it matches, in name
// order; a pattern matching nothing is an error.
func (e *Engine) expandGlobs(files []plan.File) ([]plan.File, error) {
	var out []plan.File
	for _, f := range files {
		if !strings.ContainsAny(f.Path, "*?[") {
			out = append(out, f)
			continue
		}
		root, rel, err := e.filesRoot(f)
		if err != nil {
			return nil, err
		}
		matches, err := fs.Glob(root.FS(), filepath.ToSlash(rel))
		root.Close()
		if err != nil {
			return nil, fmt.Errorf("%q: %v: %w", f.Path, err, ErrInvalid)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%q: no file in the files directory matches: %w", f.Path, ErrInvalid)
		}
		for _, m := range matches {
			g := f
			g.Path = m
			out = append(out, g)
		}
	}
	return out, nil
}

// openRows opens a Parquet or CSV file of the files directory as a
// stream of batches; a CSV file is read as columns of csvSchema, or
// of the types its values suggest when nil. done releases it.
func (e *Engine) openRows(ctx context.Context, f plan.File, csvSchema *arrow.Schema) (BatchReader, func(), error) {
	root, rel, err := e.filesRoot(f)
	if err != nil {
		return nil, nil, err
	}
	fh, err := root.Open(rel)
	root.Close()
	if err != nil {
		return nil, nil, fileError(f.Path, err)
	}
	if fi, err := fh.Stat(); err != nil || !fi.Mode().IsRegular() {
		fh.Close()
		return nil, nil, fmt.Errorf("%q: not a regular file: %w", f.Path, ErrInvalid)
	}
	mem := e.cfg.Mem
	if f.Format == "csv" {
		opts := []csv.Option{csv.WithAllocator(mem), csv.WithHeader(f.Header), csv.WithComma(f.Delimiter),
			csv.WithNullReader(true, ""), csv.WithChunk(copyBatchRows)}
		if csvSchema == nil {
			schema, err := inferCSV(fh, f.Header, f.Delimiter)
			if err == nil {
				_, err = fh.Seek(0, io.SeekStart)
			}
			if err != nil {
				fh.Close()
				return nil, nil, fmt.Errorf("%q: not a readable CSV file: %v: %w", f.Path, err, ErrInvalid)
			}
			csvSchema = schema
		}
		cr := csv.NewReader(fh, csvSchema, opts...)
		return &fileRows{BatchReader: cr}, func() { cr.Release(); fh.Close() }, nil
	}
	pf, err := file.NewParquetReader(fh)
	if err != nil {
		fh.Close()
		return nil, nil, fmt.Errorf("%q: not a readable Parquet file: %v: %w", f.Path, err, ErrInvalid)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: copyBatchRows}, mem)
	var schema *arrow.Schema
	if err == nil {
		schema, err = fr.Schema()
	}
	if err == nil {
		for _, fld := range schema.Fields() {
			if n := vectorized.MapNesting(fld.Type); n > vectorized.MaxMapNesting {
				err = fmt.Errorf("column %s nests MAP types %d deep, over the limit of %d", fld.Name, n, vectorized.MaxMapNesting)
				break
			}
		}
	}
	if err == nil {
		var rr pqarrow.RecordReader
		if rr, err = fr.GetRecordReader(ctx, nil, nil); err == nil {
			return &fileRows{BatchReader: rr}, func() { rr.Release(); pf.Close() }, nil
		}
	}
	pf.Close()
	return nil, nil, fmt.Errorf("%q: %v: %w", f.Path, err, ErrInvalid)
}

// csvInferRows is how many records read_csv reads to type its columns:
// arrow's inferring reader types them by the first record alone, so a
// DOUBLE column whose first value was whole became BIGINT and a later 0.5
// failed the query.
const csvInferRows = 1000

// inferCSV names and types the columns of a CSV file by its header (or
// f0, f1, ... without one) and its first csvInferRows records: each column
// gets the first of BIGINT, DOUBLE, BOOLEAN, DATE and TIMESTAMP(6) that all
// its non-empty values parse as, else STRING (empty fields are NULL; a
// column without a value in them is STRING).
func inferCSV(r io.Reader, header bool, comma rune) (*arrow.Schema, error) {
	const (
		isInt = 1 << iota
		isFloat
		isBool
		isDate
		isTimestamp
	)
	parses := []struct {
		kind int
		ok   func(string) bool
	}{
		{isInt, func(v string) bool { _, err := strconv.ParseInt(v, 10, 64); return err == nil }},
		{isFloat, func(v string) bool { _, err := strconv.ParseFloat(v, 64); return err == nil }},
		{isBool, func(v string) bool { return strings.EqualFold(v, "true") || strings.EqualFold(v, "false") }},
		{isDate, func(v string) bool { _, err := time.Parse("2006-01-02", v); return err == nil }},
		{isTimestamp, func(v string) bool { _, err := arrow.TimestampFromString(v, arrow.Microsecond); return err == nil }},
	}
	types := []struct {
		kind int
		typ  arrow.DataType
	}{
		{isInt, arrow.PrimitiveTypes.Int64}, {isFloat, arrow.PrimitiveTypes.Float64}, {isBool, arrow.FixedWidthTypes.Boolean},
		{isDate, arrow.FixedWidthTypes.Date32}, {isTimestamp, &arrow.TimestampType{Unit: arrow.Microsecond}},
	}
	cr := stdcsv.NewReader(r)
	cr.Comma = comma
	var names []string
	var can []int // per column, the kinds every value so far parses as
	var seen []bool
	for n := 0; n <= csvInferRows; n++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if names == nil {
			can, seen = make([]int, len(rec)), make([]bool, len(rec))
			for i := range rec {
				can[i] = isInt | isFloat | isBool | isDate | isTimestamp
				names = append(names, fmt.Sprintf("f%d", i))
			}
			if header {
				names = slices.Clone(rec)
				continue
			}
		}
		for i, v := range rec {
			if v == "" || i >= len(can) {
				continue
			}
			seen[i] = true
			for _, p := range parses {
				if can[i]&p.kind != 0 && !p.ok(v) {
					can[i] &^= p.kind
				}
			}
		}
	}
	if names == nil {
		return nil, errors.New("no header or rows to tell the columns by")
	}
	fields := make([]arrow.Field, len(names))
	for i, name := range names {
		fields[i] = arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
		for _, t := range types {
			if seen[i] && can[i]&t.kind != 0 {
				fields[i].Type = t.typ
				break
			}
		}
	}
	return arrow.NewSchema(fields, nil), nil
}

// fileSource reads files one after another, converting each batch's
// columns to the stored types.
type fileSource struct {
	e      *Engine
	files  []plan.File
	in     *arrow.Schema // the first file's
	schema *arrow.Schema
	rdr    BatchReader
	done   func()
	cur    arrow.RecordBatch
}

func (s *fileSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	for {
		if s.rdr == nil {
			if len(s.files) == 0 {
				return nil, io.EOF
			}
			f := s.files[0]
			var csvSchema *arrow.Schema
			if f.Format == "csv" {
				csvSchema = s.in // every file as the first was read
			}
			rdr, done, err := s.e.openRows(ctx, f, csvSchema)
			if err != nil {
				return nil, err
			}
			if !rdr.Schema().Equal(s.in) && f.Format == "parquet" {
				done()
				return nil, fmt.Errorf("%q has columns %s, unlike %s: %w", f.Path, rdr.Schema(), s.in, ErrInvalid)
			}
			s.files, s.rdr, s.done = s.files[1:], rdr, done
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !s.rdr.Next() {
			err := s.rdr.Err()
			s.done()
			s.rdr = nil
			if err != nil {
				return nil, err
			}
			continue
		}
		b := s.rdr.RecordBatch()
		if b.NumRows() == 0 {
			continue
		}
		cols := make([]arrow.Array, b.NumCols())
		for i, col := range b.Columns() {
			c, err := convertColumn(ctx, s.e.cfg.Mem, col, s.schema.Field(i).Type)
			if err != nil {
				for _, c := range cols[:i] {
					c.Release()
				}
				return nil, fmt.Errorf("column %q: %w", s.schema.Field(i).Name, err)
			}
			cols[i] = c
		}
		s.cur = array.NewRecordBatch(s.schema, cols, b.NumRows())
		for _, c := range cols {
			c.Release()
		}
		return s.cur, nil
	}
}

func (s *fileSource) Close() error {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	if s.rdr != nil {
		s.done()
		s.rdr = nil
	}
	return nil
}
