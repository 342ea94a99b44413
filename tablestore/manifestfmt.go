package tablestore

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/tablestore/meta"
	"github.com/flightd/flightd/tablestore/paimonfmt"
)

// Manifests and manifest lists are Paimon's Avro files (paimonfmt), with
// partitions, keys and statistics in Paimon's BinaryRow encoding. What
// Paimon's DataFileMeta cannot hold exactly (flightd's file checksum,
// distinct counts, values BinaryRow would change: TIME keys below the
// millisecond, decimal or nested bounds, invalid UTF-8) goes into the
// file's Avro header under entryExtrasKey, one record per entry, which
// Paimon's readers ignore. Manifests written by Paimon's writers have no
// such record and read with what Paimon keeps.

const entryExtrasKey = "flightd.entries"

// entryExtra is the part of an entry only flightd reads; every field is
// set only where Paimon's encoding does not give the value back exactly.
type entryExtra struct {
	CRC       *uint32         `json:"crc32c,omitempty"`
	Path      string          `json:"path,omitempty"`
	Partition []meta.Datum    `json:"partition,omitempty"`
	MinKey    []meta.Datum    `json:"minKey,omitempty"`
	MaxKey    []meta.Datum    `json:"maxKey,omitempty"`
	Stats     []meta.ColStats `json:"stats,omitempty"`
}

// trimmedKey is the primary key without the partition columns, as Paimon
// keys files (min/max key, key statistics).
func (s *tableSchema) trimmedKey() []string {
	var out []string
	for _, k := range s.PrimaryKeys {
		if !slices.Contains(s.PartitionKeys, k) {
			out = append(out, k)
		}
	}
	return out
}

func (s *tableSchema) typesOf(cols []string) []arrow.DataType {
	out := make([]arrow.DataType, len(cols))
	for i, c := range cols {
		out[i] = s.types[s.fieldIndex(c)]
	}
	return out
}

// keyTrim and keyFill convert flightd's keys (every primary key column)
// to Paimon's and back.
func (s *tableSchema) keyTrim(key []meta.Datum) []meta.Datum {
	if len(key) != len(s.PrimaryKeys) {
		return nil
	}
	var out []meta.Datum
	for i, k := range s.PrimaryKeys {
		if !slices.Contains(s.PartitionKeys, k) {
			out = append(out, key[i])
		}
	}
	return out
}

func (s *tableSchema) keyFill(trimmed, part []meta.Datum) []meta.Datum {
	out := make([]meta.Datum, 0, len(s.PrimaryKeys))
	j := 0
	for _, k := range s.PrimaryKeys {
		if p := slices.Index(s.PartitionKeys, k); p >= 0 {
			if p < len(part) {
				out = append(out, part[p])
			}
			continue
		}
		if j < len(trimmed) {
			out = append(out, trimmed[j])
			j++
		}
	}
	return out
}

// statsExact reports whether c's bounds are what Paimon's value statistics
// say: known bounds, or none because every value is NULL.
func statsExact(c meta.ColStats, rows int64) bool {
	if c.Min == nil || c.Max == nil {
		return c.Min == nil && c.Max == nil && c.NullCount == rows
	}
	return true
}

