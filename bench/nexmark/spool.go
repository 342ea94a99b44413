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
	// parts, if not nil, is the digest of each part of the rows (part: the
	// answer's part of a row), kept as rows are added so that a compare
	// need not read the spool to find the parts that differ.
	parts []digest
	part  func(row []tpcds.Value) int
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
	key := rowKey(row)
	s.sum.add(key, n)
	if s.parts != nil {
		s.parts[s.part(row)].add(key, n)
	}
	return nil
}

// keepParts makes s keep the digest of each part of a's comparison if a
// has ties (whose results compare by parts when a choice differs);
// otherwise digests differ only for a wrong result, read back in full.
func (s *spool) keepParts(a *answer) {
	if a.ties != nil {
		s.parts, s.part = make([]digest, compareParts), a.part
	}
}

// mark is a point in a spool: its first records records and their digest
// (and their parts' digests if the spool keeps them).
type mark struct {
	records int64
	sum     digest
	parts   []digest
}

func (s *spool) mark() mark { return mark{s.records, s.sum, slices.Clone(s.parts)} }

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
	// parts is the digest of each part of rows (compare), once needed:
	// a stream, its paced run and its job compare with one answer.
	parts []digest
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
	// read: the digests differed and the parts that differ were read back
	// and diffed (compare), held the most rows a round of that kept in
	// memory.
	read bool
	held int
}

// compareParts is how many parts a comparison splits rows into, by the
// hash of their tie group (partition and order keys in the result; the
// whole row without ties), and compareBudget about how many rows a round
// of reading parts back holds in memory (a single part may hold more).
// Variables: tests make them small.
var (
	compareParts  = 1 << 12
	compareBudget = 1 << 18
)

// part is the part of the comparison row is in. A row of the RANK()
// answer (ties.candidates) is in its tie group's part too: its columns are
// the result's.
func (a *answer) part(row []tpcds.Value) int {
	key := row
	if a.ties != nil {
		key = make([]tpcds.Value, len(a.ties.group))
		for j, g := range a.ties.group {
			key[j] = row[g]
		}
	}
	return int(maphash.String(digestSeeds[0], rowKey(key)) % uint64(compareParts))
}

// partSums is the digest of each part of the first n records of s.
func (a *answer) partSums(s *spool, n int64) ([]digest, error) {
	sums := make([]digest, compareParts)
	err := s.each(n, func(row []tpcds.Value, c int) error {
		sums[a.part(row)].add(rowKey(row), c)
		return nil
	})
	return sums, err
}

// compare compares the result got (the first m.records records of its
// spool) with a: equal digests are equal results. Otherwise the digests of
// each part say which parts differ, and those are read back in rounds of
// about compareBudget rows and diffed by key, for what differs or for
// another choice among ties: a tie group is in one part, so the verdict is
// the whole answer's, and memory is bounded by the parts that differ, not
// by the result.
func (a *answer) compare(got *spool, m mark) (outcome, error) {
	if m.sum == a.rows.sum {
		return outcome{}, nil
	}
	if a.parts == nil {
		var err error
		if a.parts, err = a.partSums(a.rows, a.rows.records); err != nil {
			return outcome{}, err
		}
	}
	want := a.parts
	gotSums := m.parts
	if gotSums == nil {
		var err error
		if gotSums, err = a.partSums(got, m.records); err != nil {
			return outcome{}, err
		}
	}
	var differ []int
	for p := range want {
		if want[p] != gotSums[p] {
			differ = append(differ, p)
		}
	}
	o := outcome{read: true}
	var lines []string
	for len(differ) > 0 {
		sel := make([]bool, compareParts)
		n, rows := 0, int64(0)
		for ; n < len(differ); n++ {
			p := differ[n]
			r := max(want[p].rows, 0) + max(gotSums[p].rows, 0)
			if n > 0 && rows+r > int64(compareBudget) {
				break
			}
			sel[p], rows = true, rows+r
		}
		differ = differ[n:]
		e, g, err := a.loadParts(got, m.records, sel)
		if err != nil {
			return outcome{}, err
		}
		l, tied := e.diffLines(g)
		lines, o.tied = append(lines, l...), o.tied+tied
		o.held = max(o.held, len(e.rows)+len(g)+e.ties.size())
	}
	if len(lines) > 0 {
		o.diff, o.tied = diffText(lines), 0
	}
	return o, nil
}

// loadParts reads the rows of the parts sel of the answer and of the first
// n records of got into memory.
func (a *answer) loadParts(got *spool, n int64, sel []bool) (*expected, rowSet, error) {
	in := func(fn func(row []tpcds.Value, c int)) func(row []tpcds.Value, c int) error {
		return func(row []tpcds.Value, c int) error {
			if sel[a.part(row)] {
				fn(row, c)
			}
			return nil
		}
	}
	e := &expected{rows: rowSet{}}
	if err := a.rows.each(a.rows.records, in(e.rows.add)); err != nil {
		return nil, nil, err
	}
	if a.ties != nil {
		t := *a.ties
		t.candidates = rowSet{}
		if err := a.tied.each(a.tied.records, in(t.addCandidate)); err != nil {
			return nil, nil, err
		}
		e.ties = &t
	}
	rows := rowSet{}
	if err := got.each(n, in(rows.add)); err != nil {
		return nil, nil, err
	}
	return e, rows, nil
}

// selfCheck checks that the comparison that found the result at m equal
// (o) would have reported it with a row taken away, a row added, or a row
// of a window still open (openRow, nil: none) added: by digest if the
// digests were equal, otherwise as expected.selfCheck does, over the parts
// of those rows (the other parts were found equal).
func (a *answer) selfCheck(o outcome, got *spool, m mark, openRow []tpcds.Value) error {
	var open rowSet
	if openRow != nil {
		open = rowSet{}
		open.add(openRow, 1)
	}
	if o.read {
		return a.selfCheckParts(got, m, open)
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

// selfCheckParts is expected.selfCheck over the parts of the result's
// first row (got.first) and of the open rows.
func (a *answer) selfCheckParts(got *spool, m mark, open rowSet) error {
	sel := make([]bool, compareParts)
	if got.first != nil {
		sel[a.part(got.first)] = true
	}
	for _, c := range open {
		sel[a.part(c.row)] = true
	}
	e, rows, err := a.loadParts(got, m.records, sel)
	if err != nil {
		return err
	}
	return e.selfCheck(rows, open)
}
