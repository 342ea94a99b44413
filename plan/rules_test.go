package plan_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

// TestRules runs testdata/rules: `exec` runs statements; `rule name=R`
// binds the query with every switchable rule but R (and the rules listed
// in `with=`) off and prints the bound plan, then each rule that ran with
// the plan it left. It fails when R changed nothing, unless `unchanged` is
// given, when it fails if R changed something.
func TestRules(t *testing.T) {
	datadriven.Walk(t, "testdata/rules", func(t *testing.T, path string) {
		h, _ := newHarness(t, plan.Options{})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "exec":
				if err := h.Exec(d.Input); err != nil {
					return "error: " + err.Error() + "\n"
				}
				return ""
			case "rule":
				var name string
				on := map[string]bool{}
				for _, a := range d.CmdArgs {
					switch a.Key {
					case "name":
						name = a.Vals[0]
						on[name] = true
					case "with":
						for _, v := range a.Vals {
							for _, r := range strings.Split(v, ",") {
								on[r] = true
							}
						}
					}
				}
				var trace strings.Builder
				opts := plan.Options{Trace: &trace}
				for _, r := range plan.Rules {
					if !on[r] {
						opts.DisabledRules = append(opts.DisabledRules, r)
					}
				}
				ast, err := sql.ParseOne(d.Input)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				if _, err := plan.Bind(context.Background(), ast, h, opts); err != nil {
					return "error: " + err.Error() + "\n"
				}
				out := trace.String()
				changed := !slices.Contains(strings.Split(out, "\n"), name+": no change")
				if !strings.Contains(out, name) {
					t.Fatalf("rule %s did not run", name)
				}
				if changed == d.HasArg("unchanged") {
					t.Errorf("%s: rule %s changed the plan: %v, want %v", d.Pos, name, changed, !d.HasArg("unchanged"))
				}
				return out
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}