func (st *tableState) entryToAvro(e *meta.ManifestEntry) (paimonfmt.ManifestEntry, entryExtra, error) {
	sch, err := st.schema(e.File.SchemaID)
	if err != nil {
		return paimonfmt.ManifestEntry{}, entryExtra{}, err
	}
	var x entryExtra
	f := &e.File
	x.CRC = f.CRC
	part, exact, err := meta.EncodeDatums(partTypes(sch), e.Partition)
	if err != nil {
		return paimonfmt.ManifestEntry{}, x, fmt.Errorf("partition: %w", err)
	}
	if !exact {
		x.Partition = e.Partition
	}
	if f.Path != st.filePath(sch, e.Partition, e.Bucket, f.FileName) {
		x.Path = f.Path
	}
	keyCols := sch.trimmedKey()
	keyTypes := sch.typesOf(keyCols)
	var minKey, maxKey []byte
	if sch.hasPK() {
		var ok1, ok2 bool
		if minKey, ok1, err = meta.EncodeDatums(keyTypes, sch.keyTrim(f.MinKey)); err != nil {
			return paimonfmt.ManifestEntry{}, x, err
		}
		if maxKey, ok2, err = meta.EncodeDatums(keyTypes, sch.keyTrim(f.MaxKey)); err != nil {
			return paimonfmt.ManifestEntry{}, x, err
		}
		if !ok1 || !ok2 || !reflect.DeepEqual(sch.keyFill(sch.keyTrim(f.MinKey), e.Partition), f.MinKey) ||
			!reflect.DeepEqual(sch.keyFill(sch.keyTrim(f.MaxKey), e.Partition), f.MaxKey) {
			x.MinKey, x.MaxKey = f.MinKey, f.MaxKey
		}
	} else {
		keyTypes = nil
		minKey, _, _ = meta.EncodeDatums(nil, nil)
		maxKey = minKey
	}
	// Value statistics: the columns Paimon's encoding gives back exactly,
	// named in _VALUE_STATS_COLS; the others in the extra record.
	byID := map[int]meta.ColStats{}
	for _, c := range f.ValueStats {
		byID[c.ID] = c
	}
	exactIDs := map[int]bool{} // the columns in _VALUE_STATS_COLS
	var cols []string
	var types []arrow.DataType
	var mins, maxs []meta.Datum
	nulls := []*int64{}
	for i, fd := range sch.Fields {
		c, ok := byID[fd.ID]
		if !ok {
			continue
		}
		if _, ok := meta.PaimonType(sch.types[i]); !ok || !statsExact(c, f.RowCount) {
			x.Stats = append(x.Stats, c)
			continue
		}
		lo, hi := meta.Datum{Null: true}, meta.Datum{Null: true}
		if c.Min != nil {
			lo, hi = *c.Min, *c.Max
		}
		if _, exact, _ := meta.EncodeDatums([]arrow.DataType{sch.types[i], sch.types[i]}, []meta.Datum{lo, hi}); !exact {
			x.Stats = append(x.Stats, c)
			continue
		}
		if c.NDV != 0 { // the bounds for Paimon, the whole for flightd
			x.Stats = append(x.Stats, c)
		}
		n := c.NullCount
		exactIDs[fd.ID] = true
		cols, types = append(cols, fd.Name), append(types, sch.types[i])
		mins, maxs, nulls = append(mins, lo), append(maxs, hi), append(nulls, &n)
	}
	minRow, _, err := meta.EncodeDatumsUnchecked(types, mins)
	if err != nil {
		return paimonfmt.ManifestEntry{}, x, err
	}
	maxRow, _, err := meta.EncodeDatumsUnchecked(types, maxs)
	if err != nil {
		return paimonfmt.ManifestEntry{}, x, err
	}
	if cols == nil {
		cols = []string{}
	}
	keyStats, err := keyColumnStats(sch, keyCols, keyTypes, byID, exactIDs)
	if err != nil {
		return paimonfmt.ManifestEntry{}, x, err
	}
	kind := int32(paimonfmt.KindAdd)
	if e.Kind == meta.KindDelete {
		kind = paimonfmt.KindDelete
	}
	source := int32(paimonfmt.FileSourceAppend)
	if f.FileSource == "COMPACT" {
		source = paimonfmt.FileSourceCompact
	}
	created, deleted := f.CreationMillis, f.DeleteRowCount
	return paimonfmt.ManifestEntry{
		Kind: kind, Partition: part, Bucket: int32(e.Bucket), TotalBuckets: int32(e.TotalBuckets),
		File: paimonfmt.DataFileMeta{
			FileName: f.FileName, FileSize: f.FileSize, RowCount: f.RowCount,
			MinKey: minKey, MaxKey: maxKey, KeyStats: keyStats,
			ValueStats:        paimonfmt.SimpleStats{MinValues: minRow, MaxValues: maxRow, NullCounts: nulls},
			MinSequenceNumber: f.MinSeq, MaxSequenceNumber: f.MaxSeq, SchemaID: f.SchemaID, Level: int32(f.Level),
			CreationTime: &created, DeleteRowCount: &deleted, FileSource: &source, ValueStatsCols: cols,
		},
	}, x, nil
}

