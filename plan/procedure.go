package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// CallProcedure runs a table maintenance procedure (CALL sys.name(...), Paimon's
// names and parameters).
type CallProcedure struct {
	Proc     string // e.g. "sys.reset_consumer"
	Table    *tablestore.Table
	Consumer string
	Tag      string
	Snapshot int64 // 0: not given
}

func (*CallProcedure) boundStmt() {}

type procParam struct {
	name     string
	required bool
	typ      arrow.DataType
}

var (
	procTable    = procParam{"table", true, arrow.BinaryTypes.String}
	procSnapshot = func(name string) procParam { return procParam{name, false, arrow.PrimitiveTypes.Int64} }
)

// procedures lists the procedures CALL knows, with their parameters in
// positional order.
var procedures = map[string][]procParam{
	// Moves (or, without a snapshot, removes) a change stream consumer.
	"sys.reset_consumer":   {procTable, {"consumer_id", true, arrow.BinaryTypes.String}, procSnapshot("next_snapshot_id")},
	"sys.create_tag":       {procTable, {"tag", true, arrow.BinaryTypes.String}, procSnapshot("snapshot_id")},
	"sys.delete_tag":       {procTable, {"tag", true, arrow.BinaryTypes.String}},
	"sys.expire_snapshots": {procTable},
	"sys.compact":          {procTable},
}

func (b *binder) bindProcedure(c *sql.Call) *CallProcedure {
	name := strings.ToLower(strings.Join(c.Name.Parts, "."))
	params, ok := procedures[name]
	if !ok {
		b.fail(c.Pos, "unknown procedure %s (known: %s)", name, strings.Join(slices.Sorted(maps.Keys(procedures)), ", "))
	}
	vals := make([]*sql.CallArg, len(params))
	for i, a := range c.Args {
		k := i
		if a.Name != "" {
			k = -1
			for j, p := range params {
				if p.name == strings.ToLower(a.Name) {
					k = j
				}
			}
			if k < 0 {
				b.fail(a.Pos, "%s has no parameter %q", name, a.Name)
			}
		} else if i >= len(params) {
			b.fail(a.Pos, "%s takes at most %d arguments", name, len(params))
		}
		if vals[k] != nil {
			b.fail(a.Pos, "%s: parameter %s given twice", name, params[k].name)
		}
		vals[k] = a
	}
	call := &CallProcedure{Proc: name}
	for i, p := range params {
		a := vals[i]
		if a == nil {
			if p.required {
				b.fail(c.Pos, "%s needs parameter %s", name, p.name)
			}
			continue
		}
		v := b.constExpr(a.Value, p.typ).Value
		if !v.IsValid() {
			b.fail(a.Pos, "%s: %s must not be NULL", name, p.name)
		}
		switch p.name {
		case "table":
			s := v.(*scalar.String).String()
			call.Table, _ = b.table(&sql.Name{Pos: a.Pos, Parts: strings.Split(s, ".")})
		case "consumer_id":
			call.Consumer = v.(*scalar.String).String()
		case "tag":
			call.Tag = v.(*scalar.String).String()
		default:
			n, ok := v.(*scalar.Int64)
			if !ok || n.Value < 1 {
				b.fail(a.Pos, "%s: %s must be a positive integer, got %s", name, p.name, strconv.Quote(fmt.Sprint(v)))
			}
			call.Snapshot = n.Value
		}
	}
	return call
}
