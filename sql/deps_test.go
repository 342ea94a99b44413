package sql

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoFlightdImports keeps the parser free of the rest of flightd.
func TestNoFlightdImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/flightd/flightd/") && p != "github.com/flightd/flightd/sql" {
			t.Errorf("sql imports %s", p)
		}
	}
}
