package vectorized

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// leafHelpers import nothing of flightd and serve every layer.
var leafHelpers = []string{"github.com/flightd/flightd/internal/quote"}

// TestDeps enforces that vectorized is the bottom layer: no flightd imports
// but the leaf helpers.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/flightd/flightd/vectorized").CombinedOutput()
	if err != nil {
		t.Skipf("go list unavailable: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/flightd/flightd/") && dep != "github.com/flightd/flightd/vectorized" && !slices.Contains(leafHelpers, dep) {
			t.Errorf("vectorized must not depend on %s", dep)
		}
	}
}
