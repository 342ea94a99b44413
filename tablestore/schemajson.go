package tablestore

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Schema files are Paimon's TableSchema JSON: types as Paimon's type
// strings with nullability in them ("BIGINT NOT NULL"), nested types as
// Paimon's JSON objects, empty key lists as []. Files written before
// flightd spoke Paimon's format (nullability in a "nullable" field, a
// "comment" per column) are read too.

// paimonSchemaVersion is Paimon's TableSchema.CURRENT_VERSION.
const paimonSchemaVersion = 3

type schemaFieldJSON struct {
	ID          int             `json:"id"`
	Name        string          `json:"name"`
	Type        json.RawMessage `json:"type"`
	Description string          `json:"description,omitempty"`
	// Nullable and Comment are the pre-Paimon encoding.
	Nullable *bool  `json:"nullable,omitempty"`
	Comment  string `json:"comment,omitempty"`
}

func (f schemaField) MarshalJSON() ([]byte, error) {
	dt, err := parseType(f.Type)
	if err != nil {
		return nil, fmt.Errorf("column %q: %w", f.Name, err)
	}
	t, err := paimonTypeJSON(dt, f.Nullable)
	if err != nil {
		return nil, fmt.Errorf("column %q: %w", f.Name, err)
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	return json.Marshal(schemaFieldJSON{ID: f.ID, Name: f.Name, Type: raw, Description: f.Comment})
}

func (f *schemaField) UnmarshalJSON(data []byte) error {
	var j schemaFieldJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	f.ID, f.Name, f.Comment = j.ID, j.Name, j.Description
	if j.Nullable != nil { // pre-Paimon: flightd's type string, nullability apart
		var s string
		if err := json.Unmarshal(j.Type, &s); err != nil {
			return fmt.Errorf("column %q: type: %w", j.Name, err)
		}
		f.Type, f.Nullable, f.Comment = s, *j.Nullable, j.Comment
		return nil
	}
	dt, nullable, err := parsePaimonTypeJSON(j.Type)
	if err != nil {
		return fmt.Errorf("column %q: %w", j.Name, err)
	}
	if f.Type, err = typeString(dt); err != nil {
		return fmt.Errorf("column %q: %w", j.Name, err)
	}
	f.Nullable = nullable
	return nil
}

// paimonTypeJSON is Paimon's JSON form of a type: a string for atomic
// types, an object for ARRAY, MAP and ROW. Row fields get no ids of their
// own in flightd, so they are numbered by position (Paimon needs an id;
// nothing flightd writes refers to it).
func paimonTypeJSON(dt arrow.DataType, nullable bool) (any, error) {
	suffix := ""
	if !nullable {
		suffix = " NOT NULL"
	}
	switch t := dt.(type) {
	case *arrow.ListType:
		e, err := paimonTypeJSON(t.Elem(), t.ElemField().Nullable)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "ARRAY" + suffix, "element": e}, nil
	case *arrow.MapType:
		k, err := paimonTypeJSON(t.KeyType(), false)
		if err != nil {
			return nil, err
		}
		v, err := paimonTypeJSON(t.ItemType(), t.ItemField().Nullable)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "MAP" + suffix, "key": k, "value": v}, nil
	case *arrow.StructType:
		fields := make([]map[string]any, t.NumFields())
		for i, f := range t.Fields() {
			ft, err := paimonTypeJSON(f.Type, f.Nullable)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			fields[i] = map[string]any{"id": i, "name": f.Name, "type": ft}
		}
		return map[string]any{"type": "ROW" + suffix, "fields": fields}, nil
	case *arrow.TimestampType:
		if t.TimeZone == "UTC" { // Paimon's spelling of TIMESTAMP_LTZ
			return fmt.Sprintf("TIMESTAMP(%d) WITH LOCAL TIME ZONE", [...]int{0, 3, 6, 9}[t.Unit]) + suffix, nil
		}
	}
	s, err := typeString(dt)
	if err != nil {
		return nil, err
	}
	return s + suffix, nil
}

