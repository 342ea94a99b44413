// Package gen is a deterministic, parallel TPC-DS data generator that
// produces Arrow record batches for the 24 tables of a TPC-DS schema
// directory (one "create table" statement per file).
//
// It is not a port of dsdgen: the values are drawn from this package's own
// seeded hash streams, so answers differ from the official answer sets. What
// it keeps from the specification is what the 99 queries depend on:
//
//   - row counts per scale factor (store_sales 2,880,404 at SF1, dimensions
//     scaled sub-linearly with dsdgen's scaling tables, inventory as
//     items x warehouses x weeks);
//   - the value domains the queries filter on (the real calendar in date_dim,
//     categories, classes, brands, colors, units, sizes, states, counties,
//     cities, zip codes, demographics, buy potentials, ship modes, reasons);
//   - the shape of the facts: tickets/orders with several lines sharing the
//     order-level keys, returns that point at existing sales lines,
//     prices derived from wholesale cost, markup, discount and quantity.
//
// Every value is a pure function of (seed, table, row, column), so any range
// of rows can be generated independently: Reader fans chunks out over
// workers and yields them in order, and the output is identical for any
// batch size or worker count.
//
// Below SF1 the tiny fixed-content dimensions (store, call_center,
// warehouse, web_site, web_page, reason, promotion) keep their SF1 sizes, so
// that literal filters such as ss_store_sk = 4 or r_reason_desc = 'reason 28'
// still select rows; every other table follows the scaling rules.
package gen
