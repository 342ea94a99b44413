package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// replaceBatches are the n batches of 50,000 rows a replace sends: one
// BIGINT column named col, every value = tag.
func replaceBatches(mem memory.Allocator, col string, tag int64, n int) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{{Name: col, Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	var recs []arrow.RecordBatch
	for range n {
		b := array.NewInt64Builder(mem)
		for range 50000 {
			b.Append(tag)
		}
		arr := b.NewArray()
		recs = append(recs, array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len())))
		arr.Release()
		b.Release()
	}
	rdr, _ := array.NewRecordReader(schema, recs)
	for _, r := range recs {
		r.Release()
	}
	return rdr
}

// tableImage reads a table of one BIGINT column: its name and how often
// each value occurs.
func tableImage(cnxn adbc.Connection, table string) (string, map[int64]int, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return "", nil, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("SELECT * FROM " + table); err != nil {
		return "", nil, err
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		return "", nil, err
	}
	defer rdr.Release()
	vals := map[int64]int{}
	for rdr.Next() {
		c := rdr.RecordBatch().Column(0).(*array.Int64)
		for i := range c.Len() {
			vals[c.Value(i)]++
		}
	}
	return rdr.Schema().Field(0).Name, vals, rdr.Err()
}

// countRows counts a table's rows.
func countRows(cnxn adbc.Connection, table string) (int64, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("SELECT count(*) FROM " + table); err != nil {
		return 0, err
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	if !rdr.Next() {
		return 0, fmt.Errorf("count(*) of %s returned no row: %v", table, rdr.Err())
	}
	return rdr.RecordBatch().Column(0).(*array.Int64).Value(0), nil
}

func ingestStream(cnxn adbc.Connection, table, mode string, rdr array.RecordReader) error {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetOption(adbc.OptionKeyIngestTargetTable, table); err != nil {
		return err
	}
	if err := stmt.SetOption(adbc.OptionKeyIngestMode, mode); err != nil {
		return err
	}
	if err := stmt.BindStream(context.Background(), rdr); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(context.Background())
	return err
}

// TestKill9DuringReplace kills a real flightd with SIGKILL while a client
// replaces a table again and again, alternating its column name (a schema
// change), and creates new tables: after each restart the table is whole,
// the last acknowledged replace or the one in flight (one column, 200,000
// rows of one tag), never missing or empty; a create in flight left the
// whole table or none, and can be retried.
func TestKill9DuringReplace(t *testing.T) {
	p, rng, seed := startKill9(t)
	mem := memory.NewGoAllocator()
	cnxn, closeConn := p.connect(t)
	if err := ingestStream(cnxn, "r", adbc.OptionValueIngestModeCreate, replaceBatches(mem, "a", 0, 4)); err != nil {
		t.Fatal(err)
	}
	closeConn()
	acked, tag := int64(0), int64(0)
	col := func(tag int64) string { return []string{"a", "b"}[tag%2] }
	for round := range 4 {
		creating := fmt.Sprintf("c%d", round)
		p = p.killRound(t, time.Duration(100+rng.IntN(600))*time.Millisecond, func(cnxn adbc.Connection) bool {
			tag++
			if err := ingestStream(cnxn, "r", adbc.OptionValueIngestModeReplace, replaceBatches(mem, col(tag), tag, 4)); err != nil {
				return false
			}
			acked = tag
			if err := ingestStream(cnxn, creating, adbc.OptionValueIngestModeCreate, replaceBatches(mem, "x", tag, 4)); err != nil {
				return false
			}
			creating = fmt.Sprintf("c%d_%d", round, tag)
			return true
		})
		check, closeCheck := p.connect(t)
		name, vals, err := tableImage(check, "r")
		if err != nil {
			t.Fatalf("round %d: reading table r: %v (seed %d)", round, err, seed)
		}
		got := int64(-1)
		for _, want := range []int64{acked, tag} {
			if name == col(want) && len(vals) == 1 && vals[want] == 200000 {
				got = want
			}
		}
		if got < 0 {
			t.Fatalf("round %d: table r (column %s, values %v) is neither replace %d (acknowledged) nor %d (in flight) (seed %d)", round, name, vals, acked, tag, seed)
		}
		// The create in flight: the whole table, or none and a retry works.
		if n, err := countRows(check, creating); err == nil {
			if n != 200000 {
				t.Fatalf("round %d: interrupted create left %s with %d rows (seed %d)", round, creating, n, seed)
			}
		} else if !strings.Contains(err.Error(), "not found") {
			t.Fatal(err)
		} else if err := ingestStream(check, creating, adbc.OptionValueIngestModeCreate, replaceBatches(mem, "x", 0, 1)); err != nil {
			t.Fatalf("round %d: retrying the interrupted create of %s: %v (seed %d)", round, creating, err, seed)
		}
		closeCheck()
		t.Logf("round %d: table r holds replace %d (acknowledged %d, last sent %d)", round, got, acked, tag)
	}
	_ = p.terminate(t)
}
