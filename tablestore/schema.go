package tablestore

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/internal/quote"
)

// TableDef describes a table to create.
type TableDef struct {
	// Schema gives the columns; nullability is honoured except that primary
	// key columns always become non-null.
	Schema *arrow.Schema
	// PrimaryKey lists the key columns; empty makes an append table.
	PrimaryKey []string
	// PartitionKeys lists the partition columns; for a key table they must
	// be part of the primary key.
	PartitionKeys []string
	// Options are the WITH (...) options, validated (see options.go).
	Options map[string]string
	Comment string
	// Materialized makes the table a materialized table (mtable.go).
	Materialized *MaterializedDef
}

// schemaField is one column of a schema file. Columns keep their ID across
// renames so data files written under older schemas stay readable.
type schemaField struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	Comment  string `json:"comment,omitempty"`
}

// tableSchema is the content of schema/schema-N.
type tableSchema struct {
	Version        int               `json:"version"`
	ID             int64             `json:"id"`
	Fields         []schemaField     `json:"fields"`
	HighestFieldID int               `json:"highestFieldId"`
	PartitionKeys  []string          `json:"partitionKeys"`
	PrimaryKeys    []string          `json:"primaryKeys"`
	Options        map[string]string `json:"options"`
	Comment        string            `json:"comment,omitempty"`
	TimeMillis     int64             `json:"timeMillis"`
	// Replaces marks a version that starts a new table (Store.StageTable:
	// bulk ingest create or replace). It takes effect with the first
	// snapshot that carries its id, which also replaces all data, and is
	// ignored until then, so an interrupted replace leaves no trace.
	Replaces bool `json:"replaces,omitempty"`
	// Origin is the id of the version that started the current table (0
	// for tables created by CREATE TABLE on an empty directory): writes
	// begun on an older version belong to a table that was replaced and
	// cannot commit.
	Origin int64 `json:"origin,omitempty"`
	// Materialized is the definition of a materialized table, versioned
	// with the schema so it changes atomically (mtable.go).
	Materialized *MaterializedDef `json:"materialized,omitempty"`
	// LegacyBucketHash: the table was created before flightd assigned
	// buckets with Paimon's function, and keeps the hash its rows were
	// placed by (a key must stay in its bucket). Set when such a schema
	// file is read, kept in every later version; Paimon ignores it.
	LegacyBucketHash bool `json:"flightdLegacyBucketHash,omitempty"`

	// Derived on load.
	arrow *arrow.Schema
	types []arrow.DataType
	opts  tableOptions
}

// init derives the Arrow schema and parsed options; it validates
// everything a schema file must satisfy.
func (s *tableSchema) init() error {
	fields := make([]arrow.Field, len(s.Fields))
	s.types = make([]arrow.DataType, len(s.Fields))
	for i, f := range s.Fields {
		dt, err := parseType(f.Type)
		if err != nil {
			return fmt.Errorf("column %q: %w", f.Name, err)
		}
		s.types[i] = dt
		fields[i] = arrow.Field{Name: f.Name, Type: dt, Nullable: f.Nullable}
	}
	s.arrow = arrow.NewSchema(fields, nil)
	opts, err := parseOptions(s)
	if err != nil {
		return err
	}
	s.opts = opts
	return nil
}

func (s *tableSchema) fieldIndex(name string) int {
	return slices.IndexFunc(s.Fields, func(f schemaField) bool { return f.Name == name })
}

func (s *tableSchema) hasPK() bool { return len(s.PrimaryKeys) > 0 }

func (s *tableSchema) clone() *tableSchema {
	c := *s
	c.Fields = slices.Clone(s.Fields)
	c.PartitionKeys = slices.Clone(s.PartitionKeys)
	c.PrimaryKeys = slices.Clone(s.PrimaryKeys)
	c.Options = maps.Clone(s.Options)
	return &c
}

