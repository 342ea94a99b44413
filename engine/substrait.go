package engine

import (
	"errors"
	"fmt"

	"github.com/flightd/flightd/plan"
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

// Substrait writes the statement's query as a serialized Substrait plan
// whose root names are the result's column names.
func (st *Statement) Substrait() ([]byte, error) {
	q, ok := st.bound.(*plan.Query)
	if !ok || q.Streaming() {
		return nil, fmt.Errorf("%w: only batch queries have a Substrait form", ErrNotSupported)
	}
	names := make([]string, 0, len(q.Schema().Fields()))
	for _, f := range q.Schema().Fields() {
		names = append(names, f.Name)
	}
	b, err := substrait.Produce(q.Logical(), names)
	if errors.Is(err, substrait.ErrNoForm) {
		return nil, fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return b, err
}
