package nexmark

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/big"
	"os"
	"slices"

	"github.com/flightd/flightd/bench/tpcds"
)

// digest is an order-independent digest of a multiset of rows: the number
// of rows and, per lane, the sum of each row's 64-bit hash (of its rowKey,
// the form rows are compared in) times its count, modulo 2^64. Adding and
// retracting rows in any order gives the same digest, so a changelog is
// compared with an answer without holding either. Two multisets that
// differ have equal digests only if the differences' hashes cancel in both
// lanes: with hashes seeded at random per process, about 2^-128 for rows
// not chosen against the seeds.
type digest struct {
	rows int64
	sum  [2]uint64
}

var digestSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func (d *digest) add(key string, n int) {
	d.rows += int64(n)
	for i, h := range keyHash(key) {
		d.sum[i] += uint64(int64(n)) * h
	}
}

// keyHash is the hash of a row key in both lanes of a digest.
func keyHash(key string) [2]uint64 {
	return [2]uint64{maphash.String(digestSeeds[0], key), maphash.String(digestSeeds[1], key)}
}

// with is d with the row of key added n times.
func (d digest) with(key string, n int) digest {
	d.add(key, n)
	return d
}

// spool is a multiset of rows kept in a file, one record per change (a row
// and its count, +1 or -1), with its digest: the runner's memory does not
// grow with a result. The rows are read back (load) only to say how two
// results differ. Not safe for concurrent use.
type spool struct {
	f       *os.File
	w       *bufio.Writer
	enc     *gob.Encoder
	records int64
	sum     digest
	first   []tpcds.Value // the first row added (nil: none), for the self-check
}

// spoolRecord is a record of a spool: F of each value as its bits, as gob
// would write -0 as 0 (it leaves zero values out).
type spoolRecord struct {
	N   int
	Row []storedValue
}

// storedValue is a tpcds.Value as stored.
type storedValue struct {
	Kind  tpcds.Kind
	Bool  bool
	Num   *big.Rat
	Scale int32
	F     uint64
	S     string
	I     int64
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, "spool-")
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriter(f)
	return &spool{f: f, w: w, enc: gob.NewEncoder(w)}, nil
}

// add records row n times (negative: retracted).
func (s *spool) add(row []tpcds.Value, n int) error {
	rec := spoolRecord{N: n, Row: make([]storedValue, len(row))}
	for i, v := range row {
		rec.Row[i] = storedValue{v.Kind, v.Bool, v.Num, v.Scale, math.Float64bits(v.F), v.S, v.I}
	}
	if err := s.enc.Encode(&rec); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if s.first == nil {
		s.first = slices.Clone(row)
	}
	s.records++
	s.sum.add(rowKey(row), n)
	return nil
}

// mark is a point in a spool: its first records records and their digest.
type mark struct {
	records int64
	sum     digest
}

func (s *spool) mark() mark { return mark{s.records, s.sum} }

// each passes the first n records to fn, in the order they were added.
func (s *spool) each(n int64, fn func(row []tpcds.Value, count int) error) error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	f, err := os.Open(s.f.Name())
	if err != nil {
		return err
	}
	defer f.Close()
	dec := gob.NewDecoder(bufio.NewReader(f))
	for i := int64(0); i < n; i++ {
		var rec spoolRecord // new: gob decodes into the *big.Rat it finds
		if err := dec.Decode(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("spool: record %d of %d: %w", i, n, err)
		}
		row := make([]tpcds.Value, len(rec.Row))
		for j, v := range rec.Row {
			row[j] = tpcds.Value{Kind: v.Kind, Bool: v.Bool, Num: v.Num, Scale: v.Scale, F: math.Float64frombits(v.F), S: v.S, I: v.I}
		}
		if err := fn(row, rec.N); err != nil {
			return err
		}
	}
	return nil
}

// load is the multiset of the first n records, in memory.
func (s *spool) load(n int64) (rowSet, error) {
	out := rowSet{}
	err := s.each(n, func(row []tpcds.Value, count int) error {
		out.add(row, count)
		return nil
	})
	return out, err
}

// remove deletes the spool's file.
func (s *spool) remove() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// answer is a batch answer as the streamed results are compared with it:
// a spool of its rows and, for a ROW_NUMBER() query whose partition keys
// are in the result, the spool of its answer with RANK() (ties).
type answer struct {
	rows *spool
	tied *spool // nil: compared exactly
	ties *ties  // the tie columns; its candidates are read from tied
}

func (a *answer) remove() {
	a.rows.remove()
	if a.tied != nil {
		a.tied.remove()
	}
}

// outcome is the comparison of a result with an answer.
type outcome struct {
	diff string // "": equal
	tied int    // rows accepted as another choice among ties
	// want and got are the two in memory when their digests differed
	// (nil when they were equal).
	want *expected
	got  rowSet
}

// compare compares the result got (the first m.records records of its
// spool) with a: equal digests are equal results; otherwise both are read
// back and diffed by key, for what differs or for another choice among
// ties.
func (a *answer) compare(got *spool, m mark) (outcome, error) {
	if m.sum == a.rows.sum {
		return outcome{}, nil
	}
	want, err := a.load()
	if err != nil {
		return outcome{}, err
	}
	rows, err := got.load(m.records)
	if err != nil {
		return outcome{}, err
	}
	d, tied := want.diff(rows)
	return outcome{diff: d, tied: tied, want: want, got: rows}, nil
}

// load reads the answer into memory.
func (a *answer) load() (*expected, error) {
	rows, err := a.rows.load(a.rows.records)
	if err != nil {
		return nil, err
	}
	e := &expected{rows: rows}
	if a.ties != nil {
		t := *a.ties
		t.candidates = rowSet{}
		if err := a.tied.each(a.tied.records, func(row []tpcds.Value, n int) error {
			t.addCandidate(row, n)
			return nil
		}); err != nil {
			return nil, err
		}
		e.ties = &t
	}
	return e, nil
}

// selfCheck checks that the comparison that found the result at m equal
// (o) would have reported it with a row taken away, a row added, or a row
// of a window still open (openRow, nil: none) added: in memory as
// expected.selfCheck does if o was diffed there, by digest otherwise.
func (a *answer) selfCheck(o outcome, got *spool, m mark, openRow []tpcds.Value) error {
	var open rowSet
	if openRow != nil {
		open = rowSet{}
		open.add(openRow, 1)
	}
	if o.want != nil {
		return o.want.selfCheck(o.got, open)
	}
	if m.sum.rows == 0 {
		if a.rows.sum.rows > 0 {
			return fmt.Errorf("self-check: nothing streamed, yet equal to %d batch rows", a.rows.sum.rows)
		}
		return nil
	}
	first := rowKey(got.first)
	perturbed := map[string]digest{"a row taken away": m.sum.with(first, -1), "a row added": m.sum.with(first, 1)}
	if openRow != nil {
		perturbed["a row of an open window added"] = m.sum.with(rowKey(openRow), 1)
	}
	for what, p := range perturbed {
		if p == a.rows.sum {
			return fmt.Errorf("self-check: the result with %s still compares equal", what)
		}
	}
	return nil
}