// keyColumnStats are Paimon's key statistics: the bounds of each key
// column (not of the key rows), from the column statistics; a column
// without exact bounds (not in exactIDs, the value statistics Paimon
// holds exactly) gets none, with its null count unknown.
func keyColumnStats(sch *tableSchema, keyCols []string, keyTypes []arrow.DataType, byID map[int]meta.ColStats, exactIDs map[int]bool) (paimonfmt.SimpleStats, error) {
	lo := make([]meta.Datum, len(keyCols))
	hi := make([]meta.Datum, len(keyCols))
	nulls := make([]*int64, len(keyCols))
	for i, c := range keyCols {
		lo[i], hi[i] = meta.Datum{Null: true}, meta.Datum{Null: true}
		id := sch.Fields[sch.fieldIndex(c)].ID
		cs := byID[id]
		if !exactIDs[id] || cs.Min == nil {
			continue
		}
		lo[i], hi[i] = *cs.Min, *cs.Max
		n := cs.NullCount
		nulls[i] = &n
	}
	minRow, _, err := meta.EncodeDatumsUnchecked(keyTypes, lo)
	if err != nil {
		return paimonfmt.SimpleStats{}, err
	}
	maxRow, _, err := meta.EncodeDatumsUnchecked(keyTypes, hi)
	if err != nil {
		return paimonfmt.SimpleStats{}, err
	}
	return paimonfmt.SimpleStats{MinValues: minRow, MaxValues: maxRow, NullCounts: nulls}, nil
}

