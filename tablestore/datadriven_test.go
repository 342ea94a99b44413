package tablestore

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the table-store sequences in testdata/ (rewrite the
// expectations with -rewrite):
//
//	create [pk=a,b] [partition=p] [opt=key=value ...]   input: "name TYPE [NULL]" lines; ';' in options stands for ','
//	drop
//	write [kind=+I|-U|+U|-D] [overwrite] [partition=p=v]  input: CSV rows, NULL for null
//	commit | abort | compact [full] | stats | expire
//	changelog [snapshot=N]   the changelog rows snapshot N (default latest) publishes
//	scan [snapshot=N] [cols=a,b] [filter=<pred> ...]     filters are ANDed: col<op>value, col:null
//	alter add=name:TYPE | drop=c | rename=a:b | widen=c:TYPE | set=k=v
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		ctx := context.Background()
		s, mem, _ := newTestStore(t)
		var tbl *Table
		var w *Write
		defer func() {
			if w != nil {
				w.Abort()
			}
		}()
		id := Ident{"db", "t"}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := func() (string, error) {
				if tbl == nil && d.Cmd != "create" {
					return "", fmt.Errorf("no table")
				}
				switch d.Cmd {
				case "create":
					var fields []arrow.Field
					for _, l := range strings.Split(strings.TrimSpace(d.Input), "\n") {
						f := strings.Fields(l)
						if len(f) < 2 {
							return "", fmt.Errorf("bad column %q", l)
						}
						dt, err := parseType(f[1])
						if err != nil {
							return "", err
						}
						fields = append(fields, arrow.Field{Name: f[0], Type: dt, Nullable: len(f) > 2 && f[2] == "NULL"})
					}
					def := TableDef{Schema: arrow.NewSchema(fields, nil), Options: map[string]string{}}
					for _, a := range d.CmdArgs {
						switch a.Key {
						case "pk":
							def.PrimaryKey = a.Vals
						case "partition":
							def.PartitionKeys = a.Vals
						case "opt":
							for _, v := range a.Vals {
								k, val, _ := strings.Cut(v, "=")
								def.Options[strings.ReplaceAll(k, ";", ",")] = strings.ReplaceAll(val, ";", ",")
							}
						}
					}
					var err error
					tbl, err = s.CreateTable(ctx, id, def, false)
					return "ok", err
				case "write":
					kind := Insert
					var opts WriteOptions
					for _, a := range d.CmdArgs {
						switch a.Key {
						case "kind":
							k := slices.IndexFunc([]RowKind{Insert, UpdateBefore, UpdateAfter, Delete}, func(k RowKind) bool { return k.String() == a.Vals[0] })
							if k < 0 {
								return "", fmt.Errorf("bad kind %q", a.Vals[0])
							}
							kind = RowKind(k)
						case "overwrite":
							opts.Overwrite = true
						case "partition":
							opts.OverwritePartition = map[string]string{}
							for _, v := range a.Vals {
								k, val, _ := strings.Cut(v, "=")
								opts.OverwritePartition[k] = val
							}
						}
					}
					if w == nil {
						w = tbl.NewWrite(opts)
					}
					b, err := csvBatch(mem, tbl.Schema(), d.Input)
					if err != nil {
						return "", err
					}
					defer b.Release()
					return "ok", w.Write(ctx, b, kind)
				case "commit":
					if w == nil {
						w = tbl.NewWrite(WriteOptions{})
					}
					id, err := w.Commit(ctx)
					w = nil
					return fmt.Sprintf("snapshot %d", id), err
				case "abort":
					w.Abort()
					w = nil
					return "ok", nil
				case "compact":
					return "ok", tbl.Compact(ctx, d.HasArg("full"))
				case "changelog":
					snap, err := tbl.LatestSnapshotID(ctx)
					if err != nil {
						return "", err
					}
					if d.HasArg("snapshot") {
						var v string
						d.ScanArgs(t, "snapshot", &v)
						snap, _ = strconv.ParseInt(v, 10, 64)
					}
					sn, err := tbl.st.readSnapshot(snap)
					if err != nil {
						return "", err
					}
					var sb strings.Builder
					fmt.Fprintf(&sb, "snapshot %d %s", snap, sn.CommitKind)
					for _, r := range readChangelog(t, tbl, snap) {
						fmt.Fprintf(&sb, "\n%s %s", r.kind, r.row)
					}
					return sb.String(), nil
				case "drop":
					if w != nil {
						w.Abort()
						w = nil
					}
					tbl = nil
					return "ok", s.DropTable(ctx, id, false)
				case "expire":
					n, err := tbl.ExpireSnapshots(ctx)
					return fmt.Sprintf("expired %d", n), err
				case "stats":
					st, err := tbl.Stats(ctx, 0)
					return fmt.Sprintf("snapshot=%d rows=%d files=%d partitions=%d", st.SnapshotID, st.Rows, st.Files, st.Partitions), err
				case "alter":
					var changes []SchemaChange
					for _, a := range d.CmdArgs {
						x, y, _ := strings.Cut(a.Vals[0], ":")
						switch a.Key {
						case "add", "widen":
							dt, err := parseType(y)
							if err != nil {
								return "", err
							}
							if a.Key == "add" {
								changes = append(changes, AddColumn{Name: x, Type: dt})
							} else {
								changes = append(changes, UpdateColumnType{Name: x, Type: dt})
							}
						case "drop":
							changes = append(changes, DropColumn{Name: x})
						case "rename":
							changes = append(changes, RenameColumn{Old: x, New: y})
						case "set":
							k, v, _ := strings.Cut(a.Vals[0], "=")
							changes = append(changes, SetOption{Key: k, Value: v})
						}
					}
					if err := s.AlterTable(ctx, id, changes...); err != nil {
						return "", err
					}
					var err error
					tbl, err = s.Table(ctx, id)
					return "ok", err
				case "scan":
					var spec ScanSpec
					var preds And
					for _, a := range d.CmdArgs {
						switch a.Key {
						case "snapshot":
							spec.SnapshotID, _ = strconv.ParseInt(a.Vals[0], 10, 64)
						case "cols":
							spec.Columns = a.Vals
						case "filter":
							for _, v := range a.Vals {
								p, err := parsePred(tbl, v)
								if err != nil {
									return "", err
								}
								preds = append(preds, p)
							}
						}
					}
					if len(preds) > 0 {
						spec.Filter = preds
					}
					sc, err := tbl.NewScan(ctx, spec)
					if err != nil {
						return "", err
					}
					rows, err := readScanErr(sc)
					if err != nil {
						return "", err
					}
					st := sc.Stats()
					var sb strings.Builder
					for _, r := range rows {
						sb.WriteString(r + "\n")
					}
					fmt.Fprintf(&sb, "splits=%d ordered-by=%v partitions=%d/%d files=%d/%d row-groups-skipped=%d",
						len(sc.Splits()), sc.OrderedBy(), st.PartitionsSelected, st.PartitionsTotal, st.FilesSelected, st.FilesTotal, st.RowGroupsSkipped)
					if spec.Filter != nil {
						fmt.Fprintf(&sb, "\nfilter: %s", spec.Filter)
					}
					return sb.String(), nil
				}
				return "", fmt.Errorf("unknown command %q", d.Cmd)
			}()
			if err != nil {
				return "error: " + err.Error()
			}
			return out
		})
	})
}

