// Package plan binds SQL statements (package sql) against a Catalog,
// optimizes them and builds exec operator trees.
//
//	sql.Statement --Bind--> logical Node tree (columns by ColumnID)
//	                  |  rules, each switchable (Options.DisabledRules):
//	                  |    shared_cte       a CTE referenced more than once is planned
//	                  |                     once and computed once per execution into an
//	                  |                     exec.Spool its CTEScans replay, filtered by the
//	                  |                     OR of the references' filters; referenced once
//	                  |                     it is inlined
//	                  |    fold_constants   constant subexpressions evaluated once, AND/OR
//	                  |                     with a TRUE or FALSE side simplified; again
//	                  |                     after push_filters substituted definitions
//	                  |    push_filters     conjuncts down through projections, joins,
//	                  |                     aggregations and unions into scans, where
//	                  |                     column-vs-constant terms become
//	                  |                     tablestore.Predicates (partition/file skipping);
//	                  |                     a column constant on one side of an equi-join
//	                  |                     filters the other (constCols); a disjunction
//	                  |                     over both sides filters each by what it implies
//	                  |                     there; LEFT JOIN + right key IS NULL -> anti join
//	                  |    join_order       dynamic programming over up to 10 inputs:
//	                  |                     the bushy, connected tree with the least sum of
//	                  |                     estimated intermediate and hash table rows
//	                  |                     (greedy beyond, or when not connected);
//	                  |                     semi/anti joins move down to the input they
//	                  |                     read or up above the joins, left joins up,
//	                  |                     whichever is estimated cheaper; hash build
//	                  |                     side = smaller
//	                  |                     side. Estimates (stats.go) use the snapshot's
//	                  |                     column statistics (tablestore.ColumnStats:
//	                  |                     ranges, null counts, NDVs) for selectivities,
//	                  |                     join and group-by cardinalities
//	                  |    (planJoins)      equality keys -> hash join, else nested loop
//	                  |    prune_columns    scans and projections keep what is read
//	                  |    top_n            ORDER BY + LIMIT -> top-N
//	                  |    sort_aggregate   GROUP BY on a primary-key prefix of a scan
//	                  |    merge_join       inputs ordered on the keys: sort-merge join,
//	                  |                     bucket by bucket for tables bucketed alike
//	                  |    parallel_scan    scan pipelines run once per core under Gather
//	                  |    parallel_aggregate  hash aggregation partitioned over the cores
//	                  |    runtime_filter   a hash join (inner, semi, right) whose build side
//	                  |                     is estimated at most a tenth of its probe side
//	                  |                     publishes its integer build keys' range before
//	                  |                     it opens its probe side; the scan below skips
//	                  |                     files and row groups outside it (exec.KeyRange)
//	                  v
//	           *Query (immutable) --Build(ec, params)--> exec.Operator
//	                              --BuildAnalyze-------> operator + per-operator report
//
// A streaming query (a table hint with scan.mode) is bound and optimized
// the same way, without the rules that choose batch operators (top_n,
// sort_aggregate, merge_join, parallel_*, runtime_filter); the streaming
// planner (stream_plan.go) then builds incremental operators of package
// stream from the logical nodes, or refuses the shape with its reason.
//
// Expressions refer to columns by ID, never by position, so rules can move
// operators freely; Build maps IDs to positions of each operator's input.
// Subqueries are decorrelated while binding: [NOT] EXISTS and [NOT] IN in
// WHERE become semi/anti joins (uncorrelated NOT IN null-aware), correlated
// scalar subqueries become left joins grouped on the correlation key, and
// EXISTS/IN elsewhere (and correlated NOT IN) become left joins with a match
// marker, IN also with a per-key "has a NULL" aggregate. Aggregate
// subqueries without GROUP BY, and EXISTS/IN in expressions, correlated
// otherwise (x.k < o.k) are computed per numbered outer row over a left
// join (applyAggs). Errors name the
// position in the SQL text (*sql.Error); valid SQL that cannot run yet wraps
// ErrNotImplemented.
package plan
