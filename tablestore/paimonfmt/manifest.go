package paimonfmt

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"
	"github.com/klauspost/compress/zstd"
)

// The Avro schemas of Paimon's manifest (ManifestEntry, version 2) and
// manifest list (ManifestFileMeta) files, field for field as Paimon 1.3
// writes them. Readers resolve fields by name against the writer's schema
// in the file, so files Paimon's writers add fields to still read.

const simpleStatsFields = `[
	{"name": "_MIN_VALUES", "type": "bytes"},
	{"name": "_MAX_VALUES", "type": "bytes"},
	{"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": null}]`

const manifestEntrySchema = `{"type": "record", "name": "ManifestEntry", "fields": [
	{"name": "_VERSION", "type": "int"},
	{"name": "_KIND", "type": "int"},
	{"name": "_PARTITION", "type": "bytes"},
	{"name": "_BUCKET", "type": "int"},
	{"name": "_TOTAL_BUCKETS", "type": "int"},
	{"name": "_FILE", "type": {"type": "record", "name": "DataFileMeta", "fields": [
		{"name": "_FILE_NAME", "type": "string"},
		{"name": "_FILE_SIZE", "type": "long"},
		{"name": "_ROW_COUNT", "type": "long"},
		{"name": "_MIN_KEY", "type": "bytes"},
		{"name": "_MAX_KEY", "type": "bytes"},
		{"name": "_KEY_STATS", "type": {"type": "record", "name": "record_KEY_STATS", "fields": ` + simpleStatsFields + `}},
		{"name": "_VALUE_STATS", "type": {"type": "record", "name": "record_VALUE_STATS", "fields": ` + simpleStatsFields + `}},
		{"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
		{"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
		{"name": "_SCHEMA_ID", "type": "long"},
		{"name": "_LEVEL", "type": "int"},
		{"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
		{"name": "_CREATION_TIME", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": null},
		{"name": "_DELETE_ROW_COUNT", "type": ["null", "long"], "default": null},
		{"name": "_EMBEDDED_FILE_INDEX", "type": ["null", "bytes"], "default": null},
		{"name": "_FILE_SOURCE", "type": ["null", "int"], "default": null},
		{"name": "_VALUE_STATS_COLS", "type": ["null", {"type": "array", "items": "string"}], "default": null},
		{"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": null},
		{"name": "_FIRST_ROW_ID", "type": ["null", "long"], "default": null},
		{"name": "_WRITE_COLS", "type": ["null", {"type": "array", "items": "string"}], "default": null}]}}]}`

const manifestFileMetaSchema = `{"type": "record", "name": "ManifestFileMeta", "fields": [
	{"name": "_VERSION", "type": "int"},
	{"name": "_FILE_NAME", "type": "string"},
	{"name": "_FILE_SIZE", "type": "long"},
	{"name": "_NUM_ADDED_FILES", "type": "long"},
	{"name": "_NUM_DELETED_FILES", "type": "long"},
	{"name": "_PARTITION_STATS", "type": {"type": "record", "name": "record_PARTITION_STATS", "fields": ` + simpleStatsFields + `}},
	{"name": "_SCHEMA_ID", "type": "long"},
	{"name": "_MIN_BUCKET", "type": ["null", "int"], "default": null},
	{"name": "_MAX_BUCKET", "type": ["null", "int"], "default": null},
	{"name": "_MIN_LEVEL", "type": ["null", "int"], "default": null},
	{"name": "_MAX_LEVEL", "type": ["null", "int"], "default": null},
	{"name": "_MIN_ROW_ID", "type": ["null", "long"], "default": null},
	{"name": "_MAX_ROW_ID", "type": ["null", "long"], "default": null}]}`

var (
	entrySchema    = parseSchema(manifestEntrySchema)
	fileMetaSchema = parseSchema(manifestFileMetaSchema)
)

// avroSchema is a parsed schema and its text for the header of every file
// written with it: the encoder marshals the schema again for each file
// otherwise (RecordSchema.String walks every field; about a tenth of a
// commit's manifest writing in a profile of a bulk ingest).
type avroSchema struct {
	avro.Schema
	text []byte
}

func parseSchema(s string) avroSchema {
	sch := avro.MustParse(s)
	return avroSchema{sch, []byte(sch.String())}
}

func (s avroSchema) marshal(avro.Schema) ([]byte, error) { return s.text, nil }

// SimpleStats are the statistics of some columns: their minimums and
// maximums as serialized BinaryRows, and their null counts.
type SimpleStats struct {
	MinValues  []byte   `avro:"_MIN_VALUES"`
	MaxValues  []byte   `avro:"_MAX_VALUES"`
	NullCounts []*int64 `avro:"_NULL_COUNTS"`
}

// DataFileMeta describes one data file (Paimon's DataFileMeta).
type DataFileMeta struct {
	FileName          string      `avro:"_FILE_NAME"`
	FileSize          int64       `avro:"_FILE_SIZE"`
	RowCount          int64       `avro:"_ROW_COUNT"`
	MinKey            []byte      `avro:"_MIN_KEY"`
	MaxKey            []byte      `avro:"_MAX_KEY"`
	KeyStats          SimpleStats `avro:"_KEY_STATS"`
	ValueStats        SimpleStats `avro:"_VALUE_STATS"`
	MinSequenceNumber int64       `avro:"_MIN_SEQUENCE_NUMBER"`
	MaxSequenceNumber int64       `avro:"_MAX_SEQUENCE_NUMBER"`
	SchemaID          int64       `avro:"_SCHEMA_ID"`
	Level             int32       `avro:"_LEVEL"`
	ExtraFiles        []string    `avro:"_EXTRA_FILES"`
	// CreationTime is in milliseconds since the epoch.
	CreationTime      *int64   `avro:"_CREATION_TIME"`
	DeleteRowCount    *int64   `avro:"_DELETE_ROW_COUNT"`
	EmbeddedFileIndex []byte   `avro:"_EMBEDDED_FILE_INDEX"`
	FileSource        *int32   `avro:"_FILE_SOURCE"`
	ValueStatsCols    []string `avro:"_VALUE_STATS_COLS"`
	ExternalPath      *string  `avro:"_EXTERNAL_PATH"`
	FirstRowID        *int64   `avro:"_FIRST_ROW_ID"`
	WriteCols         []string `avro:"_WRITE_COLS"`
}

