// Package tablestore is flightd's storage engine: a catalog of databases
// and tables over a file system (FS), with Paimon-style primary-key (LSM)
// and append tables.
//
//	Write ──buffer──flush (sorted, merged per key)──▶ level-0 Parquet files
//	  │                                                   │
//	  └─Commit: data files, manifests, then snapshot-N ◀── background
//	    (put-if-absent; retried, or ErrConflict)            universal compaction
//	                                                      │
//	Scan(snapshot|tag) ─prune partitions, files (manifest stats), row groups
//	   (Parquet stats)─▶ splits, one per partition bucket ─▶ streaming k-way
//	   merge of sorted runs via the merge function ─▶ batches in key order
//
// Layout of a table directory (Paimon's, with JSON metadata files that end
// in a CRC-32C trailer instead of Avro):
//
//	schema/schema-N            versioned schemas; columns keep field IDs
//	snapshot/snapshot-N        snapshots; LATEST and EARLIEST are hints
//	manifest/manifest-list-*   base and delta manifest lists
//	manifest/manifest-*        ADD/DELETE entries: partition, bucket, level,
//	                           rows, key range, column stats, sequence range,
//	                           file size and CRC-32C
//	tag/tag-NAME, consumer/consumer-ID
//	<k=v/...>/bucket-N/data-*.parquet
//
// Key-table data files hold _SEQUENCE_NUMBER and _VALUE_KIND (+I, -U, +U,
// -D) before the table columns so the changelog can be rebuilt; scans
// return the merged, live rows only. A bucket's files are sorted runs with
// one version per key each; the merge orders versions by sequence.field,
// then sequence number, and the merge function (deduplicate) picks one.
//
// Durability: data files and manifests are synced before the snapshot that
// references them is published, and Commit returns only after the snapshot
// is synced and read back. A crash leaves the last published snapshot
// intact; files of unpublished commits are unreferenced leftovers that
// RemoveOrphanFiles reclaims.
//
// Concurrency: Store, Table and Scan are safe for concurrent use; a Write
// is not. Commits of one table are serialized per process and by
// put-if-absent between processes. Blind writes to one bucket conflict only
// when sequence numbers could order them wrongly; WriteOptions.BaseSnapshot
// turns on first-committer-wins for read-modify-write; overwrites conflict
// with data added to their scope after their base.
//
// Snapshot lifetime: a Scan leases its snapshot until Close (or garbage
// collection); expiry keeps leased snapshots, those consumers still need,
// and the files of tags.
//
// Memory: every Arrow buffer comes from Options.Mem. A batch returned by a
// BatchReader is borrowed until the next Next or Close; batches passed to
// Write are retained until the next flush.
package tablestore
