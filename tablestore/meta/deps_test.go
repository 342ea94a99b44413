package meta

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoFlightdImports: the metadata model knows nothing of the store that
// imports it; of flightd it imports only paimonfmt, which imports nothing
// of flightd.
func TestNoFlightdImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/flightd/flightd/") && dep != "github.com/flightd/flightd/tablestore/meta" && dep != "github.com/flightd/flightd/tablestore/paimonfmt" {
			t.Errorf("meta must not import %s", dep)
		}
	}
}
