package exec

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSplitPiece: splitPiece gives the piece strings.Split gives, NULL past
// the last piece or for a negative index, on separators that overlap
// themselves ("aa" in "aaaa") and multi-byte ones; an empty separator does
// not split.
func TestSplitPiece(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 3))
	alphabet := []string{"a", "/", "é", "日"}
	word := func(max int) string {
		var sb strings.Builder
		for range rng.IntN(max) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	for range 20000 {
		s, sep, k := word(12), word(3), int64(rng.IntN(8)-1)
		got, ok := splitPiece(s, sep, k)
		parts := []string{s}
		if sep != "" {
			parts = strings.Split(s, sep)
		}
		want, wantOK := "", k >= 0 && k < int64(len(parts))
		if wantOK {
			want = parts[k]
		}
		if got != want || ok != wantOK {
			t.Fatalf("splitPiece(%q, %q, %d) = %q, %v; want %q, %v", s, sep, k, got, ok, want, wantOK)
		}
	}
}