// parsePaimonTypeJSON reads a type as Paimon writes it.
func parsePaimonTypeJSON(raw json.RawMessage) (arrow.DataType, bool, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return parsePaimonAtomic(s)
	}
	var obj struct {
		Type    string            `json:"type"`
		Element json.RawMessage   `json:"element"`
		Key     json.RawMessage   `json:"key"`
		Value   json.RawMessage   `json:"value"`
		Fields  []json.RawMessage `json:"fields"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, false, fmt.Errorf("%w: bad type %s", ErrCorrupt, raw)
	}
	kind, notNull := strings.CutSuffix(obj.Type, " NOT NULL")
	switch kind {
	case "ARRAY":
		e, n, err := parsePaimonTypeJSON(obj.Element)
		if err != nil {
			return nil, false, err
		}
		if n {
			return arrow.ListOf(e), !notNull, nil
		}
		return arrow.ListOfNonNullable(e), !notNull, nil
	case "MAP":
		k, _, err := parsePaimonTypeJSON(obj.Key)
		if err != nil {
			return nil, false, err
		}
		v, n, err := parsePaimonTypeJSON(obj.Value)
		if err != nil {
			return nil, false, err
		}
		m := arrow.MapOf(k, v)
		m.SetItemNullable(n)
		return m, !notNull, nil
	case "ROW":
		fields := make([]arrow.Field, len(obj.Fields))
		for i, raw := range obj.Fields {
			var f schemaFieldJSON
			if err := json.Unmarshal(raw, &f); err != nil {
				return nil, false, fmt.Errorf("%w: bad row field %s", ErrCorrupt, raw)
			}
			ft, n, err := parsePaimonTypeJSON(f.Type)
			if err != nil {
				return nil, false, fmt.Errorf("field %q: %w", f.Name, err)
			}
			fields[i] = arrow.Field{Name: f.Name, Type: ft, Nullable: n}
		}
		return arrow.StructOf(fields...), !notNull, nil
	}
	return nil, false, fmt.Errorf("%w: type %q is not supported", ErrCorrupt, obj.Type)
}

// parsePaimonAtomic reads an atomic type string ("DECIMAL(10, 2) NOT NULL").
func parsePaimonAtomic(s string) (arrow.DataType, bool, error) {
	t, notNull := strings.CutSuffix(strings.TrimSpace(s), " NOT NULL")
	t = strings.TrimSuffix(t, " NULL")
	if p, ok := strings.CutSuffix(t, " WITH LOCAL TIME ZONE"); ok {
		t = strings.Replace(p, "TIMESTAMP", "TIMESTAMP_LTZ", 1)
	}
	switch t {
	case "INTEGER":
		t = "INT"
	case "VARCHAR(2147483647)":
		t = "STRING"
	case "VARBINARY(2147483647)":
		t = "BYTES"
	case "TIMESTAMP":
		t = "TIMESTAMP(6)"
	case "TIMESTAMP_LTZ":
		t = "TIMESTAMP_LTZ(6)"
	}
	dt, err := parseType(t)
	if err != nil {
		return nil, false, err
	}
	return dt, !notNull, nil
}

func (s tableSchema) MarshalJSON() ([]byte, error) {
	p := schemaFields(s)
	p.Version = paimonSchemaVersion
	if p.PartitionKeys == nil {
		p.PartitionKeys = []string{}
	}
	if p.PrimaryKeys == nil {
		p.PrimaryKeys = []string{}
	}
	if p.Options == nil {
		p.Options = map[string]string{}
	}
	j := schemaJSON{schemaFields: p}
	if _, ok := p.Options[optBucket]; !ok && len(p.PrimaryKeys) > 0 {
		// Written out: Paimon reads a key table without it as bucket -1
		// (dynamic), whose writers place keys by an index flightd does not
		// keep. The marker keeps the table's own options as they were.
		j.Options = maps.Clone(p.Options)
		j.Options[optBucket] = "1"
		j.DefaultBucket = true
	}
	return json.Marshal(j)
}

// schemaJSON is a schema file: tableSchema's fields, and whether flightd
// wrote the bucket option for a key table that had none (Paimon's readers
// ignore the marker).
type schemaJSON struct {
	schemaFields
	DefaultBucket bool `json:"flightdDefaultBucket,omitempty"`
}

// schemaFields is tableSchema without its JSON methods.
type schemaFields tableSchema

func (s *tableSchema) UnmarshalJSON(data []byte) error {
	j := schemaJSON{}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = tableSchema(j.schemaFields)
	if j.DefaultBucket {
		delete(s.Options, optBucket)
	}
	return nil
}
