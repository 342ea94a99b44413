// Package maintenance decides a table's upkeep: which sorted runs of a
// bucket to compact (universal compaction for key tables, small files for
// append tables) and how many of the oldest snapshots expiry removes.
//
// It decides only; tablestore gives it file and snapshot metadata and
// carries the decision out. The I/O stays there because compaction and
// expiry run in the write path (a commit starts a background pass and
// stalls its writer while a bucket has too many runs) and change the
// store's private state under its locks (commit, snapshot leases, the
// cached live files), so a package above the store could not be called by
// it. So this package imports nothing of flightd, and is tested without a
// store.
//
//	tablestore.compactAll ─ files of a bucket ─▶ SortedRuns ─▶ PickUniversal / PickAppend ─▶ Unit
//	  └─ merge the Unit's files, commit them as COMPACT
//	tablestore.expire ─ snapshot ids, retention, protected id ─▶ Expirable ─▶ n
//	  └─ delete what only the n oldest snapshots reference, then them
package maintenance
