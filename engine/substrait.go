package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/substrait"
	"github.com/flightd/flightd/tablestore"
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

// SubstraitSQL is SubstraitSQL that first checks the schema the plan
// claims for each table it reads (its ReadRels' base_schema) against the
// table as this session sees it in tx (nil: autocommit): the SQL reads
// the columns by name, so a plan built from stale metadata would
// otherwise get data of another type than it decodes. Column names and
// types must match in number and order; nullability may differ.
func (s *Session) SubstraitSQL(ctx context.Context, b []byte, tx *Txn) (_ string, err error) {
	defer recoverInternal(&err)
	q, reads, err := substrait.ConsumeReads(b)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for _, r := range reads {
		if err := s.checkRead(ctx, r, tx); err != nil {
			return "", err
		}
	}
	return sql.Format(q), nil
}

// checkRead binds SELECT * FROM the read's table, which resolves the name
// and checks the grants as any read of it would.
func (s *Session) checkRead(ctx context.Context, r substrait.NamedRead, tx *Txn) error {
	ast := &sql.Query{Body: &sql.Select{
		Items: []*sql.SelectItem{{Expr: &sql.Star{}}},
		From:  []sql.TableRef{&sql.TableName{Name: &sql.Name{Parts: r.Table}}},
	}}
	cat := &catalog{s: s, tx: tx, db: s.Database(), looked: map[tablestore.Ident]int{}, pinned: map[tablestore.Ident]*tablestore.Pin{}}
	bound, err := s.bind(ctx, ast, cat)
	for _, p := range cat.pinned {
		p.Release()
	}
	if err != nil {
		return err
	}
	// A table's stored columns, as GetTables reports them and the
	// producer writes them (computed columns are not read by name from a
	// plan's base_schema); a view's columns.
	real := rowQuery(bound).Schema().Fields()
	id := tablestore.Ident{Database: s.Database(), Table: r.Table[len(r.Table)-1]}
	if len(r.Table) == 2 {
		id.Database = r.Table[0]
	}
	if t, ok := cat.tables[id]; ok {
		real = t.Schema().Fields()
	}
	table := sql.Format(&sql.Name{Parts: r.Table})
	if len(r.Columns) != len(real) {
		names := make([]string, len(real))
		for i, f := range real {
			names[i] = f.Name
		}
		return fmt.Errorf("%w: Substrait plan: %s.base_schema: %d columns for table %s, which has %d (%s)",
			ErrInvalid, r.Path, len(r.Columns), table, len(real), strings.Join(names, ", "))
	}
	for i, c := range r.Columns {
		f := real[i]
		if c.Name != f.Name && !strings.EqualFold(c.Name, f.Name) {
			return fmt.Errorf("%w: Substrait plan: %s.base_schema.names: column %d is %q, but table %s's column %d is %q",
				ErrInvalid, r.Path, i+1, c.Name, table, i+1, f.Name)
		}
		claimed, err := plan.ArrowType(c.Type)
		if err != nil {
			return fmt.Errorf("%w: Substrait plan: %s.base_schema: column %q: %w", ErrInvalid, r.Path, c.Name, err)
		}
		want, got := plan.SQLTypeName(nullableType(claimed)), plan.SQLTypeName(nullableType(f.Type))
		if want != got {
			return fmt.Errorf("%w: Substrait plan: %s.base_schema: column %q of table %s is %s, not %s as the plan says",
				ErrInvalid, r.Path, c.Name, table, got, want)
		}
	}
	return nil
}

// nullableType is dt with every nested field nullable: a plan's
// nullability claims are not checked.
func nullableType(dt arrow.DataType) arrow.DataType {
	switch t := dt.(type) {
	case *arrow.ListType:
		return arrow.ListOf(nullableType(t.Elem()))
	case *arrow.LargeListType:
		return arrow.LargeListOf(nullableType(t.Elem()))
	case *arrow.FixedSizeListType:
		return arrow.FixedSizeListOf(t.Len(), nullableType(t.Elem()))
	case *arrow.MapType:
		return arrow.MapOf(nullableType(t.KeyType()), nullableType(t.ItemType()))
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			fs[i] = arrow.Field{Name: f.Name, Type: nullableType(f.Type), Nullable: true}
		}
		return arrow.StructOf(fs...)
	}
	return dt
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
