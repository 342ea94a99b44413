package tablestore

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/flightd/flightd/tablestore/merge"
)

// Table option keys (Paimon's names where Paimon has the option).
const (
	optBucket            = "bucket"
	optBucketKey         = "bucket-key"
	optMergeEngine       = "merge-engine"
	optSequenceField     = "sequence.field"
	optChangelogProducer = "changelog-producer"
	optWriteBufferSize   = "write-buffer-size"
	optCompactionTrigger = "num-sorted-run.compaction-trigger"
	optStopTrigger       = "num-sorted-run.stop-trigger"
	optMaxSizeAmp        = "compaction.max-size-amplification-percent"
	optSizeRatio         = "compaction.size-ratio"
	optMinFileNum        = "compaction.min.file-num"
	optWriteOnly         = "write-only"
	optCompression       = "file.compression"
	optZstdLevel         = "file.compression.zstd-level"
	optCompressionLevels = "file.compression.per.level"
	optTargetFileSize    = "target-file-size"
	optRowGroupRows      = "file.row-group-rows" // flightd: rows per Parquet row group
	optRetainedMin       = "snapshot.num-retained.min"
	optRetainedMax       = "snapshot.num-retained.max"
	optTimeRetained      = "snapshot.time-retained"
	optConsumerExpire    = "consumer.expiration-time"
	optDefaultPartition  = "partition.default-name"
	optDeletionVectors   = "deletion-vectors.enabled"
	optIgnoreDelete      = "ignore-delete"
	optPartialRemove     = "partial-update.remove-record-on-delete"
	optAggRemove         = "aggregation.remove-record-on-delete"
	optDefaultAgg        = "fields.default-aggregate-function"
	optFullDeltaCommits  = "full-compaction.delta-commits"
	optRowDeduplicate    = "changelog-producer.row-deduplicate"
	optDynamicOverwrite  = "dynamic-partition-overwrite"
	optMaxPartitions     = "partition.max-per-commit" // flightd: as Hive's hive.exec.max.dynamic.partitions
	// Per-column options: fields.<col>.aggregate-function,
	// fields.<col>.ignore-retract, fields.<col>.list-agg-delimiter and
	// fields.<g1>[,<g2>].sequence-group.
	optFieldsPrefix = "fields."
	optSchemaPrefix = "schema."
)

// Changelog producers (Paimon's names; merge engines: merge.Deduplicate
// etc.).
const (
	producerNone           = "none"
	producerInput          = "input"
	producerLookup         = "lookup"
	producerFullCompaction = "full-compaction"
)

type tableOptions struct {
	buckets           int // >= 1; an append table without buckets uses 1
	bucketKey         []string
	sequenceField     []string
	writeBufferSize   int64 // 0: the store's default
	compactionTrigger int
	stopTrigger       int
	maxSizeAmp        int
	sizeRatio         int
	minFileNum        int
	writeOnly         bool
	compression       compress.Compression
	// compressionPerLevel: the codec of the files of a level, where it is
	// not compression (file.compression.per.level).
	compressionPerLevel map[int]compress.Compression
	// lz4Below: level-0 files of fewer rows are lz4 when neither codec
	// option is set (see codec); 0 otherwise.
	lz4Below       int64
	zstdLevel      int
	targetFileSize int64
	rowGroupRows   int64
	retainedMin    int
	retainedMax    int
	timeRetained   time.Duration
	// consumerExpire: expiry ignores (and removes) consumers that made no
	// commit for this long, so abandoned ones do not pin snapshots forever.
	consumerExpire   time.Duration
	defaultPartition string
	merge            merge.Options
	producer         string
	// fullDeltaCommits: with the full-compaction producer, a full
	// compaction (and its changelog) follows this many data commits.
	fullDeltaCommits int
	// dynamicOverwrite: INSERT OVERWRITE of a partitioned table replaces
	// only the partitions it writes (Paimon's default).
	dynamicOverwrite bool
	// maxPartitions bounds the partitions one commit writes: each is at
	// least a file per bucket, and one INSERT made 3,000 in 10 s.
	maxPartitions int
}

func optErr(key, val, want string) error {
	return fmt.Errorf("%w: table option %q = %q: %s", ErrInvalid, key, val, want)
}

