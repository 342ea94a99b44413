package tablestore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/flightd/flightd/tablestore/meta"
)

// What Paimon's system tables (t$snapshots, t$files, t$tags, t$consumers,
// ...) list about a table, for the engine to show.

// SnapshotInfo describes a snapshot.
type SnapshotInfo struct {
	ID, SchemaID                       int64
	CommitUser                         string
	CommitIdentifier                   int64
	CommitKind                         string
	TimeMillis                         int64
	TotalRecordCount, DeltaRecordCount int64
	BaseManifestList                   string
	DeltaManifestList                  string
	ChangelogManifestList              string
}

func snapshotInfo(sn *meta.Snapshot) SnapshotInfo {
	return SnapshotInfo{ID: sn.ID, SchemaID: sn.SchemaID, CommitUser: sn.CommitUser, CommitIdentifier: sn.CommitIdentifier,
		CommitKind: sn.CommitKind, TimeMillis: sn.TimeMillis, TotalRecordCount: sn.TotalRecordCount, DeltaRecordCount: sn.DeltaRecordCount,
		BaseManifestList: sn.BaseManifestList, DeltaManifestList: sn.DeltaManifestList, ChangelogManifestList: sn.ChangelogManifestList}
}

// Snapshots lists the snapshots the table keeps (not expired), oldest
// first.
func (t *Table) Snapshots(ctx context.Context) ([]SnapshotInfo, error) {
	ids, err := t.st.listSnapshots()
	if err != nil {
		return nil, err
	}
	out := make([]SnapshotInfo, 0, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sn, err := t.st.readSnapshot(id)
		if errors.Is(err, ErrSnapshotNotFound) {
			continue // expired while listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, snapshotInfo(sn))
	}
	return out, nil
}

// TagInfo describes a tag: its name and the snapshot it keeps.
type TagInfo struct {
	Name     string
	Snapshot SnapshotInfo
}

// TagList lists the tags, by name.
func (t *Table) TagList(ctx context.Context) ([]TagInfo, error) {
	tags, err := t.st.readTags()
	if err != nil {
		return nil, err
	}
	out := make([]TagInfo, 0, len(tags))
	for name, sn := range tags {
		out = append(out, TagInfo{Name: name, Snapshot: snapshotInfo(sn)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Consumers lists the consumers and the next snapshot each will read.
func (t *Table) Consumers(ctx context.Context) (map[string]int64, error) {
	names, err := t.st.fs().List(joinPath(t.st.dir, "consumer"))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: list consumers: %w", t.st.id, err)
	}
	out := map[string]int64{}
	for _, n := range names {
		id, ok := strings.CutPrefix(n, "consumer-")
		if !ok {
			continue
		}
		next, ok, err := t.st.consumerPosition(id)
		if err != nil {
			return nil, err
		}
		if ok {
			out[id] = next
		}
	}
	return out, nil
}

// FileInfo describes a data file of a snapshot.
type FileInfo struct {
	// Partition is the partition's directory (col=value/...), "" for an
	// unpartitioned table.
	Partition      string
	Bucket         int
	Path           string // relative to the table's directory
	SchemaID       int64
	Level          int
	RecordCount    int64
	Size           int64
	MinKey, MaxKey string // the primary key range, "" for append tables
	MinSeq, MaxSeq int64
	CreationMillis int64
}

// Files lists the data files of a snapshot (0 = latest), by path.
func (t *Table) Files(ctx context.Context, snapshotID int64) ([]FileInfo, error) {
	sn, err := t.resolve(snapshotID)
	if err != nil || sn == nil {
		return nil, err
	}
	entries, err := t.st.liveFiles(sn)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, 0, len(entries))
	for _, e := range entries {
		f := e.File
		part := path.Dir(path.Dir(f.Path))
		if part == "." {
			part = ""
		}
		out = append(out, FileInfo{Partition: part, Bucket: e.Bucket, Path: f.Path, SchemaID: f.SchemaID, Level: f.Level,
			RecordCount: f.RowCount, Size: f.FileSize, MinKey: keyString(f.MinKey), MaxKey: keyString(f.MaxKey),
			MinSeq: f.MinSeq, MaxSeq: f.MaxSeq, CreationMillis: f.CreationMillis})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// keyString renders a key as [v1, v2] (binary as hex, dates and times as
// their stored integers); "" for none.
func keyString(key []meta.Datum) string {
	if len(key) == 0 {
		return ""
	}
	vals := make([]string, len(key))
	for i, d := range key {
		switch {
		case d.Null:
			vals[i] = "NULL"
		case d.I != nil:
			vals[i] = strconv.FormatInt(*d.I, 10)
		case d.F != nil:
			vals[i] = strconv.FormatFloat(float64(*d.F), 'g', -1, 64)
		case d.S != nil:
			vals[i] = *d.S
		case d.B != nil:
			vals[i] = hex.EncodeToString(*d.B)
		}
	}
	return "[" + strings.Join(vals, ", ") + "]"
}