// Entry kinds and file sources.
const (
	KindAdd    = 0
	KindDelete = 1

	FileSourceAppend  = 0
	FileSourceCompact = 1
)

// ManifestEntry adds or deletes one file of a partition's bucket.
type ManifestEntry struct {
	Version      int32        `avro:"_VERSION"`
	Kind         int32        `avro:"_KIND"`
	Partition    []byte       `avro:"_PARTITION"`
	Bucket       int32        `avro:"_BUCKET"`
	TotalBuckets int32        `avro:"_TOTAL_BUCKETS"`
	File         DataFileMeta `avro:"_FILE"`
}

// ManifestFileMeta is one entry of a manifest list.
type ManifestFileMeta struct {
	Version        int32       `avro:"_VERSION"`
	FileName       string      `avro:"_FILE_NAME"`
	FileSize       int64       `avro:"_FILE_SIZE"`
	NumAddedFiles  int64       `avro:"_NUM_ADDED_FILES"`
	NumDeleted     int64       `avro:"_NUM_DELETED_FILES"`
	PartitionStats SimpleStats `avro:"_PARTITION_STATS"`
	SchemaID       int64       `avro:"_SCHEMA_ID"`
	MinBucket      *int32      `avro:"_MIN_BUCKET"`
	MaxBucket      *int32      `avro:"_MAX_BUCKET"`
	MinLevel       *int32      `avro:"_MIN_LEVEL"`
	MaxLevel       *int32      `avro:"_MAX_LEVEL"`
	MinRowID       *int64      `avro:"_MIN_ROW_ID"`
	MaxRowID       *int64      `avro:"_MAX_ROW_ID"`
}

// Versions Paimon writes in the _VERSION fields.
const (
	manifestEntryVersion = 2
	manifestListVersion  = 2
)

// codec is Paimon's default manifest.compression (zstd). A zstd encoder
// or decoder costs megabytes to set up, far more than a manifest, so they
// are pooled; each is used by one file at a time.
const codec = ocf.ZStandard

var (
	zstdEncoders = sync.Pool{New: func() any {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err) // only for invalid options
		}
		return e
	}}
	zstdDecoders = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		if err != nil {
			panic(err) // only for invalid options
		}
		return d
	}}
)

// EncodeManifest writes entries as a manifest file. meta is kept in the
// file's Avro header, where Paimon's readers ignore it.
func EncodeManifest(entries []ManifestEntry, meta map[string][]byte) ([]byte, error) {
	for i := range entries {
		entries[i].Version = manifestEntryVersion
		if entries[i].File.ExtraFiles == nil {
			entries[i].File.ExtraFiles = []string{}
		}
	}
	return encode(entrySchema, entries, meta)
}

// EncodeManifestList writes metas as a manifest list file.
func EncodeManifestList(metas []ManifestFileMeta) ([]byte, error) {
	for i := range metas {
		metas[i].Version = manifestListVersion
	}
	return encode(fileMetaSchema, metas, nil)
}

func encode[T any](schema avroSchema, rows []T, meta map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	zenc := zstdEncoders.Get().(*zstd.Encoder)
	defer zstdEncoders.Put(zenc)
	opts := []ocf.EncoderFunc{ocf.WithCodec(codec), ocf.WithZStandardEncoder(zenc), ocf.WithSchemaMarshaler(schema.marshal)}
	if len(meta) > 0 {
		opts = append(opts, ocf.WithMetadata(meta))
	}
	enc, err := ocf.NewEncoderWithSchema(schema.Schema, &buf, opts...)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// IsAvro tells an Avro file from the JSON flightd wrote before.
func IsAvro(data []byte) bool { return bytes.HasPrefix(data, []byte("Obj\x01")) }

// ErrNotAvro: the data is not an Avro object container file.
var ErrNotAvro = errors.New("not an Avro file")

// DecodeManifest reads a manifest file and the metadata of its header.
func DecodeManifest(data []byte) ([]ManifestEntry, map[string][]byte, error) {
	return decode[ManifestEntry](data)
}

// DecodeManifestList reads a manifest list file.
func DecodeManifestList(data []byte) ([]ManifestFileMeta, error) {
	l, _, err := decode[ManifestFileMeta](data)
	return l, err
}

func decode[T any](data []byte) ([]T, map[string][]byte, error) {
	if !IsAvro(data) {
		return nil, nil, ErrNotAvro
	}
	zdec := zstdDecoders.Get().(*zstd.Decoder)
	defer zstdDecoders.Put(zdec)
	dec, err := ocf.NewDecoder(bytes.NewReader(data), ocf.WithZStandardDecoder(zdec))
	if err != nil {
		return nil, nil, err
	}
	var out []T
	for dec.HasNext() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("record %d: %w", len(out), err)
		}
		out = append(out, v)
	}
	if err := dec.Error(); err != nil {
		return nil, nil, err
	}
	return out, dec.Metadata(), nil
}
