package flightsql

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightd/flightd/engine"
)

// DoPutCommandStatementIngest is bulk ingest (ADBC adbc_ingest).
func (s *Server) DoPutCommandStatementIngest(ctx context.Context, cmd flightsql.StatementIngest, rdr flight.MessageReader) (int64, error) {
	if c := cmd.GetCatalog(); c != "" && c != CatalogName {
		return 0, toStatus(fmt.Errorf("ingest: catalog %q does not exist (flightd serves %q): %w", c, CatalogName, errNotFound))
	}
	mode, err := ingestMode(cmd.GetTableDefinitionOptions())
	if err != nil {
		return 0, toStatus(err)
	}
	tx, err := s.txn(ctx, cmd.GetTransactionId())
	if err != nil {
		return 0, toStatus(err)
	}
	sess, err := s.session(ctx)
	if err != nil {
		return 0, toStatus(err)
	}
	batches, err := newCheckedBatches(rdr)
	if err != nil {
		return 0, toStatus(err)
	}
	n, err := sess.Ingest(ctx, engine.IngestRequest{
		Table:     engine.Ident{Database: cmd.GetSchema(), Table: cmd.GetTable()},
		Mode:      mode,
		Temporary: cmd.GetTemporary(),
		Txn:       tx,
	}, batches)
	return n, toStatus(err)
}

// ingestMode maps the Flight SQL table definition options; unspecified
// options take the spec's defaults: create if missing, fail if it exists.
func ingestMode(opts *flightsql.TableDefinitionOptions) (engine.IngestMode, error) {
	notExist := flightsql.TableDefinitionOptionsTableNotExistOptionCreate
	exists := flightsql.TableDefinitionOptionsTableExistsOptionFail
	if opts != nil {
		if opts.IfNotExist != flightsql.TableDefinitionOptionsTableNotExistOptionUnspecified {
			notExist = opts.IfNotExist
		}
		if opts.IfExists != flightsql.TableDefinitionOptionsTableExistsOptionUnspecified {
			exists = opts.IfExists
		}
	}
	create := notExist == flightsql.TableDefinitionOptionsTableNotExistOptionCreate
	switch exists {
	case flightsql.TableDefinitionOptionsTableExistsOptionFail:
		if create {
			return engine.IngestCreate, nil
		}
		return 0, fmt.Errorf("ingest: options fail both if the table exists and if it does not: %w", errBadRequest)
	case flightsql.TableDefinitionOptionsTableExistsOptionAppend:
		if create {
			return engine.IngestCreateAppend, nil
		}
		return engine.IngestAppend, nil
	case flightsql.TableDefinitionOptionsTableExistsOptionReplace:
		if create {
			return engine.IngestReplace, nil
		}
		return 0, fmt.Errorf("ingest: replace without create-if-missing is not supported: %w", engine.ErrNotSupported)
	}
	return 0, fmt.Errorf("ingest: unknown table definition options %v: %w", opts, errBadRequest)
}
