package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
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

// substraitSchema is EXPLAIN (FORMAT SUBSTRAIT)'s result: one row, the
// serialized plan, which a client can send back as a Substrait command.
var substraitSchema = arrow.NewSchema([]arrow.Field{{Name: "plan", Type: arrow.BinaryTypes.Binary}}, nil)

// Substrait writes the statement's query as a serialized Substrait plan
// whose root names are the result's column names.
func (st *Statement) Substrait() ([]byte, error) { return substraitOf(st.bound) }

func substraitOf(b plan.Statement) ([]byte, error) {
	q, ok := b.(*plan.Query)
	if !ok || q.Streaming() {
		return nil, fmt.Errorf("%w: only batch queries have a Substrait form", ErrNotSupported)
	}
	names := make([]string, 0, len(q.Schema().Fields()))
	for _, f := range q.Schema().Fields() {
		names = append(names, f.Name)
	}
	out, err := substrait.Produce(q.Logical(), names)
	if errors.Is(err, substrait.ErrNoForm) {
		return nil, fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return out, err
}

func explainSubstrait(ec *exec.Context, target plan.Statement) (exec.Operator, error) {
	b, err := substraitOf(target)
	if err != nil {
		return nil, err
	}
	return exec.NewSource(ec, substraitSchema, func(context.Context) (exec.BatchSource, error) {
		bldr := array.NewBinaryBuilder(ec.Mem, arrow.BinaryTypes.Binary)
		defer bldr.Release()
		bldr.Append(b)
		col := bldr.NewArray()
		defer col.Release()
		return &oneBatch{b: array.NewRecordBatch(substraitSchema, []arrow.Array{col}, 1)}, nil
	}), nil
}
