package tablestore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/tablestore/merge"
	"github.com/flightd/flightd/tablestore/meta"
)

// Sentinel errors; returned errors wrap them with the table, file or column.
var (
	ErrTableNotFound    = errors.New("table not found")
	ErrTableExists      = errors.New("table already exists")
	ErrDatabaseNotFound = errors.New("database not found")
	ErrDatabaseExists   = errors.New("database already exists")
	// ErrConflict: a commit lost a race it cannot resolve by retrying (two
	// writers changed one bucket, or compaction inputs were removed).
	ErrConflict = errors.New("commit conflict")
	// ErrSerialization: a read-modify-write lost to a concurrent commit
	// that wrote one of its keys (or changed the scope it overwrites)
	// after the snapshot it read; first committer wins. Running the
	// statement or transaction again reads the new data (SQLSTATE 40001).
	// It wraps ErrConflict.
	ErrSerialization = fmt.Errorf("%w: serialization failure, retry the transaction", ErrConflict)
	// ErrCorrupt: a metadata or data file is truncated or damaged (the
	// metadata's own error, meta.ErrCorrupt).
	ErrCorrupt = meta.ErrCorrupt
	// ErrSnapshotNotFound: the requested snapshot, timestamp or tag has no
	// snapshot (never written or expired).
	ErrSnapshotNotFound = errors.New("snapshot not found")
	// ErrSnapshotExpired: the snapshot current at a time was expired,
	// though the table had one then. It wraps ErrSnapshotNotFound.
	ErrSnapshotExpired = fmt.Errorf("%w: expired", ErrSnapshotNotFound)
	// ErrInvalid: bad input (schema, option, batch, predicate). The merge
	// engines refuse input with it too.
	ErrInvalid = merge.ErrInvalid
	// ErrTooManyPartitions: one commit would write more partitions than
	// the table's partition.max-per-commit (SQLSTATE 54000).
	ErrTooManyPartitions = errors.New("too many partitions in one commit")
	// ErrNotNull: a NULL for a NOT NULL column, a primary key column
	// among them (SQLSTATE 23502). It wraps ErrInvalid.
	ErrNotNull = fmt.Errorf("%w: NOT NULL violated", ErrInvalid)
	// ErrNameTooLong: a column or ROW field name over MaxColumnName
	// (SQLSTATE 42622). It wraps ErrInvalid.
	ErrNameTooLong = fmt.Errorf("%w: name too long", ErrInvalid)
	// ErrTooManyColumns: a table or result over MaxColumns columns
	// (SQLSTATE 54011). It wraps ErrInvalid.
	ErrTooManyColumns = fmt.Errorf("%w: too many columns", ErrInvalid)
)

// Ident names a table.
type Ident struct{ Database, Table string }

func (id Ident) String() string { return id.Database + "." + id.Table }

// RowKind is the change kind of a row, stored in data files as
// _VALUE_KIND. The merge engines decide by it, so it is defined with them.
type RowKind = merge.RowKind

// Row kinds, numbered as Paimon numbers them.
const (
	Insert       = merge.Insert       // +I
	UpdateBefore = merge.UpdateBefore // -U
	UpdateAfter  = merge.UpdateAfter  // +U
	Delete       = merge.Delete       // -D
)

// ParseRowKind reads a kind as String writes it ("+I", "-U", "+U", "-D").
func ParseRowKind(s string) (RowKind, bool) {
	for k := Insert; k <= Delete; k++ {
		if s == k.String() {
			return k, true
		}
	}
	return 0, false
}

func validKind(k RowKind) bool { return k >= Insert && k <= Delete }

