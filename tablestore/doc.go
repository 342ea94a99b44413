// Package tablestore is flightd's storage engine: a catalog of databases
// and tables over a file system, with Paimon-style primary-key (LSM) and
// append tables.
//
//	Write ──buffer──flush (sorted, merged)──▶ level-0 Parquet files
//	  │                                             │
//	  └─Commit: manifests, then snapshot-N (put-if-absent) ◀── compaction
//	                                                │
//	Scan(snapshot) ─prune partitions/files/row groups─▶ splits (one per
//	bucket) ─k-way merge of sorted runs via the merge function─▶ batches
//
// Layout of a table directory (Paimon's, with JSON metadata files that end
// in a CRC-32C trailer instead of Avro):
//
//	schema/schema-N            versioned schemas; columns keep field IDs
//	snapshot/snapshot-N        snapshots; LATEST is a hint
//	manifest/manifest-list-*   base and delta manifest lists
//	manifest/manifest-*        ADD/DELETE entries with statistics
//	tag/tag-NAME               snapshots pinned by name
//	<k=v/...>/bucket-N/data-*.parquet
//
// Key-table data files hold _SEQUENCE_NUMBER and _VALUE_KIND (+I, -U, +U,
// -D) before the table columns, so the changelog can be rebuilt. Scans of
// key tables return the merged, live rows only.
//
// Durability: data files and manifests are synced before the snapshot that
// references them is published; Commit returns after the snapshot is synced
// and read back. A crash at any point leaves the last published snapshot
// intact; files of unpublished commits are unreferenced leftovers.
//
// Memory: every Arrow buffer comes from Options.Mem. Batches returned by a
// BatchReader are borrowed until the next Next or Close; batches passed to
// Write are retained until the next flush.
package tablestore
