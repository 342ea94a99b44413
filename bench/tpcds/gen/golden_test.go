package gen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestGolden pins generated rows: any change to the data (and so to the
// queries' answers) shows up as a diff of testdata/rows. Regenerate with
// -rewrite after an intended change and review the diff.
//
//	rows table=<name> [sf=<scale>] [seed=<n>] [start=<row>] [n=<rows>]
//	count sf=<scale>
func TestGolden(t *testing.T) {
	mem := checkedMem(t)
	datadriven.RunTest(t, "testdata/rows", func(t *testing.T, d *datadriven.TestData) string {
		sf, seed, start, n := 0.01, uint64(1), int64(0), int64(3)
		var table string
		for _, a := range d.CmdArgs {
			if len(a.Vals) != 1 {
				d.Fatalf(t, "argument %s needs one value", a.Key)
			}
			var err error
			switch v := a.Vals[0]; a.Key {
			case "table":
				table = v
			case "sf":
				_, err = fmt.Sscan(v, &sf)
			case "seed":
				_, err = fmt.Sscan(v, &seed)
			case "start":
				_, err = fmt.Sscan(v, &start)
			case "n":
				_, err = fmt.Sscan(v, &n)
			default:
				d.Fatalf(t, "unknown argument %s", a.Key)
			}
			if err != nil {
				d.Fatalf(t, "%s: %v", a.Key, err)
			}
		}
		g := newGen(t, sf, seed)
		switch d.Cmd {
		case "rows":
			b, err := g.Chunk(mem, table, start, n)
			if err != nil {
				return "error: " + err.Error()
			}
			defer b.Release()
			var sb strings.Builder
			for r := 0; r < int(b.NumRows()); r++ {
				for c, f := range b.Schema().Fields() {
					fmt.Fprintf(&sb, "%s=%s", f.Name, b.Column(c).ValueStr(r))
					if c < int(b.NumCols())-1 {
						sb.WriteString(" ")
					}
				}
				sb.WriteString("\n")
			}
			return sb.String()
		case "count":
			var sb strings.Builder
			for _, name := range g.Tables() {
				rows, _ := g.RowCount(name)
				fmt.Fprintf(&sb, "%s %d\n", name, rows)
			}
			return sb.String()
		}
		d.Fatalf(t, "unknown command %s", d.Cmd)
		return ""
	})
}
