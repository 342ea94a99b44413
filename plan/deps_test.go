package plan

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps plan below engine and flightsql in the layering.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, banned := range []string{"/engine", "/flightsql", "/cmd/", "/substrait"} {
			if strings.HasPrefix(p, "github.com/flightd/flightd") && strings.Contains(p, banned) {
				t.Errorf("plan imports %s", p)
			}
		}
	}
}
