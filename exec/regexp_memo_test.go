package exec

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
)

// A memo gives what the pattern gives, remembers while strings repeat and
// stops once the first memoProbe strings did not repeat enough.
func TestMatchMemo(t *testing.T) {
	re := regexp.MustCompile(`(&|^)channel_id=([^&]*)`)
	rng := rand.New(rand.NewPCG(1, 2))
	urls := []string{"https://x/item.htm?query=1", "https://x/item.htm?query=1&channel_id=7", "channel_id=", "&channel_id=12&a=b"}
	unique := func(i int) string { return fmt.Sprintf("q=%d&channel_id=%d", i, rng.IntN(1000)) }
	for _, c := range []struct {
		name     string
		next     func(i int) string
		remember bool
	}{
		{"repeated", func(int) string { return urls[rng.IntN(len(urls))] }, true},
		{"mostly repeated", func(i int) string {
			if rng.IntN(2) == 0 {
				return unique(i)
			}
			return urls[rng.IntN(len(urls))]
		}, true},
		{"unique", unique, false},
	} {
		m := newMatchMemo(true)
		for i := range 1000 {
			s := c.next(i)
			if got, want := m.find(re, s), re.FindStringSubmatchIndex(s); !slices.Equal(got, want) {
				t.Fatalf("%s: %q: memo %v, pattern %v", c.name, s, got, want)
			}
		}
		if (m.seen != nil) != c.remember {
			t.Fatalf("%s: remembering %v after %d looks, %d hits", c.name, m.seen != nil, m.looks, m.hits)
		}
	}
	if m := newMatchMemo(false); m.find(re, urls[1]) == nil || m.seen != nil {
		t.Fatal("a memo of a pattern that is not fixed remembers")
	}
}