func (st *tableState) entryFromAvro(a paimonfmt.ManifestEntry, x entryExtra) (*meta.ManifestEntry, error) {
	f := a.File
	sch, err := st.schema(f.SchemaID)
	if err != nil {
		return nil, err
	}
	e := &meta.ManifestEntry{Kind: meta.KindAdd, Bucket: int(a.Bucket), TotalBuckets: int(a.TotalBuckets)}
	if a.Kind == paimonfmt.KindDelete {
		e.Kind = meta.KindDelete
	}
	if e.Partition = x.Partition; e.Partition == nil {
		if e.Partition, err = meta.DecodeDatums(partTypes(sch), a.Partition); err != nil {
			return nil, fmt.Errorf("%w: file %s: partition: %v", ErrCorrupt, f.FileName, err)
		}
	}
	m := meta.DataFile{
		FileName: f.FileName, FileSize: f.FileSize, CRC: x.CRC, RowCount: f.RowCount,
		MinSeq: f.MinSequenceNumber, MaxSeq: f.MaxSequenceNumber, SchemaID: f.SchemaID, Level: int(f.Level),
		FileSource: "APPEND", Path: x.Path, MinKey: x.MinKey, MaxKey: x.MaxKey,
	}
	if m.Path == "" {
		m.Path = st.filePath(sch, e.Partition, e.Bucket, f.FileName)
	}
	if f.CreationTime != nil {
		m.CreationMillis = *f.CreationTime
	}
	if f.DeleteRowCount != nil {
		m.DeleteRowCount = *f.DeleteRowCount
	}
	if f.FileSource != nil && *f.FileSource == paimonfmt.FileSourceCompact {
		m.FileSource = "COMPACT"
	}
	if sch.hasPK() && m.MinKey == nil {
		keyTypes := sch.typesOf(sch.trimmedKey())
		lo, err := meta.DecodeDatums(keyTypes, f.MinKey)
		if err != nil {
			return nil, fmt.Errorf("%w: file %s: min key: %v", ErrCorrupt, f.FileName, err)
		}
		hi, err := meta.DecodeDatums(keyTypes, f.MaxKey)
		if err != nil {
			return nil, fmt.Errorf("%w: file %s: max key: %v", ErrCorrupt, f.FileName, err)
		}
		m.MinKey, m.MaxKey = sch.keyFill(lo, e.Partition), sch.keyFill(hi, e.Partition)
	}
	// Statistics of the columns listed (all of the file's schema when the
	// list is absent, as Paimon writes it by default).
	cols := f.ValueStatsCols
	if cols == nil {
		for _, fd := range sch.Fields {
			cols = append(cols, fd.Name)
		}
	}
	idx := make([]int, len(cols))
	types := make([]arrow.DataType, len(cols))
	for i, c := range cols {
		if idx[i] = sch.fieldIndex(c); idx[i] < 0 {
			return nil, fmt.Errorf("%w: file %s: statistics of unknown column %q", ErrCorrupt, f.FileName, c)
		}
		types[i] = sch.types[idx[i]]
	}
	statsKnown := len(cols) > 0 && allAtomic(types) && len(f.ValueStats.NullCounts) == len(cols)
	var mins, maxs []meta.Datum
	if statsKnown {
		if mins, err = meta.DecodeDatums(types, f.ValueStats.MinValues); err == nil {
			maxs, err = meta.DecodeDatums(types, f.ValueStats.MaxValues)
		}
		statsKnown = err == nil
	}
	extra := map[int]meta.ColStats{}
	for _, c := range x.Stats {
		extra[c.ID] = c
	}
	for _, fd := range sch.Fields {
		if c, ok := extra[fd.ID]; ok {
			m.ValueStats = append(m.ValueStats, c)
			continue
		}
		j := slices.Index(cols, fd.Name)
		if !statsKnown || j < 0 || f.ValueStats.NullCounts[j] == nil {
			continue
		}
		c := meta.ColStats{ID: fd.ID, NullCount: *f.ValueStats.NullCounts[j]}
		if !mins[j].Null && !maxs[j].Null && (mins[j] != meta.Datum{}) {
			lo, hi := mins[j], maxs[j]
			c.Min, c.Max = &lo, &hi
		}
		m.ValueStats = append(m.ValueStats, c)
	}
	e.File = m
	return e, nil
}

func allAtomic(types []arrow.DataType) bool {
	for _, t := range types {
		if _, ok := meta.PaimonType(t); !ok {
			return false
		}
	}
	return true
}

// filePath is where a data file of a partition's bucket lives, relative to
// the table directory.
func (st *tableState) filePath(sch *tableSchema, part []meta.Datum, bucket int, name string) string {
	return joinPath(meta.PartitionPath(sch.PartitionKeys, partTypes(sch), part, sch.opts.defaultPartition), "bucket-"+strconv.Itoa(bucket), name)
}

func (st *tableState) encodeManifest(ents []*meta.ManifestEntry) ([]byte, error) {
	out := make([]paimonfmt.ManifestEntry, len(ents))
	extras := make([]entryExtra, len(ents))
	for i, e := range ents {
		var err error
		if out[i], extras[i], err = st.entryToAvro(e); err != nil {
			return nil, fmt.Errorf("manifest entry for %s: %w", e.File.FileName, err)
		}
	}
	x, err := json.Marshal(extras)
	if err != nil {
		return nil, err
	}
	return paimonfmt.EncodeManifest(out, map[string][]byte{entryExtrasKey: x})
}