// csvBatch builds a batch from comma-separated rows.
func csvBatch(mem memory.Allocator, sc *arrow.Schema, input string) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for _, l := range strings.Split(strings.TrimSpace(input), "\n") {
		cells := strings.Split(l, ",")
		if len(cells) != sc.NumFields() {
			return nil, fmt.Errorf("row %q: want %d cells", l, sc.NumFields())
		}
		for i, c := range cells {
			c = strings.TrimSpace(c)
			if c == "NULL" {
				b.Field(i).AppendNull()
				continue
			}
			if err := b.Field(i).AppendValueFromString(c); err != nil {
				return nil, fmt.Errorf("cell %q: %w", c, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

var predRE = regexp.MustCompile(`^(\w+)(<=|>=|<>|=|<|>|:null|:notnull)(.*)$`)

// parsePred parses col<op>value with a literal of the column's type.
func parsePred(tbl *Table, s string) (Predicate, error) {
	m := predRE.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("bad filter %q", s)
	}
	col, op, lit := m[1], m[2], m[3]
	switch op {
	case ":null":
		return IsNull{Column: col}, nil
	case ":notnull":
		return Not{IsNull{Column: col}}, nil
	}
	idx := tbl.Schema().FieldIndices(col)
	var v scalar.Scalar
	if len(idx) == 0 {
		v = scalar.NewStringScalar(lit)
	} else {
		var err error
		v, err = scalar.ParseScalar(tbl.Schema().Field(idx[0]).Type, lit)
		if err != nil {
			return nil, err
		}
	}
	ops := map[string]CmpOp{"=": EQ, "<>": NE, "<": LT, "<=": LE, ">": GT, ">=": GE}
	return Compare{Column: col, Op: ops[op], Value: v}, nil
}
