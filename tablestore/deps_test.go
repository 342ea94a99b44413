package tablestore

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoForbiddenImports keeps the storage layer below the engine.
func TestNoForbiddenImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"/exec", "/plan", "/engine", "/flightsql"} {
			if strings.HasPrefix(dep, "github.com/flightd/flightd") && strings.HasSuffix(dep, bad) {
				t.Errorf("tablestore must not import %s", dep)
			}
		}
	}
}