func (st *tableState) decodeManifest(name string, data []byte) ([]*meta.ManifestEntry, error) {
	if !paimonfmt.IsAvro(data) { // written before flightd used Paimon's format
		var l []*meta.ManifestEntry
		return l, meta.Decode(name, data, &l)
	}
	ents, header, err := paimonfmt.DecodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	var extras []entryExtra
	if x, ok := header[entryExtrasKey]; ok {
		if err := json.Unmarshal(x, &extras); err != nil || len(extras) != len(ents) {
			return nil, fmt.Errorf("%w: %s: bad %s header (%v)", ErrCorrupt, name, entryExtrasKey, err)
		}
	}
	out := make([]*meta.ManifestEntry, len(ents))
	for i, a := range ents {
		var x entryExtra
		if extras != nil {
			x = extras[i]
		}
		// Not all of its errors are damage: the schema the entry names
		// is read from the table's directory, which a drop may have moved.
		if out[i], err = st.entryFromAvro(a, x); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return out, nil
}

// partitionStats are the bounds of the partitions of ents, for the
// manifest list (Paimon skips manifests by them).
func (st *tableState) partitionStats(sch *tableSchema, ents []*meta.ManifestEntry) (paimonfmt.SimpleStats, error) {
	types := partTypes(sch)
	lo := make([]meta.Datum, len(types))
	hi := make([]meta.Datum, len(types))
	nulls := make([]*int64, len(types))
	for i := range types {
		n := int64(0)
		nulls[i] = &n
		lo[i], hi[i] = meta.Datum{Null: true}, meta.Datum{Null: true}
	}
	for _, e := range ents {
		for i, d := range e.Partition {
			if i >= len(types) {
				break
			}
			if d.Null {
				*nulls[i]++
				continue
			}
			if c, ok := meta.CompareDatum(d, lo[i]); lo[i].Null || (ok && c < 0) {
				lo[i] = d
			}
			if c, ok := meta.CompareDatum(d, hi[i]); hi[i].Null || (ok && c > 0) {
				hi[i] = d
			}
		}
	}
	minRow, ok1, err := meta.EncodeDatums(types, lo)
	if err != nil {
		return paimonfmt.SimpleStats{}, err
	}
	maxRow, ok2, err := meta.EncodeDatums(types, hi)
	if err != nil {
		return paimonfmt.SimpleStats{}, err
	}
	if !ok1 || !ok2 { // bounds Paimon cannot hold: unknown
		nulls = nil
	}
	return paimonfmt.SimpleStats{MinValues: minRow, MaxValues: maxRow, NullCounts: nulls}, nil
}

func (st *tableState) encodeManifestList(l []meta.ManifestFile) ([]byte, error) {
	out := make([]paimonfmt.ManifestFileMeta, len(l))
	for i, m := range l {
		out[i] = paimonfmt.ManifestFileMeta{
			FileName: m.FileName, FileSize: m.FileSize, NumAddedFiles: m.NumAddedFiles,
			NumDeleted: m.NumDeletedFile, SchemaID: m.SchemaID, PartitionStats: m.PartitionStats,
		}
	}
	return paimonfmt.EncodeManifestList(out)
}

func (st *tableState) decodeManifestList(name string, data []byte) ([]meta.ManifestFile, error) {
	if !paimonfmt.IsAvro(data) {
		var l []meta.ManifestFile
		if err := meta.Decode(name, data, &l); err != nil {
			return nil, err
		}
		for i := range l {
			l[i].Legacy = true
		}
		return l, nil
	}
	metas, err := paimonfmt.DecodeManifestList(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	out := make([]meta.ManifestFile, len(metas))
	for i, m := range metas {
		out[i] = meta.ManifestFile{FileName: m.FileName, FileSize: m.FileSize, NumAddedFiles: m.NumAddedFiles,
			NumDeletedFile: m.NumDeleted, SchemaID: m.SchemaID, PartitionStats: m.PartitionStats}
	}
	return out, nil
}
