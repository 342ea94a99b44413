package quote

import (
	"strings"
	"testing"
)

func TestClipped(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"abc", 3, `"abc"`},
		{"abcd", 3, `"abc"… (4 bytes)`},
		{"a\x00", 8, `"a\x00"`},
		{"aé", 2, `"a"… (3 bytes)`}, // é is two bytes: not cut in half
		{"", 0, `""`},
	} {
		if got := Clipped(c.in, c.max); got != c.want {
			t.Errorf("Clipped(%q, %d) = %s, want %s", c.in, c.max, got, c.want)
		}
		if got := Clipped([]byte(c.in), c.max); got != c.want {
			t.Errorf("Clipped([]byte(%q), %d) = %s, want %s", c.in, c.max, got, c.want)
		}
	}
	if got := Clipped(strings.Repeat("\x01", 100<<20), 64); len(got) > 400 {
		t.Fatalf("a 100 MB value quoted in %d bytes", len(got))
	}
}
