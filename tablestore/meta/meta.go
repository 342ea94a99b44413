package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/flightd/flightd/tablestore/paimonfmt"
)

// Paimon's metadata files (schemas, snapshots, tags, consumers) are plain
// JSON as Paimon writes them: written whole under a temporary name, synced
// and renamed into place (tablestore's metaio.go and its callers), so a
// reader sees all of a file or none, and a damaged one fails to parse. flightd's own files (views, jobs,
// materialized table state), and every metadata file flightd wrote before
// it used Paimon's format, are JSON followed by a CRC-32C trailer line
// (Encode); Decode verifies the trailer where there is one.

// ErrCorrupt: a metadata file is truncated or damaged. It is
// tablestore.ErrCorrupt.
var ErrCorrupt = errors.New("corrupt file")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

const crcPrefix = "\n#crc32c="

// Encode is v's JSON followed by a CRC-32C trailer line: flightd's own
// metadata files.
func Encode(v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(body, "%s%08x\n", crcPrefix, crc32.Checksum(body, crcTable)), nil
}

// HasTrailer tells flightd's checksummed JSON (its own files, and every
// metadata file of its former format) from Paimon's plain JSON.
func HasTrailer(data []byte) bool { return bytes.Contains(data, []byte(crcPrefix)) }

// Decode decodes JSON with or without a CRC-32C trailer into v, verifying
// the trailer where there is one; errors wrap ErrCorrupt and name the file.
func Decode(name string, data []byte, v any) error {
	i := bytes.LastIndex(data, []byte(crcPrefix))
	if i < 0 {
		if err := json.Unmarshal(data, v); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
		}
		return nil
	}
	body := data[:i]
	want, err := strconv.ParseUint(string(bytes.TrimSpace(data[i+len(crcPrefix):])), 16, 32)
	if err != nil {
		return fmt.Errorf("%w: %s: bad checksum trailer", ErrCorrupt, name)
	}
	if got := crc32.Checksum(body, crcTable); uint64(got) != want {
		return fmt.Errorf("%w: %s: checksum mismatch (stored %08x, computed %08x)", ErrCorrupt, name, want, got)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	return nil
}

// Commit kinds of a snapshot.
const (
	CommitAppend    = "APPEND"
	CommitCompact   = "COMPACT"
	CommitOverwrite = "OVERWRITE"
)

// Snapshot is the content of snapshot/snapshot-N (Paimon's Snapshot JSON,
// version 3, plus nextSequenceNumber, which Paimon readers ignore).
type Snapshot struct {
	Version               int    `json:"version"`
	ID                    int64  `json:"id"`
	SchemaID              int64  `json:"schemaId"`
	BaseManifestList      string `json:"baseManifestList"`
	BaseManifestListSize  int64  `json:"baseManifestListSize,omitempty"`
	DeltaManifestList     string `json:"deltaManifestList"`
	DeltaManifestListSize int64  `json:"deltaManifestListSize,omitempty"`
	// ChangelogManifestList lists the manifests of the changelog files this
	// snapshot publishes (empty: none); see doc.go for the contract.
	ChangelogManifestList     string           `json:"changelogManifestList,omitempty"`
	ChangelogManifestListSize int64            `json:"changelogManifestListSize,omitempty"`
	CommitUser                string           `json:"commitUser"`
	CommitIdentifier          int64            `json:"commitIdentifier"`
	CommitKind                string           `json:"commitKind"`
	TimeMillis                int64            `json:"timeMillis"`
	LogOffsets                map[string]int64 `json:"logOffsets,omitempty"`
	TotalRecordCount          int64            `json:"totalRecordCount"`
	DeltaRecordCount          int64            `json:"deltaRecordCount"`
	ChangelogRecordCount      int64            `json:"changelogRecordCount"`
	// NextSequenceNumber is above every sequence number in the table, so a
	// writer starting from this snapshot numbers its rows after all of them.
	NextSequenceNumber int64 `json:"nextSequenceNumber"`
	// Properties are the writer's annotations of the commit
	// (WriteOptions.Properties), as Paimon's snapshot properties.
	Properties map[string]string `json:"properties,omitempty"`
	// Checksum is the CRC-32C of the snapshot's JSON without it, so that
	// a damaged snapshot that still parses is found (Paimon's readers
	// ignore it; snapshots of Paimon's writers have none).
	Checksum uint32 `json:"flightdChecksum,omitempty"`
	// Parent is the Checksum of the snapshot this one was committed on (0:
	// none, or one of Paimon's writers). A table has no identity beyond
	// its path, so this is how a change stream tells the next snapshot of
	// its table from one of a table dropped and created again (or rolled
	// back) under the name since it read the last.
	Parent uint32 `json:"flightdParent,omitempty"`
}