// typeString renders a supported Arrow type in the SQL-like notation of the
// schema files (Paimon's type names).
func typeString(dt arrow.DataType) (string, error) {
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return "BOOLEAN", nil
	case *arrow.Int8Type:
		return "TINYINT", nil
	case *arrow.Int16Type:
		return "SMALLINT", nil
	case *arrow.Int32Type:
		return "INT", nil
	case *arrow.Int64Type:
		return "BIGINT", nil
	case *arrow.Float32Type:
		return "FLOAT", nil
	case *arrow.Float64Type:
		return "DOUBLE", nil
	case *arrow.Decimal128Type:
		// Parquet (and SQL) know precisions 1 to 38 and scales 0 to the
		// precision; arrow-go's Parquet writer panics on others.
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return "", fmt.Errorf("%w: type %s not supported by the table store (DECIMAL precision 1 to 38, scale 0 to the precision)", ErrInvalid, dt)
		}
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), nil
	case *arrow.StringType:
		return "STRING", nil
	case *arrow.BinaryType:
		return "BYTES", nil
	case *arrow.Date32Type:
		return "DATE", nil
	case *arrow.Time64Type:
		return fmt.Sprintf("TIME(%d)", [...]int{0, 3, 6, 9}[t.Unit]), nil
	case *arrow.TimestampType:
		p := [...]int{0, 3, 6, 9}[t.Unit]
		switch t.TimeZone {
		case "":
			return fmt.Sprintf("TIMESTAMP(%d)", p), nil
		case "UTC":
			return fmt.Sprintf("TIMESTAMP_LTZ(%d)", p), nil
		}
		return "", fmt.Errorf("%w: timestamp time zone %q not supported (use none or UTC)", ErrInvalid, t.TimeZone)
	case *arrow.MapType: // Paimon: MAP<K, V>; the key is never null
		k, err := typeString(t.KeyType())
		if err != nil {
			return "", err
		}
		v, err := nestedTypeString(t.ItemField())
		if err != nil {
			return "", err
		}
		return "MAP<" + k + ", " + v + ">", nil
	case *arrow.ListType: // Paimon: ARRAY<T>
		e, err := nestedTypeString(t.ElemField())
		if err != nil {
			return "", err
		}
		return "ARRAY<" + e + ">", nil
	case *arrow.StructType: // Paimon: ROW<`name` T [NOT NULL], ...>
		// As SQL's ROW types: at least one field, no two of one name.
		if t.NumFields() == 0 {
			return "", fmt.Errorf("%w: type %s not supported by the table store (a ROW needs at least one field)", ErrInvalid, dt)
		}
		var b strings.Builder
		b.WriteString("ROW<")
		seen := make(map[string]bool, t.NumFields())
		for i, f := range t.Fields() {
			if err := CheckNameLength("field", f.Name); err != nil {
				return "", err
			}
			if seen[f.Name] {
				return "", fmt.Errorf("%w: type %s not supported by the table store: duplicate field %q", ErrInvalid, dt, f.Name)
			}
			seen[f.Name] = true
			if i > 0 {
				b.WriteString(", ")
			}
			ft, err := nestedTypeString(f)
			if err != nil {
				return "", fmt.Errorf("field %q: %w", f.Name, err)
			}
			b.WriteString("`" + strings.ReplaceAll(f.Name, "`", "``") + "` " + ft)
		}
		b.WriteString(">")
		return b.String(), nil
	}
	return "", fmt.Errorf("%w: type %s not supported by the table store", ErrInvalid, dt)
}

// nestedTypeString is the type of an element or field, with NOT NULL when
// it cannot be null (top-level nullability is in the schema field).
func nestedTypeString(f arrow.Field) (string, error) {
	s, err := typeString(f.Type)
	if err != nil || f.Nullable {
		return s, err
	}
	return s + " NOT NULL", nil
}

// isNested reports whether dt is a stored ARRAY, MAP or ROW type.
func isNested(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.LIST, arrow.MAP, arrow.STRUCT:
		return true
	}
	return false
}

// parseNestedType reads ARRAY<..>, MAP<..> and ROW<..> as typeString
// writes them; ok is false for other types.
func parseNestedType(s string) (dt arrow.DataType, ok bool, err error) {
	kind, rest, found := strings.Cut(s, "<")
	if !found || !strings.HasSuffix(rest, ">") || (kind != "ARRAY" && kind != "MAP" && kind != "ROW") {
		return nil, false, nil
	}
	parts, err := splitTopLevel(rest[:len(rest)-1])
	if err != nil {
		return nil, true, fmt.Errorf("%w: bad type %q", ErrCorrupt, s)
	}
	fields := make([]arrow.Field, len(parts))
	for i, p := range parts {
		name := ""
		if kind == "ROW" {
			n, rest, ok := cutQuotedName(p)
			if !ok {
				return nil, true, fmt.Errorf("%w: bad field %q in type %q", ErrCorrupt, p, s)
			}
			name, p = n, rest
		}
		t, nullable := strings.CutSuffix(p, " NOT NULL")
		ft, err := parseType(t)
		if err != nil {
			return nil, true, err
		}
		fields[i] = arrow.Field{Name: name, Type: ft, Nullable: !nullable}
	}
	switch {
	case kind == "ARRAY" && len(fields) == 1:
		if fields[0].Nullable {
			return arrow.ListOf(fields[0].Type), true, nil
		}
		return arrow.ListOfNonNullable(fields[0].Type), true, nil
	case kind == "MAP" && len(fields) == 2:
		m := arrow.MapOf(fields[0].Type, fields[1].Type)
		m.SetItemNullable(fields[1].Nullable)
		return m, true, nil
	case kind == "ROW":
		return arrow.StructOf(fields...), true, nil
	}
	return nil, true, fmt.Errorf("%w: bad type %q", ErrCorrupt, s)
}

