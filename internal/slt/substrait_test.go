package slt

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/plan"
)

// roundTrip is a Harness whose queries go SQL -> logical plan -> Substrait
// -> SQL -> logical plan -> execution: the answers must be the .slt's.
// Queries the producer has no Substrait form for run as SQL and are
// counted.
type roundTrip struct {
	*InProc
	stats *rtStats
}

type rtStats struct {
	sync.Mutex
	tripped int
	refused map[string]int
}

func (h roundTrip) Query(text string) (string, [][]string, error) {
	st, err := h.sess.Prepare(h.ctx, text, nil)
	if err != nil {
		return "", nil, err
	}
	b, err := st.Substrait()
	if err != nil {
		if !errors.Is(err, engine.ErrNotSupported) {
			return "", nil, err
		}
		h.stats.Lock()
		h.stats.refused[err.Error()]++
		h.stats.Unlock()
		return h.InProc.Query(text)
	}
	back, err := h.sess.SubstraitSQL(h.ctx, b, nil) // with the base_schema check
	if err != nil {
		return "", nil, err
	}
	h.stats.Lock()
	h.stats.tripped++
	h.stats.Unlock()
	types, rows, err := h.InProc.Query(back)
	if err != nil {
		return "", nil, errors.Join(err, errors.New("through Substrait as: "+back))
	}
	return types, rows, nil
}

// TestSubstraitRoundTrip runs every .slt file with its queries through the
// Substrait producer and consumer.
func TestSubstraitRoundTrip(t *testing.T) {
	files, err := filepath.Glob("../../testdata/slt/*.slt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .slt files: %v", err)
	}
	stats := &rtStats{refused: map[string]int{}}
	t.Run("files", func(t *testing.T) {
		for _, f := range files {
			t.Run(filepath.Base(f), func(t *testing.T) {
				t.Parallel()
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				h, err := NewInProc(context.Background(), t.TempDir(), mem, plan.Options{})
				if err != nil {
					t.Fatal(err)
				}
				RunFile(t, roundTrip{InProc: h, stats: stats}, f)
				if err := h.Close(); err != nil {
					t.Fatal(err)
				}
				mem.AssertSize(t, 0)
			})
		}
	})
	var reasons []string
	n := 0
	for r, c := range stats.refused {
		reasons = append(reasons, r)
		n += c
	}
	sort.Strings(reasons)
	t.Logf("%d queries through Substrait, %d without a Substrait form", stats.tripped, n)
	for _, r := range reasons {
		t.Logf("  %4d %s", stats.refused[r], r)
	}
	if stats.tripped == 0 {
		t.Fatal("no query went through Substrait")
	}
}
