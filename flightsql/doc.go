// Package flightsql is flightd's Arrow Flight SQL endpoint. It embeds
// arrow-go's flightsql.BaseServer and translates Flight SQL commands into
// engine calls:
//
//	GetFlightInfo(CommandStatementQuery)  parse + bind (errors here, with line:column);
//	                                      DDL/DML runs here, eagerly, exactly once
//	DoGet(TicketStatementQuery)           execute; stream batch by batch from exec
//	DoPut(CommandStatementUpdate)         execute, return the update count
//	DoPut(CommandStatementIngest)         bulk ingest, one commit
//	prepared statements                   bound plans kept per handle; parameters by DoPut
//	metadata commands                     answered from the engine's catalog calls
//	DoGet(flightd/changes1: ticket)       change stream: engine.ChangeRequest, no SQL text
//	DoExchange(JSON LookupCommand)        lookups by key: key batches in, rows + found out
//	DoGet(flightd/lookup1: ticket)        the same for a key list (engine.Lookup)
//	Begin/EndTransaction                  engine transactions (snapshot isolation)
//	BEGIN/COMMIT/ROLLBACK as SQL          a transaction of the client's session (txn.go)
//	ListFlights                           the readable tables, each with a ticket that reads it
//
// Query tickets are self-contained (the SQL text, database, transaction and
// user), signed with the server key, so a ticket stays valid however long
// the client waits and whichever flightd sharing the key serves it, and
// nobody can forge or alter one or redeem another user's; prepared-statement
// handles and transactions are server state, per client and bounded
// (Limits). With authentication, grants decide what each user may do
// (grants.go, engine.Authorizer).
//
// It imports no query-engine package but engine (internal/layering checks
// it). This is the only package that turns errors into gRPC status codes
// (status.go, by engine.KindOf), with the SQLSTATE at the end of the
// message where the error has one (engine.SQLState). What clients send is checked before arrow-go decodes it
// (guard.go, ipccheck.go), and a panic in any handler ends only its call.
package flightsql
