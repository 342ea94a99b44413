package gen

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ErrUnknownTable is returned for a table name the generator does not have.
var ErrUnknownTable = errors.New("unknown tpcds table")

// Config selects the data set. The same Config always yields the same data.
type Config struct {
	Scale float64 // scale factor, MinScale .. MaxScale
	Seed  uint64
}

// val is one generated value; i holds integers, dates (days since the Unix
// epoch) and decimals (unscaled at scale 2).
type val struct {
	null bool
	kind valKind
	i    int64
	s    string
}

// valKind says which column types a value fits; New checks it against the
// schema so that a schema file with a wrong type is an error, not garbage.
type valKind uint8

const (
	kindInt valKind = iota + 1
	kindString
	kindDate
	kindDecimal
)

func (k valKind) fits(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT32, arrow.INT64:
		return k == kindInt
	case arrow.STRING:
		return k == kindString
	case arrow.DATE32:
		return k == kindDate
	case arrow.DECIMAL128:
		return k == kindDecimal
	}
	return false
}

// colFn computes one column of the current row; h is a hash private to
// this (row, column), for values independent of every other column.
type colFn func(r *rowCtx, h uint64) val

// tableDef is the static description of how one table is generated.
type tableDef struct {
	id      uint64
	nullBP  int64 // basis points of rows that get some nullable columns set to NULL
	rows    func(g *Generator) int64
	prepare func(r *rowCtx) // fills the row-level state the columns read; may be nil
	cols    map[string]colFn
}

var tableDefs = map[string]*tableDef{}

func register(name string, d *tableDef) {
	tableDefs[name] = d
}

// table is a tableDef bound to a parsed schema.
type table struct {
	name     string
	def      *tableDef
	schema   *arrow.Schema
	fns      []colFn
	salts    []uint64
	nullable []bool
	scales   []int32 // decimal scale per column (0 elsewhere)
	rows     int64
}

// Generator produces the tables of one Config. It is safe for concurrent use.
type Generator struct {
	cfg    Config
	tables map[string]*table
	names  []string

	// Dimension sizes used by the foreign keys of other tables.
	nCustomer, nAddress, nItem, nItemIDs, nStore, nCallCenter, nWarehouse int64
	nWebSite, nWebPage, nPromotion, nReason, nCatalogPage, nShipMode      int64
	nCDemo, nHDemo                                                        int64
	itemStep                                                              int64
	ordersOnce                                                            sync.Map // table name -> *orderIndex
}

// New binds the schema tables to their generators. Every table of the
// schema must be a TPC-DS table and every column must be known; a table of
// the generator that the schema lacks is simply not produced.
func New(schema []*Table, cfg Config) (*Generator, error) {
	if err := checkScale(cfg.Scale); err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, tables: map[string]*table{}}
	g.sizes()
	for _, t := range schema {
		def, ok := tableDefs[t.Name]
		if !ok {
			return nil, fmt.Errorf("%w: %q (schema file)", ErrUnknownTable, t.Name)
		}
		bt := &table{name: t.Name, def: def, schema: t.Schema(), rows: def.rows(g)}
		for _, c := range t.Columns {
			fn, ok := def.cols[c.Name]
			if !ok {
				return nil, fmt.Errorf("%w: table %s has no generator for column %s", ErrSchema, t.Name, c.Name)
			}
			if err := checkType(c); err != nil {
				return nil, fmt.Errorf("%w: table %s column %s: %v", ErrSchema, t.Name, c.Name, err)
			}
			bt.fns = append(bt.fns, fn)
			bt.salts = append(bt.salts, colSalt(c.Name))
			bt.nullable = append(bt.nullable, !c.NotNull && !keyColumn(c.Name))
			sc := int32(0)
			if d, ok := c.Type.(*arrow.Decimal128Type); ok {
				sc = d.Scale
			}
			bt.scales = append(bt.scales, sc)
		}
		if err := g.checkKinds(bt); err != nil {
			return nil, err
		}
		if _, dup := g.tables[t.Name]; dup {
			return nil, fmt.Errorf("%w: table %s defined twice", ErrSchema, t.Name)
		}
		g.tables[t.Name] = bt
		g.names = append(g.names, t.Name)
	}
	sort.Strings(g.names)
	return g, nil
}

// keyColumn reports the columns that identify a sales or returns line
// (item and order number); they are never NULL, as in dsdgen.
func keyColumn(name string) bool {
	switch name {
	case "ss_item_sk", "ss_ticket_number", "cs_item_sk", "cs_order_number", "ws_item_sk", "ws_order_number",
		"sr_item_sk", "sr_ticket_number", "cr_item_sk", "cr_order_number", "wr_item_sk", "wr_order_number":
		return true
	}
	return false
}

func checkType(c Column) error {
	switch t := c.Type.(type) {
	case *arrow.Decimal128Type:
		if t.Scale > 10 { // appendVal rescales from cents with pow10
			return fmt.Errorf("decimal scale %d too large", t.Scale)
		}
	case *arrow.Int32Type, *arrow.Int64Type, *arrow.Date32Type, *arrow.StringType:
	default:
		return fmt.Errorf("unsupported arrow type %s", c.Type)
	}
	return nil
}

