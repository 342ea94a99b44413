// Package difftest is a random differential test of flightd's query engine
// against DuckDB (issue 4): the same generated tables, the same random
// queries, the same answers.
//
// A run has a seed. Tables(seed) generates four small tables (key tables t1
// and t4 bucketed alike, append tables t2 and t3, t3 partitioned) with
// integers of four widths, decimals, doubles that add exactly, strings with
// shared prefixes, dates and booleans, NULLs and duplicates everywhere.
// Setup loads them into flightd's engine in-process (a warehouse under a
// test directory, several inserts per table, key tables with overwritten
// rows, a batch size and a set of disabled planner rules drawn from the
// seed) and into an in-memory DuckDB. NewGen(seed, i) generates query i of
// the run from typed expression trees (see Gen for what is left out and
// why); Env.Check runs it on both engines and compares the answers with
// bench/tpcds.Compare: as multisets, or in order where the outer ORDER BY
// is a total order (every output column); exact for integers and decimals,
// to a relative 1e-9 for doubles. An error on one side only is a finding,
// except flightd's not-implemented errors (counted) and known DuckDB binder
// limits.
//
// go test ./difftest runs 250 queries with a time-derived seed (printed)
// and the queries of testdata/regressions.txt; -difftest.seed,
// -difftest.n, -difftest.runs, -difftest.query (replay one) and
// -difftest.print (show the SQL) control it, DIFFTEST_SEED sets the seed
// too.
package difftest