// splitTopLevel splits s at the commas outside angle brackets, parentheses
// and backquoted names, trimming spaces.
func splitTopLevel(s string) ([]string, error) {
	var parts []string
	depth, start, quoted := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '`':
			quoted = !quoted // a doubled `` toggles twice
		case quoted:
		case c == '<' || c == '(':
			depth++
		case c == '>' || c == ')':
			depth--
			if depth < 0 {
				return nil, ErrCorrupt
			}
		case c == ',' && depth == 0:
			parts = append(parts, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if depth != 0 || quoted {
		return nil, ErrCorrupt
	}
	return append(parts, strings.TrimSpace(s[start:])), nil
}

// cutQuotedName reads a leading `name` (“ escapes a backquote) and returns
// it and the text after the following space.
func cutQuotedName(s string) (name, rest string, ok bool) {
	if !strings.HasPrefix(s, "`") {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '`' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '`' {
			b.WriteByte('`')
			i++
			continue
		}
		rest, ok := strings.CutPrefix(s[i+1:], " ")
		return b.String(), rest, ok
	}
	return "", "", false
}

func parseType(s string) (arrow.DataType, error) {
	switch s {
	case "BOOLEAN":
		return arrow.FixedWidthTypes.Boolean, nil
	case "TINYINT":
		return arrow.PrimitiveTypes.Int8, nil
	case "SMALLINT":
		return arrow.PrimitiveTypes.Int16, nil
	case "INT":
		return arrow.PrimitiveTypes.Int32, nil
	case "BIGINT":
		return arrow.PrimitiveTypes.Int64, nil
	case "FLOAT":
		return arrow.PrimitiveTypes.Float32, nil
	case "DOUBLE":
		return arrow.PrimitiveTypes.Float64, nil
	case "STRING":
		return arrow.BinaryTypes.String, nil
	case "BYTES":
		return arrow.BinaryTypes.Binary, nil
	case "DATE":
		return arrow.FixedWidthTypes.Date32, nil
	}
	if dt, ok, err := parseNestedType(s); ok {
		return dt, err
	}
	name, args, ok := strings.Cut(strings.TrimSuffix(s, ")"), "(")
	if ok {
		parts := strings.Split(args, ",")
		nums := make([]int, len(parts))
		for i, p := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				return nil, fmt.Errorf("%w: bad type %q", ErrCorrupt, s)
			}
			nums[i] = n
		}
		switch {
		case name == "DECIMAL" && len(nums) == 2:
			return &arrow.Decimal128Type{Precision: int32(nums[0]), Scale: int32(nums[1])}, nil
		case name == "TIME" && len(nums) == 1 && (nums[0] == 6 || nums[0] == 9):
			return &arrow.Time64Type{Unit: map[int]arrow.TimeUnit{6: arrow.Microsecond, 9: arrow.Nanosecond}[nums[0]]}, nil
		case (name == "TIMESTAMP" || name == "TIMESTAMP_LTZ") && len(nums) == 1:
			unit := map[int]arrow.TimeUnit{0: arrow.Second, 3: arrow.Millisecond, 6: arrow.Microsecond, 9: arrow.Nanosecond}
			u, ok := unit[nums[0]]
			if !ok {
				break
			}
			tz := ""
			if name == "TIMESTAMP_LTZ" {
				tz = "UTC"
			}
			return &arrow.TimestampType{Unit: u, TimeZone: tz}, nil
		}
	}
	return nil, fmt.Errorf("%w: unknown type %q", ErrCorrupt, s)
}

