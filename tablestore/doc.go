// Package tablestore is flightd's storage engine: a catalog of databases
// and tables over a file system (FS), with Paimon-style primary-key (LSM)
// and append tables.
//
//	Write ──buffer──flush (sorted, merged per key)──▶ level-0 Parquet files
//	  │                                                   │
//	  └─Commit: data files, manifests, then snapshot-N ◀── background
//	    (grouped, rebased, put-if-absent;                   universal compaction
//	    or ErrSerialization)                              │
//	Scan(snapshot|tag) ─prune partitions, files (manifest stats), row groups
//	   (Parquet stats)─▶ splits, one per partition bucket ─▶ streaming k-way
//	   merge of sorted runs via the merge function ─▶ batches in key order
//
// Layout of a table directory, Paimon's, with Paimon's metadata formats
// (meta/, schemajson.go, manifestfmt.go, paimonfmt/), so that Paimon's
// readers open flightd's tables and flightd opens theirs. The metadata
// model is the leaf package meta/: snapshots, manifest lists' entries
// (ManifestFile), manifest entries of data files with their statistics,
// the Datum values in them and their BinaryRow encoding, consumer files,
// and the CRC-32C-trailed JSON of flightd's own files; metaio.go reads and
// writes those files, manifestfmt.go maps entries and lists onto
// paimonfmt's Avro per the entry's schema, and the table schema and its
// JSON (schema.go, schemajson.go) stay here with the schema changes:
//
//	schema/schema-N            Paimon's TableSchema JSON; columns keep field
//	                           IDs. A version marked "replaces" starts a new
//	                           table (Store.StageTable) and takes effect only
//	                           with the snapshot that carries it
//	snapshot/snapshot-N        Paimon's Snapshot JSON (version 3) plus
//	                           nextSequenceNumber and a CRC of its own JSON;
//	                           LATEST and EARLIEST are hints
//	manifest/manifest-list-*   base, delta and changelog manifest lists (Avro)
//	manifest/manifest-*        ADD/DELETE entries (Avro): partition, bucket,
//	                           level, rows, key range, column stats (BinaryRow),
//	                           sequence range; flightd's file CRC-32C and what
//	                           BinaryRow cannot hold in the Avro header
//	tag/tag-NAME, consumer/consumer-ID
//	<k=v/...>/bucket-N/data-*.parquet
//	<k=v/...>/bucket-N/changelog-*.parquet
//
// Metadata written before flightd used Paimon's formats (JSON with a
// CRC-32C trailer line) is still read: schema files are rewritten in
// Paimon's JSON when read, the first commit rewrites the base manifests as
// Avro, and such tables keep the bucket hash their rows were placed by.
// New tables place keys in buckets with Paimon's function.
//
// Key-table data files hold _SEQUENCE_NUMBER and _VALUE_KIND (+I, -U, +U,
// -D; Paimon's field ids 2147483646 and 2147483645) before the table
// columns so the changelog can be rebuilt; scans
// return the merged, live rows only. A bucket's files are sorted runs with
// one version per key each; the merge orders versions by sequence.field,
// then sequence number, and the merge engine (merge-engine) combines them:
// deduplicate keeps the newest, first-row the oldest, partial-update
// overwrites non-null fields (sequence groups update their fields together),
// aggregation folds each column with its aggregate function. The merge runs
// at flush, compaction and read; files hold partial merges, so every engine
// is associative. The engines and the k-way merge of sorted runs are the
// leaf package merge/, on Arrow arrays only; mergeopts.go parses and checks
// the engines' options, mergereader.go opens a bucket's files as the runs.
//
// Changelog files (changelog-producer input, lookup or full-compaction)
// have the data-file layout (_SEQUENCE_NUMBER, _VALUE_KIND, table columns),
// are synced before the snapshot that lists them, and are listed as ADD
// entries (partition, bucket, file) in that snapshot's
// ChangelogManifestList, and in no other snapshot. Contract for readers:
//
//   - Reading the changelog files of snapshot S in entry order, and each
//     file in row order, gives S's changes; per key, changes appear in the
//     order they happened.
//   - input: an APPEND snapshot's changelog is that commit's input rows
//     with their row kinds, unmerged, one file per bucket in input order
//     (complete only if the input was a complete CDC stream; rows dropped
//     by ignore-delete are not in it).
//   - lookup: an APPEND or OVERWRITE snapshot's changelog is, for every
//     key whose merged row differs between S-1 and S, +I new, -U old then
//     +U new, or -D old (rows an overwrite removes included); nothing for
//     unchanged keys. It is computed at commit, under the table's commit
//     lock, against the snapshot the commit lands on (recomputed when a
//     concurrent commit wins the race), so it is exact with concurrent
//     writers. Files are in key order per bucket.
//   - full-compaction: every full-compaction.delta-commits (default 5) data
//     commits, and on Compact(ctx, true), a full compaction is followed by
//     a COMPACT snapshot whose changelog is the diff (as for lookup)
//     between the merged content at the previous such snapshot (or the
//     empty table) and now. Expiry keeps that previous snapshot. A reader
//     that wants an image plus changes must take the image at such a
//     snapshot (fullChangelogAtOrBefore; the empty table when there is
//     none): the next changelog diffs from it, not from later snapshots.
//   - none: no changelog files; the delta data files of APPEND snapshots
//     are the changes as upserts without before-images (and -D rows),
//     complete only for deduplicate; overwritten rows are not in them.
//
// Table.ChangelogComplete says whether a table's combination of merge
// engine and producer gives a complete change stream. Expiry removes
// changelog files with the last snapshot that lists them (tags keep
// theirs); RemoveOrphanFiles removes unlisted ones.
//
// Durability: data files and manifests are synced before the snapshot that
// references them is published, and Commit returns only after the snapshot
// is synced and read back. The manifests of a commit and their directory
// are synced at once (one device wait, not one per file), and so are the
// directories of its data files. The LATEST and EARLIEST hints are not
// synced: a hint may be stale, and one lost or garbled in a crash makes a
// reader list the snapshots (TestUnsyncedHint). A crash leaves the last
// published snapshot intact; files of unpublished commits are unreferenced
// leftovers that RemoveOrphanFiles reclaims.
//
// Concurrency: Store, Table and Scan are safe for concurrent use; a Write
// is not. Commits of one table are serialized per process (plain appends
// queued meanwhile are published together in one snapshot) and by
// put-if-absent between processes. Blind writes never fail for being
// concurrent: a commit is rebased on the latest snapshot, and where a
// commit since its rows were numbered wrote one of its keys with a higher
// sequence number, its files of that bucket are rewritten with new numbers,
// so per key the merge order is the commit order.
// WriteOptions.ReadModifyWrite turns on first-committer-wins, key by key:
// ErrSerialization if a commit after the base snapshot wrote one of the
// keys (or changed the overwritten scope). CommitAll commits writes to several
// tables together: all, or none when one of them conflicts with the commits
// it is checked against; a commit of another process that lands between the
// check and the publications can leave only the earlier tables published.
//
// Snapshots carry the writer's properties (WriteOptions.Properties; a
// commit with them is never grouped with others); Table.LastProperties
// finds the newest that has a key. A materialized table keeps its
// definition in its schema (MaterializedDef, changed by SetMaterialized) and
// its refreshes' source snapshots in these properties (mtable.go).
//
// Snapshot lifetime: a Scan leases its snapshot until Close (or garbage
// collection); expiry keeps leased snapshots, those consumers still need,
// and the files of tags.
//
// Memory: every Arrow buffer comes from Options.Mem. A batch returned by a
// BatchReader is borrowed until the next Next or Close; batches passed to
// Write are retained until the next flush.
package tablestore
