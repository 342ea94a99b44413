package vectorized

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces that vectorized is the bottom layer: no flightd imports.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/flightd/flightd/vectorized").CombinedOutput()
	if err != nil {
		t.Skipf("go list unavailable: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/flightd/flightd/") && dep != "github.com/flightd/flightd/vectorized" {
			t.Errorf("vectorized must not depend on %s", dep)
		}
	}
}
