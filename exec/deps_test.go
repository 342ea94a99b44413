package exec_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the layering: exec depends on vectorized only, never on
// the planner, engine, table store or Flight SQL layers.
func TestDeps(t *testing.T) {
	checkDeps(t, "github.com/flightd/flightd/exec", "sql", "plan", "engine", "tablestore", "flightsql", "substrait", "lookup", "cache")
}

func checkDeps(t *testing.T, pkg string, banned ...string) {
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Skipf("go list unavailable: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			p := "github.com/flightd/flightd/" + b
			if dep == p || strings.HasPrefix(dep, p+"/") {
				t.Errorf("%s must not depend on %s", pkg, dep)
			}
		}
	}
}
