// Package meta is a table's metadata model and its JSON files: the
// snapshot (Paimon's Snapshot JSON, with flightd's checksum and parent),
// the manifest list's ManifestFile and the manifest's ManifestEntry of a
// DataFile with its key range and ColStats, the Datum values they hold
// (partition values, key bounds, statistics), the commit and entry kinds,
// the consumer file, the CRC-32C-trailed JSON of flightd's own metadata
// files (Encode, Decode), and a datum as a value of Paimon's BinaryRow
// (EncodeDatums, DecodeDatums, PaimonType, PaimonValue).
//
// It is separate because every part of the store reads these structures
// (commit, scan pruning, compaction, expiry, change readers, system
// tables) while none of them needs the store: what a snapshot or a file
// entry is, and how it is encoded, is stated and tested here without a
// Store, a file system or a lock. tablestore reads and writes the files
// (metaio.go), maps entries and lists onto Paimon's Avro manifests
// (manifestfmt.go, with paimonfmt), and keeps the table schema, whose JSON
// (schemajson.go) goes with the schema changes and options it validates.
//
//	tablestore ──▶ meta ──▶ paimonfmt (BinaryRow, SimpleStats)
//
// It imports nothing of flightd but paimonfmt.
package meta
