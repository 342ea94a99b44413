// Package plan binds SQL statements (package sql) against a Catalog,
// optimizes them and builds exec operator trees.
//
//	sql.Statement --Bind--> logical Node tree (columns by ColumnID)
//	                 |         fold_constants, push_filters, join_order,
//	                 |         planJoins (hash / nested-loop), prune_columns,
//	                 |         top_n, scan predicate pushdown
//	                 v
//	           *Query (immutable) --Build(ec, params)--> exec.Operator
//
// Expressions refer to columns by ID, never by position, so rules can move
// operators freely; Build maps IDs to positions of each operator's input.
// Subqueries are decorrelated while binding: [NOT] EXISTS and [NOT] IN in
// WHERE become semi/anti joins, correlated scalar subqueries with
// aggregates become grouped left joins, and EXISTS/IN elsewhere become
// left joins with a match marker. Errors name the position in the SQL text
// (*sql.Error); unsupported features wrap ErrNotImplemented.
package plan