func parseOptions(s *tableSchema) (tableOptions, error) {
	o := tableOptions{
		buckets:           1,
		compactionTrigger: 5,
		maxSizeAmp:        200,
		sizeRatio:         1,
		minFileNum:        5,
		compression:       compress.Codecs.Zstd,
		zstdLevel:         1,
		targetFileSize:    128 << 20,
		rowGroupRows:      64 << 10,
		retainedMin:       10,
		retainedMax:       int(^uint32(0) >> 1),
		timeRetained:      time.Hour,
		consumerExpire:    24 * time.Hour,
		defaultPartition:  "__DEFAULT_PARTITION__",
		merge:             merge.Options{Engine: merge.Deduplicate},
		producer:          producerNone,
		fullDeltaCommits:  5,
		dynamicOverwrite:  true,
		maxPartitions:     1000,
	}
	if !s.hasPK() {
		o.targetFileSize = 256 << 20
	}
	// Counts past Paimon's Java int all mean "never" and are taken as its
	// largest: derived from them, the default num-sorted-run.stop-trigger
	// (the compaction trigger plus 3) overflowed.
	intOpt := func(key, val string, lo int) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < lo {
			return 0, optErr(key, val, fmt.Sprintf("want an integer >= %d", lo))
		}
		return min(n, math.MaxInt32), nil
	}
	stopSet := false
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range s.Options {
			if !yield(k) {
				return
			}
		}
	})
	for _, key := range keys {
		val := s.Options[key]
		var err error
		switch key {
		case optBucket:
			var n int
			n, err = strconv.Atoi(strings.TrimSpace(val))
			switch {
			case err != nil:
				err = optErr(key, val, "want an integer")
			case n == -1 && !s.hasPK():
				o.buckets = 1
			case n == -1 || n == -2:
				err = optErr(key, val, "dynamic and postpone bucket modes are not supported yet; use a fixed bucket count >= 1")
			case n < 1 || n > 4096:
				err = optErr(key, val, "want 1..4096")
			default:
				o.buckets = n
			}
		case optBucketKey:
			o.bucketKey = splitCols(val)
		case optMergeEngine:
			switch val {
			case merge.Deduplicate, merge.PartialUpdate, merge.Aggregation, merge.FirstRow:
				o.merge.Engine = val
			default:
				err = optErr(key, val, "want deduplicate, partial-update, aggregation or first-row")
			}
		case optSequenceField:
			o.sequenceField = splitCols(val)
		case optChangelogProducer:
			switch val {
			case producerNone, producerInput, producerLookup, producerFullCompaction:
				o.producer = val
			default:
				err = optErr(key, val, "want none, input, lookup or full-compaction")
			}
		case optFullDeltaCommits:
			o.fullDeltaCommits, err = intOpt(key, val, 1)
		case optRowDeduplicate:
			// lookup and full-compaction never emit no-op -U/+U pairs.
			if val != "true" {
				err = optErr(key, val, "only true is supported: unchanged rows never produce changelog rows")
			}
		case optIgnoreDelete, optPartialRemove, optAggRemove:
			var b bool
			b, err = strconv.ParseBool(val)
			if err != nil {
				err = optErr(key, val, "want true or false")
			} else if key == optIgnoreDelete {
				o.merge.IgnoreDelete = b
			} else {
				o.merge.RemoveOnDelete = o.merge.RemoveOnDelete || b
			}
		case optDefaultAgg:
			o.merge.DefaultAgg = val
		case optWriteBufferSize:
			o.writeBufferSize, err = parseBytes(key, val)
		case optCompactionTrigger:
			o.compactionTrigger, err = intOpt(key, val, 2)
		case optStopTrigger:
			o.stopTrigger, err = intOpt(key, val, 2)
			stopSet = true
		case optMaxSizeAmp:
			o.maxSizeAmp, err = intOpt(key, val, 1)
		case optSizeRatio:
			o.sizeRatio, err = intOpt(key, val, 0)
		case optMinFileNum:
			o.minFileNum, err = intOpt(key, val, 2)
		case optWriteOnly, optDynamicOverwrite:
			var b bool
			if b, err = strconv.ParseBool(val); err != nil {
				err = optErr(key, val, "want true or false")
			} else if key == optWriteOnly {
				o.writeOnly = b
			} else {
				o.dynamicOverwrite = b
			}
		case optCompression:
			o.compression, err = parseCodec(key, val)
		case optCompressionLevels:
			o.compressionPerLevel, err = parseCodecPerLevel(key, val)
		case optZstdLevel:
			if o.zstdLevel, err = intOpt(key, val, 1); err == nil && o.zstdLevel > 22 {
				err = optErr(key, val, "want a level from 1 to 22")
			}
		case optTargetFileSize:
			o.targetFileSize, err = parseBytes(key, val)
		case optRowGroupRows:
			var n int
			n, err = intOpt(key, val, 1)
			o.rowGroupRows = int64(n)
		case optMaxPartitions:
			o.maxPartitions, err = intOpt(key, val, 1)
		case optRetainedMin:
			o.retainedMin, err = intOpt(key, val, 1)
		case optRetainedMax:
			o.retainedMax, err = intOpt(key, val, 1)
		case optTimeRetained:
			o.timeRetained, err = parseDuration(key, val)
		case optConsumerExpire:
			o.consumerExpire, err = parseDuration(key, val)
		case optDefaultPartition:
			if val == "" || strings.ContainsAny(val, "/=") {
				err = optErr(key, val, "want a non-empty name without '/' or '='")
			}
			o.defaultPartition = val
		case optDeletionVectors:
			if val != "false" {
				err = optErr(key, val, "deletion vectors are not supported yet")
			}
		default:
			switch {
			case strings.HasPrefix(key, optFieldsPrefix):
				err = parseMergeField(&o.merge, key, val)
			case strings.HasPrefix(key, optSchemaPrefix):
				// Computed columns and the watermark, as Flink's catalog
				// keeps them: the query engine validates and reads them.
			case optionChecker(key) != nil:
				err = optionChecker(key)(key, val)
			default:
				err = fmt.Errorf("%w: unknown table option %q", ErrInvalid, key)
			}
		}
		if err != nil {
			return o, err
		}
	}
	if !stopSet {
		o.stopTrigger = o.compactionTrigger + 3
	}
	_, codecSet := s.Options[optCompression]
	_, perLevelSet := s.Options[optCompressionLevels]
	switch {
	case codecSet || perLevelSet:
	case s.hasPK():
		o.lz4Below = math.MaxInt64
	default:
		o.lz4Below = minCopyRows(o)
	}
	if o.stopTrigger < o.compactionTrigger {
		return o, optErr(optStopTrigger, s.Options[optStopTrigger], "must be >= "+optCompactionTrigger)
	}
	if o.retainedMax < o.retainedMin {
		return o, optErr(optRetainedMax, s.Options[optRetainedMax], "must be >= "+optRetainedMin)
	}
	if s.hasPK() {
		if _, ok := s.Options[optBucketKey]; ok {
			for _, c := range o.bucketKey {
				if !slices.Contains(s.PrimaryKeys, c) || slices.Contains(s.PartitionKeys, c) {
					return o, optErr(optBucketKey, s.Options[optBucketKey], fmt.Sprintf("column %q must be a primary key column that is not a partition column", c))
				}
			}
		} else {
			for _, c := range s.PrimaryKeys {
				if !slices.Contains(s.PartitionKeys, c) {
					o.bucketKey = append(o.bucketKey, c)
				}
			}
		}
	} else {
		if len(o.sequenceField) > 0 {
			return o, optErr(optSequenceField, s.Options[optSequenceField], "needs a primary key")
		}
		if o.buckets > 1 && len(o.bucketKey) == 0 {
			return o, optErr(optBucket, s.Options[optBucket], "an append table with buckets needs 'bucket-key'")
		}
	}
	for _, c := range o.bucketKey {
		if i := s.fieldIndex(c); i < 0 {
			return o, optErr(optBucketKey, s.Options[optBucketKey], fmt.Sprintf("no column %q", c))
		}
	}
	for _, c := range o.sequenceField {
		i := s.fieldIndex(c)
		if i < 0 {
			return o, optErr(optSequenceField, s.Options[optSequenceField], fmt.Sprintf("no column %q", c))
		}
		if slices.Contains(s.PrimaryKeys, c) {
			return o, optErr(optSequenceField, s.Options[optSequenceField], fmt.Sprintf("column %q is part of the primary key", c))
		}
	}
	if err := o.validateMerge(s); err != nil {
		return o, err
	}
	return o, nil
}

