package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/plan"
)

// COPY reads and writes files of one directory of the server
// (Config.FilesDir), never outside it: a path is relative to it (or
// absolute within it), and os.Root refuses ".." and symbolic links that
// lead out. Without the directory COPY is refused.

// errFileExists: COPY TO does not replace a file.
var errFileExists = NewError(KindAlreadyExists, "file exists")

// copyBatchRows is how many rows a Parquet or CSV reader decodes at once.
const copyBatchRows = 64 << 10

// filesRoot opens the files directory and names f's path within it.
func (e *Engine) filesRoot(f plan.File) (*os.Root, string, error) {
	dir := e.cfg.FilesDir
	if dir == "" {
		return nil, "", fmt.Errorf("COPY %q: files on the server are off (start flightd with -files-dir): %w", f.Path, ErrDenied)
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
		return nil, "", fmt.Errorf("COPY %q: the path leaves the files directory: %w", f.Path, ErrDenied)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", fmt.Errorf("COPY: files directory: %w", err)
	}
	return root, rel, nil
}

// fileError says what went wrong with the file at path: a missing file
// or directory is invalid input, anything else (a link leading out of the
// directory, no permission) is refused.
func fileError(op, path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %q: no such file in the files directory: %w", op, path, ErrInvalid)
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s %q: the file exists (COPY TO writes new files only): %w", op, path, errFileExists)
	}
	return fmt.Errorf("%s %q: %v: %w", op, path, err, ErrDenied)
}

// copyFrom appends the file's rows to the table in one commit (or into
// the transaction) through bulk ingest, which converts them to the
// table's types as it converts a client's.
func (st *Statement) copyFrom(ctx context.Context, c *plan.CopyFrom) (int64, error) {
	root, rel, err := st.s.e.filesRoot(c.File)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	fh, err := root.Open(rel)
	if err != nil {
		return 0, fileError("COPY FROM", c.File.Path, err)
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("COPY FROM %q: not a regular file: %w", c.File.Path, ErrInvalid)
	}
	mem := st.s.e.cfg.Mem
	var rdr BatchReader
	if c.File.Format == "parquet" {
		pf, err := file.NewParquetReader(fh)
		if err != nil {
			return 0, fmt.Errorf("COPY FROM %q: not a readable Parquet file: %v: %w", c.File.Path, err, ErrInvalid)
		}
		defer pf.Close()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: copyBatchRows}, mem)
		if err != nil {
			return 0, fmt.Errorf("COPY FROM %q: %v: %w", c.File.Path, err, ErrInvalid)
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			return 0, fmt.Errorf("COPY FROM %q: %v: %w", c.File.Path, err, ErrInvalid)
		}
		defer rr.Release()
		rdr = rr
	} else {
		cr := csv.NewReader(fh, c.Table.Schema(), csv.WithAllocator(mem), csv.WithHeader(c.File.Header), csv.WithComma(c.File.Delimiter),
			csv.WithNullReader(true, ""), csv.WithChunk(copyBatchRows))
		defer cr.Release()
		rdr = cr
	}
	id := c.Table.Ident()
	n, err := st.s.Ingest(ctx, IngestRequest{Table: id, Mode: IngestAppend, Txn: st.tx}, &fileRows{BatchReader: rdr})
	if err != nil {
		return 0, fmt.Errorf("COPY FROM %q: %w", c.File.Path, err)
	}
	return n, nil
}

// fileRows makes a file's decoding errors bad input.
type fileRows struct{ BatchReader }

func (r *fileRows) Err() error {
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
		return 0, err
	}
	defer root.Close()
	if _, err := root.Lstat(rel); err == nil || !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			err = fs.ErrExist
		}
		return 0, fileError("COPY TO", c.File.Path, err)
	}
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(filepath.Dir(rel), ".copy-"+hex.EncodeToString(suffix[:])+".tmp")
	fh, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fileError("COPY TO", c.File.Path, err)
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
		return 0, fileError("COPY TO", c.File.Path, err)
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
