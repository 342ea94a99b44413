package stream

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// replay is an input that returns prepared chunks, then io.EOF: a
// changelog spelled out by a test.
type replay struct {
	schema *arrow.Schema
	chunks []Chunk
	i      int
	wait   <-chan struct{} // closed before the first chunk (nil: none)
	done   chan struct{}   // closed at the end (nil: none)
}

func (r *replay) Schema() *arrow.Schema      { return r.schema }
func (r *replay) Open(context.Context) error { return nil }
func (r *replay) Next(ctx context.Context) (Chunk, error) {
	if r.wait != nil {
		// A join that failed closes its inputs without reading the other
		// one to its end: the context's cancel frees this one.
		select {
		case <-r.wait:
		case <-ctx.Done():
			return Chunk{}, ctx.Err()
		}
	}
	if r.i == len(r.chunks) {
		if r.done != nil {
			close(r.done)
			r.done = nil
		}
		return Chunk{}, io.EOF
	}
	r.i++
	return r.chunks[r.i-1], nil
}

func (r *replay) Close() error {
	for _, c := range r.chunks {
		if c.Batch != nil {
			c.Batch.Release()
		}
	}
	r.chunks = nil
	return nil
}

// again returns a replay of the same chunks, from the start.
func (r *replay) again() *replay {
	c := &replay{schema: r.schema}
	for _, ch := range r.chunks {
		if ch.Batch != nil {
			ch.Batch.Retain()
		}
		c.chunks = append(c.chunks, ch)
	}
	return c
}

// int64Changes builds a replay over int64 columns named cols from
// snapshots of rows "kind v1 v2 ...": each snapshot is one batch and a
// marker (source 0 of n; snapshot ids from 1).
func int64Changes(t testing.TB, mem memory.Allocator, cols []string, idx, n int, snapshots ...[]string) *replay {
	var fields []arrow.Field
	for _, c := range cols {
		fields = append(fields, arrow.Field{Name: c, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}
	r := &replay{schema: withKind(fields)}
	for s, rows := range snapshots {
		pos := make(Pos, n)
		pos[idx] = int64(s + 1)
		if len(rows) > 0 {
			b := array.NewRecordBuilder(mem, r.schema)
			for _, row := range rows {
				f := strings.Fields(row)
				b.Field(0).(*array.StringBuilder).Append(f[0])
				for i, v := range f[1:] {
					if v == "NULL" {
						b.Field(i + 1).AppendNull()
						continue
					}
					var x int64
					if _, err := fmt.Sscan(v, &x); err != nil {
						t.Fatal(err)
					}
					b.Field(i + 1).(*array.Int64Builder).Append(x)
				}
			}
			r.chunks = append(r.chunks, Chunk{Batch: b.NewRecordBatch(), Pos: pos})
			b.Release()
		}
		r.chunks = append(r.chunks, Chunk{Pos: pos})
	}
	return r
}

// collect drains op into lines "snapshot: kind v1 v2" per row and
// "snapshot: marker" per marker; batch boundaries as "|".
func collect(t testing.TB, op Operator) []string {
	t.Helper()
	ctx := context.Background()
	if err := op.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	var out []string
	for {
		c, err := op.Next(ctx)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Batch == nil {
			out = append(out, fmt.Sprintf("%v: marker", c.Pos))
			continue
		}
		var rows []string
		for i := 0; i < int(c.Batch.NumRows()); i++ {
			var f []string
			for j := 0; j < int(c.Batch.NumCols()); j++ {
				f = append(f, c.Batch.Column(j).ValueStr(i))
			}
			rows = append(rows, strings.Join(f, " "))
		}
		out = append(out, fmt.Sprintf("%v: %s", c.Pos, strings.Join(rows, " | ")))
	}
}

func col(i int, name string) exec.Expr { return exec.NewColumn(i, arrow.PrimitiveTypes.Int64, name) }