// MaxColumnName bounds the bytes of a column or ROW field name: schema
// files, Parquet footers and every result schema carry the names, and a
// 1 MB name was stored whole (Postgres truncates at 63 bytes, Flink and
// Paimon set no bound; 1,024 leaves room for any name written by hand).
const MaxColumnName = 1024

// MaxColumns bounds a table's columns, and the binder a query's: work per
// row and per schema grows faster than the width (ingesting one row of
// 100,000 columns took 78 s, a SELECT of 400,000 constants 18 s and 2.3 GB
// to build a 285 MB schema message; 10,000 take about a second). Postgres
// allows 1,600.
const MaxColumns = 10_000

// CheckColumnCount refuses n columns over MaxColumns.
func CheckColumnCount(what string, n int) error {
	if n > MaxColumns {
		return fmt.Errorf("%w: %s has %d columns, more than %d", ErrTooManyColumns, what, n, MaxColumns)
	}
	return nil
}

// maxQuotedName is how much of a name an error quotes: quoting a 100 MB
// name whole took 1.3 GB.
const maxQuotedName = 64

// CheckNameLength refuses a column or field name over MaxColumnName
// bytes, quoting only its start.
func CheckNameLength(kind, name string) error {
	if len(name) <= MaxColumnName {
		return nil
	}
	return fmt.Errorf("%w: %s name %s is more than %d bytes", ErrNameTooLong, kind, quote.Clipped(name, maxQuotedName), MaxColumnName)
}

// checkColumnName refuses a column name that is empty, reserved for
// system columns or too long.
func checkColumnName(name string) error {
	if name == "" || strings.HasPrefix(name, "_") {
		return fmt.Errorf("%w: column name %s must be non-empty and not start with '_' (reserved for system columns)", ErrInvalid, quote.Clipped(name, maxQuotedName))
	}
	return CheckNameLength("column", name)
}

func validateName(kind, name string) error {
	if name == "" || strings.ContainsAny(name, "/\\.\x00") || strings.HasPrefix(name, "_") || len(name) > 200 {
		return fmt.Errorf("%w: %s name %s must be non-empty, at most 200 bytes, without '/', '\\\\', '.' or a leading '_'", ErrInvalid, kind, quote.Clipped(name, maxQuotedName))
	}
	return nil
}

