package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/tablestore"
)

// TestIngestCreateAppendRacing: ten clients on two engines over one
// warehouse bulk-ingest three rows each into a table that does not exist
// yet, at once, most with create_append, some with append. The table is
// created with the rows of one create_append, in one commit, so that a
// failed stream leaves nothing (flightsql TestHostileDoPuts); the other
// create_appends fail only with "already exists" or a conflict (a client
// retries and appends), an append only with "not found" or a conflict, and every
// acknowledged row is there once, none of a failed ingest. The retry is
// checked too: each failed create_append, run again, appends. (Creating
// the table first and then appending made every racing create_append
// succeed, but left a table behind when the stream then failed.)
func TestIngestCreateAppendRacing(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	engines := nodesSharing(t, 2)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const clients = 10
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	for round := range 10 {
		tbl := fmt.Sprintf("ca%d", round)
		modes := make([]engine.IngestMode, clients)
		for c := range modes {
			modes[c] = engine.IngestCreateAppend
			if rng.IntN(4) == 0 {
				modes[c] = engine.IngestAppend
			}
		}
		// ingest sends client c's three rows in its mode.
		ingest := func(c int) error {
			b := array.NewRecordBuilder(mem, schema)
			defer b.Release()
			for i := range 3 {
				b.Field(0).(*array.Int64Builder).Append(int64(c*10 + i))
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
			if err != nil {
				return err
			}
			defer rdr.Release()
			req := engine.IngestRequest{Table: tablestore.Ident{Table: tbl}, Mode: modes[c]}
			_, err = engines[c%2].NewSession().Ingest(ctx, req, rdr)
			return err
		}
		errs := make([]error, clients)
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[c] = ingest(c)
			}()
		}
		wg.Wait()
		// A create_append that lost the race to create the table appends
		// when run again.
		for c, err := range errs {
			if err != nil && modes[c] == engine.IngestCreateAppend {
				if !errors.Is(err, tablestore.ErrTableExists) && !errors.Is(err, tablestore.ErrConflict) {
					t.Errorf("round %d: create_append of client %d failed: %v", round, c, err)
				}
				errs[c] = ingest(c)
			}
		}
		got := map[string]int{}
		for _, r := range rows(t, engines[round%2].NewSession(), "SELECT id FROM "+tbl) {
			got[r[0]]++
		}
		for c, err := range errs {
			switch {
			case err == nil:
			case modes[c] == engine.IngestCreateAppend:
				t.Errorf("round %d: create_append of client %d failed again: %v", round, c, err)
			case !errors.Is(err, tablestore.ErrTableNotFound) && !errors.Is(err, tablestore.ErrConflict):
				// A conflict: it met a losing create_append's abandoned
				// schema (seen under -race).
				t.Errorf("round %d: append of client %d failed: %v", round, c, err)
			}
			for i := range 3 {
				want := 1
				if err != nil {
					want = 0
				}
				if n := got[fmt.Sprint(c*10+i)]; n != want {
					t.Errorf("round %d: row %d of client %d (error %v) is there %d times", round, i, c, err, n)
				}
			}
		}
	}
}