// canWiden reports whether values of type from can be read as type to
// without loss, which is what a type-widening ALTER allows.
func canWiden(from, to arrow.DataType) bool {
	rank := func(dt arrow.DataType) int {
		switch dt.ID() {
		case arrow.INT8:
			return 1
		case arrow.INT16:
			return 2
		case arrow.INT32:
			return 3
		case arrow.INT64:
			return 4
		}
		return 0
	}
	switch {
	case arrow.TypeEqual(from, to):
		return true
	case rank(from) > 0 && rank(to) > 0:
		return rank(from) < rank(to)
	case from.ID() == arrow.FLOAT32 && to.ID() == arrow.FLOAT64:
		return true
	case (from.ID() == arrow.INT8 || from.ID() == arrow.INT16 || from.ID() == arrow.INT32) && to.ID() == arrow.FLOAT64:
		return true
	case from.ID() == arrow.DECIMAL128 && to.ID() == arrow.DECIMAL128:
		f, t := from.(*arrow.Decimal128Type), to.(*arrow.Decimal128Type)
		return f.Scale == t.Scale && f.Precision < t.Precision
	}
	return false
}

// StoredType is the type the store keeps for values of type dt: every Arrow
// physical variant of a logical type maps to the one variant the store
// writes (large and view strings to utf8, dictionaries to their values,
// unsigned integers to the next wider signed one, time32 to time64[us],
// timestamps in any zone to UTC, a column of type null to STRING, every list
// variant to list, nested types by their parts). Bulk ingest creates tables with it and
// converts input to it; an error names a type with no stored form.
func StoredType(dt arrow.DataType) (arrow.DataType, error) {
	st, err := storedType(dt)
	if err != nil {
		return nil, err
	}
	// The variants mapped above keep their parameters (a decimal's
	// precision and scale, a struct's fields): the result must be a type
	// the store can write.
	if _, err := typeString(st); err != nil {
		return nil, err
	}
	return st, nil
}

func storedType(dt arrow.DataType) (arrow.DataType, error) {
	switch t := dt.(type) {
	case *arrow.DictionaryType:
		return storedType(t.ValueType)
	case *arrow.NullType:
		// pandas sends an all-None object column as null.
		return arrow.BinaryTypes.String, nil
	case *arrow.LargeStringType, *arrow.StringViewType:
		return arrow.BinaryTypes.String, nil
	case *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return arrow.BinaryTypes.Binary, nil
	case *arrow.Uint8Type:
		return arrow.PrimitiveTypes.Int16, nil
	case *arrow.Uint16Type:
		return arrow.PrimitiveTypes.Int32, nil
	case *arrow.Uint32Type, *arrow.Uint64Type:
		return arrow.PrimitiveTypes.Int64, nil // uint64 values above 2^63-1 are refused
	case *arrow.Float16Type:
		return arrow.PrimitiveTypes.Float32, nil
	case *arrow.Date64Type:
		return arrow.FixedWidthTypes.Date32, nil
	case *arrow.Time32Type:
		return arrow.FixedWidthTypes.Time64us, nil
	case *arrow.Decimal32Type:
		return &arrow.Decimal128Type{Precision: t.Precision, Scale: t.Scale}, nil
	case *arrow.Decimal64Type:
		return &arrow.Decimal128Type{Precision: t.Precision, Scale: t.Scale}, nil
	case *arrow.Decimal256Type:
		if t.Precision <= 38 {
			return &arrow.Decimal128Type{Precision: t.Precision, Scale: t.Scale}, nil
		}
	case *arrow.TimestampType:
		if t.TimeZone != "" && t.TimeZone != "UTC" {
			return &arrow.TimestampType{Unit: t.Unit, TimeZone: "UTC"}, nil
		}
	case *arrow.MapType: // before ListLikeType, which maps also implement
		k, err := storedType(t.KeyType())
		if err != nil {
			return nil, err
		}
		v, err := storedType(t.ItemType())
		if err != nil {
			return nil, err
		}
		m := arrow.MapOf(k, v)
		m.SetItemNullable(t.ItemField().Nullable)
		return m, nil
	case arrow.ListLikeType: // list, large_list, list_view, large_list_view, fixed_size_list
		e, err := storedType(t.Elem())
		if err != nil {
			return nil, err
		}
		if t.ElemField().Nullable {
			return arrow.ListOf(e), nil
		}
		return arrow.ListOfNonNullable(e), nil
	case *arrow.StructType:
		fields := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			ft, err := storedType(f.Type)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			fields[i] = arrow.Field{Name: f.Name, Type: ft, Nullable: f.Nullable}
		}
		return arrow.StructOf(fields...), nil
	}
	if _, err := typeString(dt); err != nil {
		return nil, err
	}
	return dt, nil
}
