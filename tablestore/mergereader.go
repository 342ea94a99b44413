package tablestore

import (
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/tablestore/merge"
	"github.com/flightd/flightd/tablestore/meta"
)

// mergeReader is the k-way merge (merge.Reader) of a bucket's files for a
// scan; need are the schema indexes it reads, the projection first.
type mergeReader struct {
	*merge.Reader
	need []int
}

// newMergeReader merges files for a scan: the projection, live rows only.
// With withSys (compaction) it emits the system columns and every read
// column, and keeps retracting rows when keepRetracts. extra are more runs,
// older than the files, laid out like merged output with withSys (the
// lookup changelog merges the merged rows before a commit with its files);
// the merge reader closes them, also on error.
func newMergeReader(ctx context.Context, s *Scan, files []*meta.ManifestEntry, allowed func(string) bool, withSys, keepRetracts bool, extra ...BatchReader) (*mergeReader, error) {
	sch := s.sch
	need := mergeColumns(sch, s.proj)
	rt := newReadTarget(sch, need, true)
	var runs []merge.Run
	fail := func(err error) (*mergeReader, error) {
		for _, r := range runs {
			r.Close()
		}
		return nil, err
	}
	for _, r := range extra {
		runs = append(runs, r)
	}
	for _, e := range files {
		df, err := s.openFile(e)
		if err != nil {
			return fail(err)
		}
		rgs := s.selectRowGroups(df, allowed)
		if err := verifyIfFull(ctx, df, rgs); err != nil {
			return fail(err)
		}
		r, err := newStreamReader(ctx, s, df, rgs, rt)
		if err != nil {
			return fail(err)
		}
		r.raw = true
		r.skipPages(allowed)
		runs = append(runs, r)
	}
	l := merge.Layout{
		Table:        s.st.id.String(),
		Options:      &sch.opts.merge,
		Columns:      mergeColumnsOf(sch, need),
		KeepRetracts: keepRetracts,
		BatchSize:    s.st.s.opts.BatchSize,
		Mem:          s.st.s.opts.Mem,
	}
	position := func(name string) int { return slices.Index(need, sch.fieldIndex(name)) }
	for _, k := range sch.PrimaryKeys {
		l.Key = append(l.Key, position(k))
	}
	for _, c := range sch.opts.sequenceField {
		l.Version = append(l.Version, position(c))
	}
	if withSys {
		for c := range rt.schema.NumFields() {
			l.Emit = append(l.Emit, c)
		}
	} else {
		for k := range s.proj {
			l.Emit = append(l.Emit, 2+k)
		}
	}
	fields := make([]arrow.Field, len(l.Emit))
	for k, c := range l.Emit {
		fields[k] = rt.schema.Field(c)
	}
	l.Schema = arrow.NewSchema(fields, nil)
	return &mergeReader{Reader: merge.NewReader(runs, l), need: need}, nil
}
