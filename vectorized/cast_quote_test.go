package vectorized

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCastErrorQuotesShort: a failed cast quotes 256 bytes of a long value
// and its length, not the value: a 15 MB string of control characters
// was quoted whole, 60 MB a copy, and one such query took the real binary
// from 40 MB to 1.25 GB RSS (0.98 GB after). Short values are quoted whole.
func TestCastErrorQuotesShort(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, c := range []struct {
		v, want string
	}{
		{"12x", `value "12x" to int64`},
		{strings.Repeat("\x01", 1_000_000), `… (1000000 bytes) to int64`},
		{strings.Repeat("é", 300), `… (600 bytes) to int64`},
	} {
		b := array.NewStringBuilder(mem)
		b.Append(c.v)
		a := b.NewArray()
		b.Release()
		out, err := Cast(mem, a, arrow.PrimitiveTypes.Int64)
		a.Release()
		if err == nil {
			out.Release()
			t.Fatalf("cast of %.20q succeeded", c.v)
		}
		if msg := err.Error(); !errors.Is(err, ErrInvalidValue) || !strings.Contains(msg, c.want) || len(msg) > 1200 {
			t.Errorf("cast of %d bytes: %d-byte message %.200q, want %q", len(c.v), len(msg), msg, c.want)
		}
	}
}
