package tablestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/flightd/flightd/tablestore/meta"
)

// What t$schemas and t$manifests list, as Paimon's SchemasTable and
// ManifestsTable do.

// SchemaInfo describes one schema version of a table. Fields,
// PartitionKeys, PrimaryKeys and Options are JSON, as in the schema file.
type SchemaInfo struct {
	ID                                          int64
	Fields, PartitionKeys, PrimaryKeys, Options string
	Comment                                     string
	TimeMillis                                  int64
}

// SchemaVersions lists the schema versions of the table as bound, oldest
// first: those of the table it replaced included, staged or abandoned
// replaces (which never took effect) and versions newer than the bound one
// left out.
func (t *Table) SchemaVersions(ctx context.Context) ([]SchemaInfo, error) {
	names, err := t.st.fs().List(joinPath(t.st.dir, "schema"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("table %s: list schemas: %w", t.st.id, err)
	}
	var out []SchemaInfo
	for _, id := range schemaIDs(names) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if id > t.schema.ID {
			break
		}
		sch, err := t.st.schema(id)
		if err != nil {
			return nil, err
		}
		if sch.Replaces {
			ok, err := t.st.replaced(sch)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		info := SchemaInfo{ID: sch.ID, Comment: sch.Comment, TimeMillis: sch.TimeMillis}
		for _, f := range []struct {
			dst *string
			v   any
		}{{&info.Fields, sch.Fields}, {&info.PartitionKeys, nonNil(sch.PartitionKeys)},
			{&info.PrimaryKeys, nonNil(sch.PrimaryKeys)}, {&info.Options, nonNilMap(sch.Options)}} {
			b, err := json.Marshal(f.v)
			if err != nil {
				return nil, fmt.Errorf("table %s: schema %d: %w", t.st.id, id, err)
			}
			*f.dst = string(b)
		}
		out = append(out, info)
	}
	return out, nil
}

// nonNil and nonNilMap make JSON write [] and {} for none, as Paimon does.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// ManifestInfo describes one manifest file of a snapshot.
type ManifestInfo struct {
	FileName                       string
	FileSize                       int64
	NumAddedFiles, NumDeletedFiles int64
	SchemaID                       int64
	// MinPartition and MaxPartition bound the partitions of the
	// manifest's entries as {v1, v2} ("{}" for an unpartitioned table, ""
	// when unknown).
	MinPartition, MaxPartition string
}

// Manifests lists the data manifests of a snapshot (0 = latest), base
// then delta, as Paimon's readAllManifests.
func (t *Table) Manifests(ctx context.Context, snapshotID int64) ([]ManifestInfo, error) {
	sn, err := t.resolve(snapshotID)
	if err != nil || sn == nil {
		return nil, err
	}
	sch, err := t.st.schema(sn.SchemaID)
	if err != nil {
		return nil, err
	}
	var out []ManifestInfo
	for _, list := range []string{sn.BaseManifestList, sn.DeltaManifestList} {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		metas, err := t.st.readManifestList(list)
		if err != nil {
			return nil, err
		}
		for _, m := range metas {
			info := ManifestInfo{FileName: m.FileName, FileSize: m.FileSize, NumAddedFiles: m.NumAddedFiles,
				NumDeletedFiles: m.NumDeletedFile, SchemaID: m.SchemaID}
			info.MinPartition = partitionString(sch, m.PartitionStats.MinValues)
			info.MaxPartition = partitionString(sch, m.PartitionStats.MaxValues)
			out = append(out, info)
		}
	}
	return out, nil
}

// partitionString renders a partition bound row as {v1, v2}; "" when
// there is none to decode (manifests of flightd's former format).
func partitionString(sch *tableSchema, row []byte) string {
	if len(sch.PartitionKeys) == 0 {
		return "{}"
	}
	if len(row) == 0 {
		return ""
	}
	ds, err := meta.DecodeDatums(partTypes(sch), row)
	if err != nil {
		return ""
	}
	return "{" + strings.TrimSuffix(strings.TrimPrefix(keyString(ds), "["), "]") + "}"
}
