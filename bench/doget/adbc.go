package doget

import (
	"context"
	"os"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
)

// ServeADBC serves flightd over a new temporary warehouse (its directory
// is dir) and opens an ADBC Flight SQL database on it; stop closes both
// and removes the warehouse.
func ServeADBC(ctx context.Context, mem memory.Allocator, name string) (db adbc.Database, dir string, stop func(), err error) {
	dir, err = os.MkdirTemp("", name)
	if err != nil {
		return nil, "", nil, err
	}
	_, addr, stopFlightd, err := StartFlightd(ctx, engine.Config{Mem: mem, Root: dir})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	db, err = adbcflightsql.NewDriver(mem).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + addr})
	if err != nil {
		stopFlightd()
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	return db, dir, func() {
		db.Close()
		stopFlightd()
		os.RemoveAll(dir)
	}, nil
}

// IngestADBC sends the batches of rdr to table through one ADBC bulk
// ingest (mode: adbc.OptionValueIngestMode...): one commit.
func IngestADBC(ctx context.Context, cnxn adbc.Connection, table, mode string, rdr array.RecordReader) error {
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
	if err := stmt.BindStream(ctx, rdr); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(ctx)
	return err
}
