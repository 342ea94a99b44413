package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/tablestore"
)

// Source reads a table's changes (tablestore.ChangeReader) as source
// number idx of n: a marker ends every snapshot that had rows, and the
// reader's progress markers come through flagged CaughtUp, its image
// markers flagged Image.
type Source struct {
	table  *tablestore.Table
	spec   tablestore.StreamSpec
	schema *arrow.Schema
	perm   []int
	idx, n int

	r    *tablestore.ChangeReader
	cur  int64 // snapshot whose rows are being returned (0: none)
	held *tablestore.Change
	// imageStart: the reader began a full read whose first chunk is not
	// returned yet.
	imageStart bool
	out        arrow.RecordBatch
	closed     bool
	wm         *watermarkGen // nil: the source has no watermark
	// cp, when set, asks for barriers; barrier is the last one this
	// source flagged a marker with, last the snapshot of its last marker.
	cp      *Checkpoints
	cpIdx   int
	barrier int64
	last    int64
}

// NewSource reads spec from table; output column i is column perm[i] of
// the reader's batches (0 is the row kind), so schema's column 0 must be
// the row kind.
func NewSource(table *tablestore.Table, spec tablestore.StreamSpec, schema *arrow.Schema, perm []int, idx, n int) *Source {
	return &Source{table: table, spec: spec, schema: schema, perm: perm, idx: idx, n: n}
}

// SetWatermark makes the source's markers carry a watermark: the largest
// rowtime (compiled over Schema()) of the rows read, minus delay.
func (s *Source) SetWatermark(ec *exec.Context, rowtime exec.Expr, delay time.Duration) {
	s.wm = &watermarkGen{ec: ec, rowtime: rowtime, delay: delay}
}

// marker is the marker of snapshot.
func (s *Source) marker(snapshot int64) Chunk {
	c := Chunk{Pos: s.pos(snapshot)}
	if s.wm != nil {
		c.Watermark = s.wm.current()
	}
	s.last = snapshot
	if s.cp != nil {
		if n := s.cp.requested.Load(); n > s.barrier {
			c.Barrier, s.barrier = n, n
			start := time.Now()
			w := &StateWriter{}
			s.state(w)
			s.cp.put(n, s.cpIdx, savedState{pieces: w.pieces()}, start)
		}
	}
	return c
}

// SaveState saves the snapshot of the last marker and the watermark's
// event time.
func (s *Source) SaveState(w *StateWriter) error {
	s.state(w)
	return nil
}

func (s *Source) state(w *StateWriter) {
	w.Varint(s.last)
	if s.wm == nil || !s.wm.seen {
		w.Varint(0)
		return
	}
	w.Varint(1)
	w.Varint(s.wm.max.Unix())
	w.Varint(int64(s.wm.max.Nanosecond()))
}

// RestoreState makes the source read the changes after the saved snapshot
// (the state of the operators above, restored too, holds everything up
// to it).
func (s *Source) RestoreState(r *StateReader) error {
	last, err := r.Varint()
	if err != nil {
		return err
	}
	seen, err := r.Varint()
	if err != nil {
		return err
	}
	if last < 0 || seen != 0 && s.wm == nil {
		return fmt.Errorf("%w: snapshot %d, watermark %d", errCorruptCheckpoint, last, seen)
	}
	if seen != 0 {
		sec, err := r.Varint()
		if err != nil {
			return err
		}
		nsec, err := r.Varint()
		if err != nil {
			return err
		}
		s.wm.max, s.wm.seen = time.Unix(sec, nsec).UTC(), true
	}
	s.spec.Start, s.spec.SnapshotID, s.spec.Tag = tablestore.StreamFromSnapshot, last+1, ""
	s.last = last
	return r.end()
}

func (s *Source) Schema() *arrow.Schema { return s.schema }

func (s *Source) Open(ctx context.Context) error {
	if s.r != nil {
		return nil
	}
	r, err := s.table.NewChangeReader(ctx, s.spec)
	if err != nil {
		return fmt.Errorf("stream %s: %w", s.table.Ident(), err)
	}
	s.r = r
	return nil
}

