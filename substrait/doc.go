// Package substrait reads and writes Substrait plans (substrait.io).
//
//	Substrait plan (protobuf) ──Consume──▶ sql.Statement (a query, INSERT or CTAS)
//	                                          └─ bound by plan.Bind like SQL text
//	plan.Node (bound, optimized) ──Produce──▶ Substrait plan (protobuf)
//
// The consumer translates relations into the SQL they mean: each relation
// is a FROM item, a WHERE and one expression per output column, extended in
// place where SQL allows (a Project above a Sort keeps the ORDER BY) and
// wrapped into a derived table otherwise; field references become those
// expressions, outer references the enclosing relation's. Binding the
// result gives a plan the same type checks, grants, subquery decorrelation
// and optimizer as SQL. Functions are mapped by name from the standard
// extensions (extension:io.substrait:functions_*; older producers' URIs of
// the same files are mapped to those URNs) and from flightd's own
// (extension:io.flightd:functions), which the producer declares for
// functions without a standard name. What the consumer refuses is an
// ErrInvalid naming the relation, function or field and its path in the
// plan (root.input.join.left.filter.condition.scalar_function...).
//
// The producer writes one relation per logical node; shared CTEs become
// plan relations referenced by ReferenceRel, scalar subqueries single
// joins, NOT IN joins NOT (x IN (subquery)). Nodes with no Substrait form
// (UNNEST, reads of change streams or pinned snapshots) are ErrNoForm.
package substrait