func (g *Generator) sizes() {
	sf := g.cfg.Scale
	g.nCustomer = dimRows("customer", sf)
	g.nAddress = dimRows("customer_address", sf)
	g.nItem = dimRows("item", sf)
	g.nItemIDs = uniqueIDs(g.nItem)
	g.nStore = dimRows("store", sf)
	g.nCallCenter = dimRows("call_center", sf)
	g.nWarehouse = dimRows("warehouse", sf)
	g.nWebSite = dimRows("web_site", sf)
	g.nWebPage = dimRows("web_page", sf)
	g.nPromotion = dimRows("promotion", sf)
	g.nReason = dimRows("reason", sf)
	g.nCatalogPage = dimRows("catalog_page", sf)
	g.nShipMode = dimRows("ship_mode", sf)
	g.nCDemo = dimRows("customer_demographics", sf)
	g.nHDemo = dimRows("household_demographics", sf)
	// A prime stride spreads the items of one order; it must not share a
	// factor with the item count or two lines could repeat an item.
	g.itemStep = 7919
	if g.nItem%g.itemStep == 0 {
		g.itemStep = 1
	}
}

// Config returns the generator's configuration.
func (g *Generator) Config() Config { return g.cfg }

// Tables returns the names of the tables this generator produces, sorted.
func (g *Generator) Tables() []string { return append([]string(nil), g.names...) }

func (g *Generator) table(name string) (*table, error) {
	t, ok := g.tables[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTable, name)
	}
	return t, nil
}

// RowCount returns the number of rows of a table at the configured scale.
func (g *Generator) RowCount(name string) (int64, error) {
	t, err := g.table(name)
	if err != nil {
		return 0, err
	}
	return t.rows, nil
}

// Schema returns the Arrow schema of a table.
func (g *Generator) Schema(name string) (*arrow.Schema, error) {
	t, err := g.table(name)
	if err != nil {
		return nil, err
	}
	return t.schema, nil
}

// Chunk generates rows [start, start+n) of a table as one record batch,
// independently of any other chunk. The caller owns (and releases) it.
func (g *Generator) Chunk(mem memory.Allocator, name string, start, n int64) (arrow.RecordBatch, error) {
	t, err := g.table(name)
	if err != nil {
		return nil, err
	}
	if start < 0 || n < 0 || start+n > t.rows {
		return nil, fmt.Errorf("table %s: rows [%d, %d) outside [0, %d)", name, start, start+n, t.rows)
	}
	return g.build(mem, t, start, n), nil
}

func (g *Generator) build(mem memory.Allocator, t *table, start, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, t.schema)
	defer b.Release()
	b.Reserve(int(n))
	r := &rowCtx{g: g, t: t}
	nullP := uint64(t.def.nullBP) * ((1 << 53) / 10000)
	for row := start; row < start+n; row++ {
		r.reset(row)
		if t.def.prepare != nil {
			t.def.prepare(r)
		}
		rowNulls := t.def.nullBP > 0 && r.h(saltNullRow)>>11 < nullP
		base := rowBase(g.cfg.Seed, t.def.id, row)
		for c, fn := range t.fns {
			h := cellHash(base, t.salts[c])
			v := fn(r, h)
			if rowNulls && t.nullable[c] && h&(1<<7) != 0 {
				v.null = true
			}
			appendVal(b.Field(c), v, t.scales[c])
		}
	}
	return b.NewRecordBatch()
}

var pow10 = [...]int64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

func appendVal(fb array.Builder, v val, scale int32) {
	if v.null {
		fb.AppendNull()
		return
	}
	switch b := fb.(type) {
	case *array.Int32Builder:
		b.Append(int32(v.i))
	case *array.Int64Builder:
		b.Append(v.i)
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.i))
	case *array.StringBuilder:
		b.Append(v.s)
	case *array.Decimal128Builder:
		x := v.i
		if scale >= 2 {
			x *= pow10[scale-2]
		} else {
			x /= pow10[2-scale]
		}
		b.Append(decimal128.FromI64(x))
	}
}

// colSalt is the hash salt of a column: its values are independent of every
// other column's.
func colSalt(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

const customerTableID = 9

// rowBase and cellHash derive the hash a column function gets: one full
// hash per row, one mix per cell.
func rowBase(seed, table uint64, row int64) uint64 { return hash4(seed, table, uint64(row), 0) }

func cellHash(base, salt uint64) uint64 { return mix64(base ^ salt) }

// checkKinds generates a few rows and checks that every value fits its
// column's type.
func (g *Generator) checkKinds(t *table) error {
	r := &rowCtx{g: g, t: t}
	for row := int64(0); row < min(t.rows, 8); row++ {
		r.reset(row)
		if t.def.prepare != nil {
			t.def.prepare(r)
		}
		base := rowBase(g.cfg.Seed, t.def.id, row)
		for c, fn := range t.fns {
			v := fn(r, cellHash(base, t.salts[c]))
			if f := t.schema.Field(c); !v.null && !v.kind.fits(f.Type) {
				return fmt.Errorf("%w: table %s column %s: type %s does not fit the generated values", ErrSchema, t.name, f.Name, f.Type)
			}
		}
	}
	return nil
}
