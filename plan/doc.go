// Package plan binds SQL statements (package sql) against a Catalog,
// optimizes them and builds exec operator trees.
//
//	sql.Statement --Bind (bind*.go)--> logical Node tree (logical.go; columns by ColumnID)
//	                  |
//	                  |  logical rules (rules*.go), applied in order by the
//	                  |  driver in rules.go from the list logicalRules, each
//	                  |  func(*binder, Node) Node; all but inline_ctes and
//	                  |  join_keys switchable by name (Options.DisabledRules);
//	                  |  Options.Trace prints the plan after each:
//	                  |    inline_ctes      a CTE referenced once is inlined (shared_cte,
//	                  |                     a switch of the binder: a CTE referenced more
//	                  |                     than once is planned once and computed once per
//	                  |                     execution into an exec.Spool its CTEScans
//	                  |                     replay, filtered by the OR of the references'
//	                  |                     filters; so is a derived table the statement
//	                  |                     has twice word for word, and one query of the
//	                  |                     aggregates of uncorrelated scalar subqueries
//	                  |                     that differ only in them: merge_scalar_subqueries)
//	                  |    fold_constants   constant subexpressions evaluated once, AND/OR
//	                  |                     with a TRUE or FALSE side simplified; a batch
//	                  |                     filter left FALSE empties what it reads
//	                  |    push_filters     conjuncts down through projections, joins,
//	                  |                     aggregations and unions into scans; a column
//	                  |                     constant on one side of an equi-join filters
//	                  |                     the other (constCols); a disjunction over both
//	                  |                     sides filters each by what it implies there;
//	                  |                     LEFT JOIN + right key IS NULL -> anti join
//	                  |    refold_constants again after push_filters substituted definitions
//	                  |    cte_filters      records the filter above each shared CTE reference
//	                  |    join_order       dynamic programming over up to 10 inputs:
//	                  |                     the bushy, connected tree with the least sum of
//	                  |                     estimated intermediate and hash table rows
//	                  |                     (greedy beyond, or when not connected);
//	                  |                     semi/anti joins move down to the input they
//	                  |                     read or up above the joins, left joins up,
//	                  |                     whichever is estimated cheaper. Estimates
//	                  |                     (stats.go) use the snapshot's column statistics
//	                  |                     (tablestore.ColumnStats: ranges, null counts,
//	                  |                     NDVs) for selectivities, join and group-by
//	                  |                     cardinalities
//	                  |    join_keys        the larger input of an inner join on the left;
//	                  |                     join conditions split into equality keys and a
//	                  |                     residual
//	                  |    eager_aggregate  an aggregation over an inner join whose
//	                  |                     aggregates read one side and whose other side
//	                  |                     gives string group columns aggregates the first
//	                  |                     side by its join keys first, where estimated to
//	                  |                     reduce its rows (rules_eager.go); so do pivots,
//	                  |                     SUM/MIN/MAX(CASE WHEN <other side's strings>
//	                  |                     THEN <first side> END): the arms first
//	                  |    prune_columns    scans and projections keep what is read
//	                  |    scan_predicates  column-vs-constant scan filters become
//	                  |                     tablestore.Predicates (partition/file skipping)
//	                  v
//	        optimized logical plan ---------------------------------+
//	                  |                                             |
//	  batch physical planner (physical_plan.go), choices            |
//	  switchable by name like the rules:                            |
//	    joins with equality keys: MergeJoin when both inputs        |
//	      are ordered on the keys (merge_join; bucket by bucket     |
//	      for tables bucketed alike), else HashJoin; without:       |
//	      NestedLoopJoin                                            |
//	    aggregations: SortAggregate on a primary-key prefix of a    |
//	      scan (sort_aggregate), ParallelHashAggregate with over    |
//	      1000 estimated groups and no grouping sets                |
//	      (parallel_aggregate), else HashAggregate                  |
//	    LIMIT over ORDER BY -> TopN (top_n)                         |
//	    scan pipelines run once per core under Gather               |
//	      (parallel_scan) unless read in order above                |
//	    a HashJoin (inner, semi, right) whose build side is         |
//	      estimated at most a tenth of its probe side publishes     |
//	      its integer build keys' range before it opens its probe   |
//	      side; the TableScans below (each UNION input's) skip      |
//	      files and row groups outside it and drop rows whose key   |
//	      is not a build key (runtime_filter, exec.KeyRange)        |
//	    everything else: PlainOp                                    |
//	                  v                                             v
//	     PhysicalNode tree (physical.go)          streaming planner (stream_plan.go):
//	                  |                           sNodes over package stream, or the
//	                  |                           shape refused with its reason
//	  *Query (immutable) --Build(ec, params) (build.go)--> exec.Operator
//	                     --BuildAnalyze----------------> operator + per-operator report
//
// Rules rewrite logical nodes only: physical nodes are not Nodes, and no
// file of the logical layer names a physical type (TestPhysicalLayer).
// A streaming query (a table hint with scan.mode) is bound and optimized
// the same way; the streaming planner builds incremental operators of
// package stream from the logical nodes and never sees the batch choices.
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
