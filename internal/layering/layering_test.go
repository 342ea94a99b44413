// Package layering checks the dependency direction of docs/ARCHITECTURE.md:
// vectorized <- exec <- plan <- engine <- flightsql <- cmd/flightd, with sql
// used by plan, stream (incremental operators) between exec and plan, and
// the storage packages below all of the query engine, the table store's
// leaf subpackages below the table store. The endpoint reaches
// the query engine only through engine's API.
package layering

import (
	"os/exec"
	"slices"
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
	"lookup":     {"exec", "plan", "sql", "engine", "flightsql", "vectorized", "stream"},
	"substrait":  {"engine", "flightsql"},
	// Leaves under the table store: it imports them, so they import
	// nothing of flightd (tablestore/... includes each other).
	"tablestore/maintenance": leaf,
	"tablestore/changefeed":  leaf,
	"tablestore/paimonfmt":   leaf,
	"tablestore/merge":       leaf,
}

// only lists, per package, all of flightd it may depend on (directly or
// transitively): the leaves every layer imports.
var only = map[string][]string{
	// The metadata model holds paimonfmt's statistics and knows nothing of
	// the store that imports it.
	"tablestore/meta": {"tablestore/paimonfmt"},
	// vectorized, the bottom layer, quotes values with it.
	"internal/quote": {},
}

var leaf = []string{"vectorized", "exec", "stream", "sql", "plan", "engine", "flightsql", "substrait", "cache", "lookup", "tablestore"}

// forbiddenImports lists, per package, the packages its files (tests
// included) must not import themselves: it depends on them only through
// the packages it may import.
var forbiddenImports = map[string][]string{
	"flightsql": {"plan", "exec", "tablestore", "stream", "vectorized", "sql", "substrait"},
	// substrait reads and writes the logical plan and the SQL AST only.
	"substrait": {"exec", "tablestore", "stream", "vectorized", "engine", "flightsql", "cache", "lookup"},
}

func TestLayering(t *testing.T) {
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		for _, d := range deps {
			if d == module+pkg {
				continue // go list -deps lists the package itself
			}
			for _, b := range bad {
				if d == module+b || strings.HasPrefix(d, module+b+"/") {
					t.Errorf("%s depends on %s, which the layering forbids", pkg, d)
				}
			}
		}
	}
}

func TestOnly(t *testing.T) {
	for pkg, allowed := range only {
		out, err := exec.Command("go", "list", "-deps", module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, d := range strings.Fields(string(out)) {
			name, ok := strings.CutPrefix(d, module)
			if ok && name != pkg && !slices.Contains(allowed, name) {
				t.Errorf("%s depends on %s; of flightd it may depend on %v only", pkg, d, allowed)
			}
		}
	}
}

func TestImports(t *testing.T) {
	for pkg, bad := range forbiddenImports {
		out, err := exec.Command("go", "list", "-f", "{{range .Imports}}{{.}} {{end}}{{range .TestImports}}{{.}} {{end}}{{range .XTestImports}}{{.}} {{end}}",
			module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		imports := strings.Fields(string(out))
		if len(imports) == 0 {
			t.Fatalf("go list %s: no imports listed", pkg)
		}
		for _, d := range imports {
			for _, b := range bad {
				if d == module+b || strings.HasPrefix(d, module+b+"/") {
					t.Errorf("%s imports %s; it must go through engine's API", pkg, d)
				}
			}
		}
	}
}
