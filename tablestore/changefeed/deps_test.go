package changefeed

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoFlightdImports: the feed knows Arrow batches only, so the table
// store can import it (and nothing above the store can leak in); of
// flightd it imports only arrowshare, which imports nothing of flightd.
func TestNoFlightdImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/flightd/flightd/") && dep != "github.com/flightd/flightd/tablestore/changefeed" && dep != "github.com/flightd/flightd/internal/arrowshare" {
			t.Errorf("changefeed must not import %s", dep)
		}
	}
}
