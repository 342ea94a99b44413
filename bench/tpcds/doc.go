// Package tpcds loads generated TPC-DS data into DuckDB and into flightd,
// runs the 99 queries on both, checks flightd's answers against DuckDB's and
// times both.
//
// DuckDB (github.com/duckdb/duckdb-go) is the reference; flightd is reached
// the way a user reaches it, through the ADBC Flight SQL driver, and is
// loaded through ADBC bulk ingest. Answers are compared as ordered lists
// where the query's outermost ORDER BY fixes the order (rows tied on the
// sort keys may come in any order) and as multisets otherwise; decimals and
// integers must be equal exactly, floats to a relative 1e-9, and NULLs sort
// as in Postgres (last ascending, first descending).
package tpcds