func splitCols(v string) []string {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseBytes parses sizes such as "64 mb", "1gb", "4096".
// parseBytes and parseDuration take a value past their type's range as its
// largest, which means the same (never), rather than refuse it: a schema
// file written with one must still load. Multiplied out, such values
// wrapped, to a negative or a small value.
func parseBytes(key, val string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(val))
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(v, u.suf) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suf)), u.m
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, optErr(key, val, "want a positive size such as 64mb")
	}
	return min(n, math.MaxInt64/mult) * mult, nil
}

// parseDuration parses Go durations plus a "d" (day) suffix.
func parseDuration(key, val string) (time.Duration, error) {
	v := strings.ReplaceAll(strings.TrimSpace(val), " ", "")
	if d, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.ParseInt(d, 10, 64)
		if err == nil && n > 0 {
			const day = int64(24 * time.Hour)
			return time.Duration(min(n, math.MaxInt64/day) * day), nil
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, optErr(key, val, "want a positive duration such as 1h or 7d")
	}
	return d, nil
}

// optionCheckers check the table options other packages read, by key
// prefix (RegisterOptions).
var optionCheckers = map[string]func(key, val string) error{}

// RegisterOptions makes table options starting with prefix valid when
// check accepts them (package lookup registers "lookup."), so a bad value
// fails the CREATE or ALTER that sets it. Call it from an init function.
func RegisterOptions(prefix string, check func(key, val string) error) {
	optionCheckers[prefix] = check
}

