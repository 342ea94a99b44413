package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// Expire holds sys.expire_snapshots' retain_max, retain_min,
	// older_than and max_deletes (zero: the table's option).
	Expire tablestore.ExpireOptions
	// OlderThan is sys.remove_orphan_files' older_than (zero: not given).
	OlderThan time.Time
}

func (*CallProcedure) boundStmt() {}

type procParam struct {
	name     string
	required bool
	typ      arrow.DataType
}

var (
	procTable     = procParam{"table", true, arrow.BinaryTypes.String}
	procSnapshot  = func(name string) procParam { return procParam{name, false, arrow.PrimitiveTypes.Int64} }
	procOlderThan = procParam{"older_than", false, &arrow.TimestampType{Unit: arrow.Microsecond}}
)

// procedures lists the procedures CALL knows, with their parameters in
// positional order.
var procedures = map[string][]procParam{
	// Moves (or, without a snapshot, removes) a change stream consumer.
	"sys.reset_consumer": {procTable, {"consumer_id", true, arrow.BinaryTypes.String}, procSnapshot("next_snapshot_id")},
	"sys.create_tag":     {procTable, {"tag", true, arrow.BinaryTypes.String}, procSnapshot("snapshot_id")},
	"sys.delete_tag":     {procTable, {"tag", true, arrow.BinaryTypes.String}},
	// Retention for this call instead of the table's options (Paimon's
	// arguments): at most retain_max snapshots, at least retain_min, and
	// of those in between the ones older_than ('2026-01-01 12:00:00').
	"sys.expire_snapshots": {procTable, procSnapshot("retain_max"), procSnapshot("retain_min"), procOlderThan, procSnapshot("max_deletes")},
	// Removes files no snapshot or tag references (crash leftovers) that
	// are older than older_than, by default one day, so the files of
	// commits in flight stay.
	"sys.remove_orphan_files": {procTable, procOlderThan},
	"sys.compact":             {procTable},
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
		c := b.constExpr(a.Value, p.typ)
		v := c.Value
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
		case "older_than":
			ts, ok := timestampOf(c)
			if !ok {
				b.fail(a.Pos, "%s: older_than must be a timestamp such as '2026-01-01 12:00:00'", name)
			}
			call.OlderThan = ts
			call.Expire.OlderThan = ts
		default:
			n, ok := v.(*scalar.Int64)
			if !ok || n.Value < 1 {
				b.fail(a.Pos, "%s: %s must be a positive integer, got %s", name, p.name, strconv.Quote(fmt.Sprint(v)))
			}
			switch p.name {
			case "retain_max":
				call.Expire.RetainMax = int(n.Value)
			case "retain_min":
				call.Expire.RetainMin = int(n.Value)
			case "max_deletes":
				call.Expire.MaxDeletes = int(n.Value)
			default:
				call.Snapshot = n.Value
			}
		}
	}
	return call
}
