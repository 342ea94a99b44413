// Package stream holds flightd's incremental operators: each consumes
// changelogs and produces a changelog, so that a query over change streams
// keeps its answer up to date instead of computing it once.
//
//	tablestore.ChangeReader ─► Source ─► [Normalize] ─► Filter/Project ─►
//	    Aggregate / Join ─► ... ─► Sink (an exec.Operator for Flight DoGet)
//
// # Changelog batches
//
// Every batch has the row kind (tablestore.RowKindColumn: "+I", "-U",
// "+U", "-D") as column 0, then the operator's columns. Applying a
// changelog means adding the rows of +I/+U and removing one copy of the
// rows of -U/-D. Given exact inputs (a Source of a table with
// before-images, or Normalize), every operator emits only retractions of
// rows it emitted before, with their exact values; Normalize and Aggregate
// emit an update as a -U immediately followed by its +U in the same batch,
// Join emits +I and -D.
//
// # Chunks, positions and mini-batches
//
// Operators pass Chunks: a batch of changes, or a marker. A Pos is the
// snapshot each source has been read to (one entry per source of the
// query). A marker at Pos P says every change up to P has been emitted.
// Sources emit a marker at the end of every snapshot (and the reader's
// progress markers, flagged CaughtUp). Aggregate and Normalize buffer the
// changes of one mini-batch and emit their net effect at the next marker
// before passing it on: the output of one input snapshot is complete
// before the next snapshot's changes, so markers stay exact and an
// aggregate emits one -U/+U per changed group per snapshot, not per row.
// Join emits the joined rows of each input batch as it processes it, and
// takes a snapshot of one side whole before the other side's changes, so
// its markers are exact too.
//
// # Operators
//
// Source (a ChangeReader), Normalize (ChangelogNormalize: upserts without
// before-images to exact -U/+U/-D by primary key), Filter, Project,
// Aggregate (GROUP BY with retraction, HAVING), Join (inner, left, right,
// full, semi, anti on equality keys plus a residual), Rank (top-N and
// deduplication with retraction), UnionAll,
// WindowAggregate (window TVF aggregation by event time), SessionAggregate
// (SESSION windows), WindowRank (window top-N), WindowJoin,
// IntervalJoin and RowtimeTemporal (joins by event time, state freed by
// watermark), OverAggregate (OVER aggregation by event time),
// WatermarkColumn (CURRENT_WATERMARK), and Sink.
//
// # Event time
//
// A Source given a watermark (SetWatermark) puts on each marker the
// largest event time it has read minus the delay; Join and UnionAll put the
// smaller of their inputs', other operators pass markers on. A
// WindowAggregate emits a window once at the marker whose watermark passes
// its end, drops late rows and adds their count to the markers' LateRows;
// an OverAggregate emits a row once the watermark passes its event time.
//
// # State and memory
//
// All stateful operators of one query share a Budget
// (Context.MemoryLimit), and all spill past it: at a marker they move
// state entries (a group, a partition, a key's row, a join key's rows, a
// window's group, a window top-N or SESSION partition, a window's or an
// interval join's rows of a join key) to a spillStore on disk until half
// the budget is free, and read an entry back when a change reaches it (the
// event-time operators also when the watermark closes or expires it); what
// one mini-batch touches must fit.
//
// The ownership rules of package exec apply: a chunk's batch is borrowed
// until the next Next or Close of the operator that returned it.
package stream