func (s *Source) pos(snapshot int64) Pos {
	p := make(Pos, s.n)
	p[s.idx] = snapshot
	return p
}

func (s *Source) Next(ctx context.Context) (Chunk, error) {
	if s.out != nil {
		s.out.Release()
		s.out = nil
	}
	for {
		var ch tablestore.Change
		if s.held != nil {
			ch, s.held = *s.held, nil
		} else {
			var err error
			if ch, err = s.r.Next(ctx); err != nil {
				if errors.Is(err, io.EOF) && s.cur != 0 {
					// A bounded stream ends its last snapshot first.
					cur := s.cur
					s.cur = 0
					return s.marker(cur), nil
				}
				return Chunk{}, err
			}
		}
		if ch.Image == tablestore.ImageStart {
			s.imageStart = true // marks the first chunk of the full read
			continue
		}
		if ch.Batch == nil {
			s.cur = 0
			c := s.marker(ch.Snapshot)
			c.CaughtUp, c.Image, c.ImageStart = ch.Image == tablestore.NoImage, ch.Image, s.imageStart
			s.imageStart = false
			return c, nil
		}
		if ch.Batch.NumRows() == 0 {
			continue
		}
		if s.cur != 0 && ch.Snapshot != s.cur {
			// The rows stay valid: the reader is not called again before
			// they are returned.
			held := ch
			s.held = &held
			cur := s.cur
			s.cur = 0
			return s.marker(cur), nil
		}
		s.cur = ch.Snapshot
		if s.cp != nil {
			s.cp.rows.Add(ch.Batch.NumRows())
		}
		cols := make([]arrow.Array, len(s.perm))
		for i, p := range s.perm {
			cols[i] = ch.Batch.Column(p)
		}
		s.out = array.NewRecordBatch(s.schema, cols, ch.Batch.NumRows())
		if s.wm != nil {
			if err := s.wm.observe(ctx, s.out); err != nil {
				return Chunk{}, err
			}
		}
		c := Chunk{Batch: s.out, Pos: s.pos(ch.Snapshot), Image: ch.Image, ImageStart: s.imageStart}
		s.imageStart = false
		return c, nil
	}
}

// seed calls fn with the content of the snapshot the stream's changes apply
// to, as +I batches of the source's schema, when the stream does not return
// it itself (a start without the full snapshot): what a normalization must
// know to retract rows it has not seen.
func (s *Source) seed(ctx context.Context, mem memory.Allocator, fn func(arrow.RecordBatch) error) error {
	base := s.r.Base()
	if base == 0 || s.r.ReturnsBase() {
		return nil
	}
	scan, err := s.table.NewScan(ctx, tablestore.ScanSpec{SnapshotID: base, Columns: s.spec.Columns})
	if err != nil {
		return fmt.Errorf("stream %s: content of snapshot %d: %w", s.table.Ident(), base, err)
	}
	defer scan.Close()
	return scan.Each(ctx, func(b arrow.RecordBatch) error {
		if s.cp != nil {
			s.cp.rows.Add(b.NumRows())
		}
		kb := array.NewStringBuilder(mem)
		for range b.NumRows() {
			kb.Append(kindInsert)
		}
		kind := kb.NewArray()
		kb.Release()
		cols := make([]arrow.Array, len(s.perm))
		for i, p := range s.perm {
			if p == 0 {
				cols[i] = kind
			} else {
				cols[i] = b.Column(p - 1)
			}
		}
		out := array.NewRecordBatch(s.schema, cols, b.NumRows())
		kind.Release()
		defer out.Release()
		return fn(out)
	})
}

func (s *Source) Close() error {
	if s.out != nil {
		s.out.Release()
		s.out = nil
	}
	if s.r == nil || s.closed {
		return nil
	}
	s.closed = true
	err := s.r.Close()
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}
