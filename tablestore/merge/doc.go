// Package merge is the merge of a key table's versions: the merge engines
// decide what survives of the versions of one key, and Reader streams the
// k-way merge of a bucket's sorted runs through them, in key order.
//
// Deduplicate keeps the newest version, first-row the oldest
// (Options.Pick); partial-update and aggregation build the row
// (Options.BuildsRows), partial-update with sequence groups, aggregation
// with an aggregate function per column. Versions are ordered oldest
// first, by sequence.field then sequence number. Files hold partial merges
// that are merged again at compaction and read, so every engine is
// associative. Rows are compared by an order-preserving encoding
// (AppendNormalized) and merged rows assembled by reference to their input
// rows (Ref, Gather).
//
// It is separate so the merge's semantics read and test on Arrow arrays
// alone, without a store: tablestore parses and checks the table options
// into Options, describes the columns (Column, Layout), opens a bucket's
// files as Runs for the Reader, merges its write buffer at flush (Merge of
// an Input), and writes the merged rows to files. It imports nothing of
// flightd.
package merge