// newTableSchema validates def and builds schema 0.
func newTableSchema(def TableDef, nowMillis int64) (*tableSchema, error) {
	if def.Schema == nil || def.Schema.NumFields() == 0 {
		return nil, fmt.Errorf("%w: table needs at least one column", ErrInvalid)
	}
	if err := CheckColumnCount("table", def.Schema.NumFields()); err != nil {
		return nil, err
	}
	s := &tableSchema{
		PartitionKeys: slices.Clone(def.PartitionKeys),
		PrimaryKeys:   slices.Clone(def.PrimaryKey),
		Options:       maps.Clone(def.Options),
		Comment:       def.Comment,
		TimeMillis:    nowMillis,
		Materialized:  def.Materialized.clone(),
	}
	if s.Options == nil {
		s.Options = map[string]string{}
	}
	seen := map[string]bool{}
	for i, f := range def.Schema.Fields() {
		if err := checkColumnName(f.Name); err != nil {
			return nil, fmt.Errorf("column %d: %w", i, err)
		}
		if seen[strings.ToLower(f.Name)] {
			return nil, fmt.Errorf("%w: duplicate column %q", ErrInvalid, f.Name)
		}
		seen[strings.ToLower(f.Name)] = true
		ts, err := typeString(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		nullable := f.Nullable && !slices.Contains(def.PrimaryKey, f.Name)
		s.Fields = append(s.Fields, schemaField{ID: i, Name: f.Name, Type: ts, Nullable: nullable})
		s.HighestFieldID = i
	}
	if err := s.validateKeys(); err != nil {
		return nil, err
	}
	if err := s.init(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *tableSchema) validateKeys() error {
	check := func(what string, cols []string) error {
		dup := map[string]bool{}
		for _, c := range cols {
			i := s.fieldIndex(c)
			if i < 0 {
				return fmt.Errorf("%w: %s column %q is not a column of the table", ErrInvalid, what, c)
			}
			if dup[c] {
				return fmt.Errorf("%w: %s column %q listed twice", ErrInvalid, what, c)
			}
			dup[c] = true
			dt, _ := parseType(s.Fields[i].Type)
			if !keyTypeOK(dt) {
				return fmt.Errorf("%w: %s column %q has type %s, which cannot be a key", ErrInvalid, what, c, s.Fields[i].Type)
			}
		}
		return nil
	}
	if err := check("primary key", s.PrimaryKeys); err != nil {
		return err
	}
	if err := check("partition", s.PartitionKeys); err != nil {
		return err
	}
	if s.hasPK() {
		for _, p := range s.PartitionKeys {
			if !slices.Contains(s.PrimaryKeys, p) {
				return fmt.Errorf("%w: partition column %q must be part of the primary key (cross-partition upsert is not supported)", ErrInvalid, p)
			}
		}
		if len(s.PartitionKeys) == len(s.PrimaryKeys) {
			return fmt.Errorf("%w: the primary key must have columns besides the partition columns", ErrInvalid)
		}
	}
	return nil
}

func keyTypeOK(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.FLOAT32, arrow.FLOAT64:
		return false
	}
	return !isNested(dt)
}

// SchemaChange is one ALTER TABLE action: AddColumn, RenameColumn,
// DropColumn, UpdateColumnType, SetOption or RemoveOption.
type SchemaChange interface{ apply(s *tableSchema) error }

// AddColumn appends a nullable column; existing rows read it as NULL.
type AddColumn struct {
	Name    string
	Type    arrow.DataType
	Comment string
}

// RenameColumn renames a non-key column.
type RenameColumn struct{ Old, New string }

// DropColumn drops a column that is not part of the primary or partition key.
type DropColumn struct{ Name string }

// UpdateColumnType widens a column's type (TINYINT < SMALLINT < INT <
// BIGINT, FLOAT < DOUBLE, integers to DOUBLE, DECIMAL to a larger precision
// with the same scale).
type UpdateColumnType struct {
	Name string
	Type arrow.DataType
}

// SetOption sets a table option (validated like CREATE TABLE options).
type SetOption struct{ Key, Value string }

// RemoveOption resets a table option to its default.
type RemoveOption struct{ Key string }

func (c AddColumn) apply(s *tableSchema) error {
	if err := checkColumnName(c.Name); err != nil {
		return err
	}
	if err := CheckColumnCount("table", len(s.Fields)+1); err != nil {
		return err
	}
	for _, f := range s.Fields {
		if strings.EqualFold(f.Name, c.Name) {
			return fmt.Errorf("%w: column %q already exists", ErrInvalid, c.Name)
		}
	}
	ts, err := typeString(c.Type)
	if err != nil {
		return fmt.Errorf("column %q: %w", c.Name, err)
	}
	s.HighestFieldID++
	s.Fields = append(s.Fields, schemaField{ID: s.HighestFieldID, Name: c.Name, Type: ts, Nullable: true, Comment: c.Comment})
	return nil
}

func (s *tableSchema) mustField(name string) (int, error) {
	i := s.fieldIndex(name)
	if i < 0 {
		return -1, fmt.Errorf("%w: column %q does not exist", ErrInvalid, name)
	}
	return i, nil
}

// isPrimaryKey tells whether name is a primary key column (the columns
// whose statistics may prune the files of a bucket merged at read).
func (s *tableSchema) isPrimaryKey(name string) bool { return slices.Contains(s.PrimaryKeys, name) }

func (s *tableSchema) isKeyColumn(name string) bool {
	return slices.Contains(s.PrimaryKeys, name) || slices.Contains(s.PartitionKeys, name) ||
		slices.Contains(s.opts.bucketKey, name) || slices.Contains(s.opts.sequenceField, name)
}

func (c RenameColumn) apply(s *tableSchema) error {
	i, err := s.mustField(c.Old)
	if err != nil {
		return err
	}
	if s.isKeyColumn(c.Old) {
		return fmt.Errorf("%w: cannot rename key, partition, bucket-key or sequence column %q", ErrInvalid, c.Old)
	}
	if err := checkColumnName(c.New); err != nil {
		return err
	}
	for j, f := range s.Fields {
		if j != i && strings.EqualFold(f.Name, c.New) {
			return fmt.Errorf("%w: column %q already exists", ErrInvalid, c.New)
		}
	}
	s.Fields[i].Name = c.New
	return nil
}

func (c DropColumn) apply(s *tableSchema) error {
	i, err := s.mustField(c.Name)
	if err != nil {
		return err
	}
	if s.isKeyColumn(c.Name) {
		return fmt.Errorf("%w: cannot drop key, partition, bucket-key or sequence column %q", ErrInvalid, c.Name)
	}
	if len(s.Fields) == 1 {
		return fmt.Errorf("%w: cannot drop the last column %q", ErrInvalid, c.Name)
	}
	s.Fields = slices.Delete(s.Fields, i, i+1)
	return nil
}

func (c UpdateColumnType) apply(s *tableSchema) error {
	i, err := s.mustField(c.Name)
	if err != nil {
		return err
	}
	from := s.types[i]
	if !canWiden(from, c.Type) {
		return fmt.Errorf("%w: column %q: cannot change type %s to %s (only widening is allowed)", ErrInvalid, c.Name, from, c.Type)
	}
	if s.isKeyColumn(c.Name) && !arrow.TypeEqual(from, c.Type) {
		return fmt.Errorf("%w: cannot change the type of key, partition, bucket-key or sequence column %q", ErrInvalid, c.Name)
	}
	ts, err := typeString(c.Type)
	if err != nil {
		return err
	}
	s.Fields[i].Type = ts
	return nil
}

func (c SetOption) apply(s *tableSchema) error {
	if c.Key == optBucket && s.Options[optBucket] != c.Value {
		return fmt.Errorf("%w: option %q cannot be changed after creation (rescaling needs a rewrite)", ErrInvalid, c.Key)
	}
	if old, ok := s.Options[c.Key]; mergeOption(c.Key) && (!ok || old != c.Value) {
		return fmt.Errorf("%w: option %q cannot be changed after creation: files hold rows merged under the current value", ErrInvalid, c.Key)
	}
	s.Options[c.Key] = c.Value
	return nil
}

func (c RemoveOption) apply(s *tableSchema) error {
	if c.Key == optBucket {
		return fmt.Errorf("%w: option %q cannot be changed after creation", ErrInvalid, c.Key)
	}
	if _, ok := s.Options[c.Key]; ok && mergeOption(c.Key) {
		return fmt.Errorf("%w: option %q cannot be changed after creation: files hold rows merged under the current value", ErrInvalid, c.Key)
	}
	delete(s.Options, c.Key)
	return nil
}

// mergeOption reports whether key decides how stored rows merge or what
// the changelog holds, so it is fixed at creation. ignore-delete and
// ignore-retract only filter input and may change.
func mergeOption(key string) bool {
	switch key {
	case optMergeEngine, optChangelogProducer, optSequenceField, optPartialRemove, optAggRemove, optDefaultAgg:
		return true
	}
	return strings.HasPrefix(key, optFieldsPrefix) &&
		(strings.HasSuffix(key, ".aggregate-function") || strings.HasSuffix(key, ".sequence-group") || strings.HasSuffix(key, ".list-agg-delimiter"))
}
