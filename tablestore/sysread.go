package tablestore

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/tablestore/meta"
)

// How Paimon's data system tables read a scan: t$ro (ReadOptimizedSplits)
// and t$audit_log (AuditLogSplits).

// AuditLogKindColumn is the first column of t$audit_log, as Paimon names
// it.
const AuditLogKindColumn = "rowkind"

// ReadOptimizedSplits are the splits t$ro reads, as Paimon's
// ReadOptimizedTable: of a key table's buckets only the files of the top
// level, which full compaction wrote as one sorted run without deletes, so
// they are read without merging (rows written since the last full
// compaction of a bucket are missing); every file of an append table.
func (s *Scan) ReadOptimizedSplits() []Split {
	if !s.sch.hasPK() {
		return s.splits
	}
	top := s.sch.opts.compactionTrigger
	var out []Split
	for _, sp := range s.splits {
		p := sp.(*pkSplit)
		var files []*meta.ManifestEntry
		for _, e := range p.files {
			if e.File.Level == top {
				files = append(files, e)
			}
		}
		if len(files) > 0 {
			out = append(out, &pkSplit{s: s, bucket: p.bucket, files: files, allowed: p.allowed})
		}
	}
	return out
}

// AuditLogSplits are the splits of t$audit_log, whose batches are
// AuditLogKindColumn followed by the scan's columns, as Paimon's
// AuditLogTable reads a snapshot: a key table's rows merged per key with
// the kind of the version that won, retractions kept (-D, -U of a key
// whose deletion no compaction has dropped yet); an append table's rows,
// all +I.
func (s *Scan) AuditLogSplits() []Split {
	out := make([]Split, len(s.splits))
	for i, sp := range s.splits {
		out[i] = &auditSplit{Split: sp, s: s}
	}
	return out
}

// AuditLogSchema is the schema of the batches of AuditLogSplits.
func (s *Scan) AuditLogSchema() *arrow.Schema {
	return arrow.NewSchema(append([]arrow.Field{{Name: AuditLogKindColumn, Type: arrow.BinaryTypes.String}}, s.out.Fields()...), nil)
}

type auditSplit struct {
	Split
	s *Scan
}

func (a *auditSplit) Open(ctx context.Context) (BatchReader, error) {
	s := a.s
	out := s.AuditLogSchema()
	mem := s.st.s.opts.Mem
	p, ok := a.Split.(*pkSplit)
	if !ok {
		rd, err := a.Split.Open(ctx)
		if err != nil {
			return nil, err
		}
		return &kindReader{r: rd, mem: mem, out: out, kind: Insert}, nil
	}
	m, err := newMergeReader(ctx, s, p.files, p.allowed, true, true)
	if err != nil {
		return nil, err
	}
	return &kindReader{r: &sysProjection{r: m, n: 2 + len(s.proj)}, mem: mem, out: out, sys: true, kind: kindOfRow}, nil
}

// sysProjection keeps the first n columns of r's batches: the system
// columns and the projection, without the columns only the merge read.
type sysProjection struct {
	r   BatchReader
	n   int
	cur arrow.RecordBatch
}

func (p *sysProjection) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	b, err := p.r.Next(ctx)
	if err != nil || int(b.NumCols()) == p.n {
		return b, err
	}
	fields := b.Schema().Fields()[:p.n]
	p.cur = array.NewRecordBatch(arrow.NewSchema(fields, nil), b.Columns()[:p.n], b.NumRows())
	return p.cur, nil
}

func (p *sysProjection) Close() error {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	return p.r.Close()
}
