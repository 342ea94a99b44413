// Package engine is the facade between the Flight SQL endpoint and the rest
// of flightd: it parses, binds and runs one statement at a time against the
// table store, and owns sessions and transactions.
//
//	flightsql ──SQL text──────▶ Session.Prepare ──sql.Parse──▶ AST
//	          ──ChangeRequest─▶ Session.PrepareChanges ──────▶ AST
//	                                         ──plan.Bind──▶ bound statement
//	          ◀─Schema / ParamSchema─────────
//	          ──Rows(params)──▶ plan.Query.Build ──▶ exec.Operator ──▶ Rows
//	          ──Exec(params)──▶ DDL / DML against tablestore ──▶ update count
//
// The endpoint (flightsql) reaches the query engine only through this
// package: Statement.Rows runs a query as a record reader (with a
// StreamObserver for change streams); KindOf and SQLState classify errors
// of every layer below (errors.go); Databases, Tables, Views and Table
// list the catalog (metadata.go); PrepareChanges builds a change stream's
// query from a ChangeRequest's fields and ResetConsumer moves a consumer
// (changes.go), without SQL text.
//
// Queries run lazily: Rows pulls batches as the caller reads. Statements with side effects (DDL, DML, ingest) run eagerly inside
// Exec and are committed before it returns, so a client that never fetches
// still gets the side effect exactly once.
//
// An INSERT whose query reads a stream (a scan.mode hint) starts a
// continuous job instead (job.go): a goroutine of the engine, stored in the
// catalog and restarted by Open, that keeps the target equal to the query's
// answer, exactly once across crashes. Close stops the jobs.
//
// Materialized tables (mtable.go) are refreshed by a Scheduler that Open
// starts and Close stops: each refresh is one INSERT OVERWRITE of the
// table's query, read with its sources pinned, recording their snapshot ids
// in the commit.
//
// Transactions give snapshot isolation: every table read inside a
// transaction is read at the snapshot that was current when the transaction
// began, and writes are buffered per table and published on Commit. Writes
// to several tables are committed table by table, so a crash during Commit
// can publish some tables and not others.
package engine
