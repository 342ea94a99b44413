// Package layering checks the dependency direction of docs/ARCHITECTURE.md:
// vectorized <- exec <- plan <- engine <- flightsql <- cmd/flightd, with sql
// used by plan, stream (incremental operators) between exec and plan, and
// the storage packages below all of the query engine.
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/flightd/flightd/"

// forbidden lists, per package, the packages it must not depend on
// (directly or transitively).
var forbidden = map[string][]string{
	"vectorized": {"exec", "plan", "sql", "engine", "flightsql", "tablestore"},
	"exec":       {"plan", "sql", "engine", "flightsql", "tablestore", "stream"},
	"stream":     {"plan", "sql", "engine", "flightsql"},
	"sql":        {"exec", "plan", "engine", "flightsql", "tablestore", "vectorized"},
	"plan":       {"engine", "flightsql"},
	"engine":     {"flightsql"},
	"tablestore": {"exec", "plan", "sql", "engine", "flightsql", "vectorized", "stream"},
	"cache":      {"exec", "plan", "sql", "engine", "flightsql", "vectorized", "tablestore"},
}

func TestLayering(t *testing.T) {
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		for _, d := range deps {
			for _, b := range bad {
				if d == module+b || strings.HasPrefix(d, module+b+"/") {
					t.Errorf("%s depends on %s, which the layering forbids", pkg, d)
				}
			}
		}
	}
}