func optionChecker(key string) func(key, val string) error {
	for p, c := range optionCheckers {
		if strings.HasPrefix(key, p) {
			return c
		}
	}
	return nil
}

func parseCodec(key, val string) (compress.Compression, error) {
	switch strings.ToLower(strings.TrimSpace(val)) {
	case "none", "uncompressed":
		return compress.Codecs.Uncompressed, nil
	case "snappy":
		return compress.Codecs.Snappy, nil
	case "zstd":
		return compress.Codecs.Zstd, nil
	case "lz4":
		return compress.Codecs.Lz4Raw, nil
	case "gzip":
		return compress.Codecs.Gzip, nil
	}
	return 0, optErr(key, val, "want none, snappy, zstd, lz4 or gzip")
}

// parseCodecPerLevel parses Paimon's map of level to codec, such as
// "0:lz4,1:zstd"; the empty string is the empty map.
func parseCodecPerLevel(key, val string) (map[int]compress.Compression, error) {
	m := map[int]compress.Compression{}
	if strings.TrimSpace(val) == "" {
		return m, nil
	}
	for entry := range strings.SplitSeq(val, ",") {
		lv, codec, ok := strings.Cut(entry, ":")
		if !ok || strings.Contains(codec, ":") {
			return nil, optErr(key, val, fmt.Sprintf("entry %q: want level:codec, such as '0:lz4,1:zstd'", strings.TrimSpace(entry)))
		}
		n, err := strconv.Atoi(strings.TrimSpace(lv))
		if err != nil || n < 0 {
			return nil, optErr(key, val, fmt.Sprintf("level %q: want an integer >= 0", strings.TrimSpace(lv)))
		}
		if _, dup := m[n]; dup {
			return nil, optErr(key, val, fmt.Sprintf("level %d given twice", n))
		}
		if m[n], err = parseCodec(key, codec); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// codec is the codec of a data file of a level whose first batch has rows
// rows (concat: compaction will concatenate it, see concatenates): the
// level's own in file.compression.per.level, file.compression otherwise.
// Without either option, level-0 files that compaction will rewrite are
// lz4: every one of a key table, and an append table's with too few rows
// to be copied (minCopyRows) and too few bytes to be concatenated. That gained 10-13% rows per
// CPU-second (BenchmarkIngestCodec); '0:lz4' for files compaction copies
// lost 28%, since a copy keeps the inputs' codec and so applies only into
// a level of the same codec.
func (o *tableOptions) codec(level int, rows int64, concat bool) compress.Compression {
	if c, ok := o.compressionPerLevel[level]; ok {
		return c
	}
	if level == 0 && rows < o.lz4Below && !concat {
		return compress.Codecs.Lz4Raw
	}
	return o.compression
}

// compressionLevel is the level a data file is compressed at: the zstd
// level for zstd, the codec's default for the others.
func compressionLevel(o *tableOptions, codec compress.Compression) int {
	if codec == compress.Codecs.Zstd {
		return o.zstdLevel
	}
	return compress.DefaultCompressionLevel
}
