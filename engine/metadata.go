package engine

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// Metadata for the endpoint's catalog commands. These read the catalog as
// it is now, outside any transaction, and check no grants: the endpoint
// decides which databases a caller may list.

// CatalogName is the one catalog flightd serves; its schemas are the
// databases.
const CatalogName = plan.CatalogName

// Ident names a table or view: Database "" means the session's database
// where a session resolves it.
type Ident = tablestore.Ident

// TableInfo describes a table for metadata requests.
type TableInfo struct {
	Schema     *arrow.Schema
	PrimaryKey []string // in key order; empty for append tables
}

// Databases lists the databases, sorted.
func (e *Engine) Databases(ctx context.Context) ([]string, error) { return e.store.Databases(ctx) }

// Tables lists the tables of a database, sorted.
func (e *Engine) Tables(ctx context.Context, db string) ([]string, error) {
	return e.store.Tables(ctx, db)
}

// Views lists the views of a database, sorted.
func (e *Engine) Views(ctx context.Context, db string) ([]string, error) {
	return e.store.Views(ctx, db)
}

// Table describes a table (not a view: ViewSchema).
func (e *Engine) Table(ctx context.Context, id Ident) (TableInfo, error) {
	t, err := e.store.Table(ctx, id)
	if err != nil {
		return TableInfo{}, err
	}
	return TableInfo{Schema: t.Schema(), PrimaryKey: t.PrimaryKey()}, nil
}

// TableQuery is the query that reads all of table id.
func TableQuery(id Ident) string {
	return "SELECT * FROM " + sql.QuoteIdent(id.Database) + "." + sql.QuoteIdent(id.Table)
}

// SQLTypeName is the SQL name of a column type (DECIMAL(10, 2), STRING),
// as DESCRIBE shows it.
func SQLTypeName(t arrow.DataType) string { return plan.SQLTypeName(t) }

// CheckSize refuses SQL text longer than maxBytes or with more than
// maxTokens tokens (zero: no bound) before anything parses it, with
// SQLSTATE 54000: the endpoint bounds what one request may cost.
func CheckSize(text string, maxBytes, maxTokens int) (tokens int, err error) {
	return sql.CheckSize(text, maxBytes, maxTokens)
}

// planBytesPerToken is about what a prepared statement keeps per token of
// its SQL (punctuation included): its AST, its bound and folded plan
// (scalars of the literals, predicates). Measured on the live heap holding
// statements with 100,000-item IN lists of integers (75 bytes a token),
// of strings (131) and INSERT ... VALUES rows (70), with some margin. The
// process's RSS grows by up to 1 + GOGC/100 times the live heap.
const planBytesPerToken = 150

// PlanBytes estimates the memory the plan of a prepared statement of SQL
// text with tokens tokens (CheckSize's count) holds while it stays
// prepared, from its text alone (so that it can be refused before it is
// parsed and bound): its bytes plus planBytesPerToken per token.
func PlanBytes(text string, tokens int) int64 {
	return int64(len(text)) + planBytesPerToken*int64(tokens)
}
