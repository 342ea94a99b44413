// Package paimonfmt encodes Apache Paimon's on-disk metadata formats that
// are not JSON: the BinaryRow encoding of partitions, keys and statistics,
// Paimon's bucket hash, and the Avro manifest and manifest-list files.
// It knows nothing of the table store; tablestore maps its own structures
// onto these.
package paimonfmt
