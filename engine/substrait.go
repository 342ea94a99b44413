package engine

import (
	"fmt"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/substrait"
)

// SubstraitSQL translates a serialized Substrait plan into the SQL query it
// means (package substrait). The endpoint prepares that text like any
// statement, so tickets and prepared statements carry it as they carry SQL.
func SubstraitSQL(plan []byte) (string, error) {
	q, err := substrait.Consume(plan)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return sql.Format(q), nil
}

// SubstraitVersions are the Substrait versions the consumer reads and the
// producer writes: the range SqlInfo advertises.
const (
	SubstraitMinVersion = substrait.MinVersion
	SubstraitMaxVersion = substrait.MaxVersion
)