func (s Snapshot) MarshalJSON() ([]byte, error) {
	type plain Snapshot // without these methods
	sum, err := s.Sum()
	if err != nil {
		return nil, err
	}
	p := plain(s)
	p.Checksum = sum
	return json.Marshal(p)
}

// Follows reports whether s may have been committed on prev: it names
// prev's checksum as its parent, or one of the two does not tell.
func (s *Snapshot) Follows(prev *Snapshot) bool {
	return s.Parent == 0 || prev.Checksum == 0 || s.Parent == prev.Checksum
}

// Sum is the CRC-32C of s's JSON without its Checksum.
func (s Snapshot) Sum() (uint32, error) {
	type plain Snapshot
	p := plain(s)
	p.Checksum = 0
	body, err := json.Marshal(p)
	if err != nil {
		return 0, err
	}
	return crc32.Checksum(body, crcTable), nil
}

func (s *Snapshot) UnmarshalJSON(data []byte) error {
	type plain Snapshot
	if err := json.Unmarshal(data, (*plain)(s)); err != nil {
		return err
	}
	if s.Checksum == 0 {
		return nil
	}
	got, err := s.Sum()
	if err != nil {
		return err
	}
	if got != s.Checksum {
		return fmt.Errorf("checksum mismatch (stored %08x, computed %08x)", s.Checksum, got)
	}
	return nil
}

// ManifestFile is one entry of a manifest list: a manifest file
// (Paimon's ManifestFileMeta).
type ManifestFile struct {
	FileName       string `json:"fileName"`
	FileSize       int64  `json:"fileSize"`
	NumAddedFiles  int64  `json:"numAddedFiles"`
	NumDeletedFile int64  `json:"numDeletedFiles"`
	SchemaID       int64  `json:"schemaId"`
	// PartitionStats bound the partitions of the manifest's entries.
	PartitionStats paimonfmt.SimpleStats `json:"-"`
	// Legacy: listed in a manifest list of flightd's JSON format, which
	// Paimon's readers cannot read; the next commit rewrites the base.
	Legacy bool `json:"-"`
}

// Kinds of a manifest entry.
const (
	KindAdd    = "ADD"
	KindDelete = "DELETE"
)

// ManifestEntry adds or deletes one data file. Manifests are ordered logs:
// the last entry for a file wins.
type ManifestEntry struct {
	Kind         string   `json:"kind"`
	Partition    []Datum  `json:"partition"`
	Bucket       int      `json:"bucket"`
	TotalBuckets int      `json:"totalBuckets"`
	File         DataFile `json:"file"`
}

// The picker's view of a file (maintenance.File in
// tablestore/maintenance).
func (e *ManifestEntry) Level() int    { return e.File.Level }
func (e *ManifestEntry) Size() int64   { return e.File.FileSize }
func (e *ManifestEntry) MaxSeq() int64 { return e.File.MaxSeq }

// DataFile describes one Parquet data file.
type DataFile struct {
	FileName string `json:"fileName"`
	// Path is relative to the table directory: partition/bucket-N/name.
	Path           string     `json:"path"`
	FileSize       int64      `json:"fileSize"`
	CRC            *uint32    `json:"crc32c,omitempty"`
	RowCount       int64      `json:"rowCount"`
	MinKey         []Datum    `json:"minKey,omitempty"`
	MaxKey         []Datum    `json:"maxKey,omitempty"`
	ValueStats     []ColStats `json:"valueStats"`
	MinSeq         int64      `json:"minSequenceNumber"`
	MaxSeq         int64      `json:"maxSequenceNumber"`
	SchemaID       int64      `json:"schemaId"`
	Level          int        `json:"level"`
	CreationMillis int64      `json:"creationTime"`
	DeleteRowCount int64      `json:"deleteRowCount"`
	FileSource     string     `json:"fileSource"`
}

// ColStats are the statistics of one column of a file, keyed by field ID.
// Min and Max are nil when unknown (no non-null value, or not tracked).
type ColStats struct {
	ID        int    `json:"id"`
	Min       *Datum `json:"min,omitempty"`
	Max       *Datum `json:"max,omitempty"`
	NullCount int64  `json:"nullCount"`
	// NDV is the number of distinct non-NULL values of a string or binary
	// column in the file, when at most tablestore's maxTrackedNDV (0: not known).
	NDV int64 `json:"ndv,omitempty"`
}

// Consumer is a consumer file (consumer/consumer-ID): Paimon's
// {"nextSnapshot": N} plus the time of the last commit, for
// consumer.expiration-time.
type Consumer struct {
	NextSnapshot int64 `json:"nextSnapshot"`
	UpdateMillis int64 `json:"updateMillis,omitempty"`
}
