package exec

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
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

// boundedRegexpReplace gives ReplaceAllString's result, and past the
// bound its error without first finding every match: REPLACE of each of
// a million 'a's by 10,000 bytes found the million matches (a slice
// each) before the bound stopped it after 6,700.
func TestBoundedRegexpReplace(t *testing.T) {
	for _, c := range []struct{ pattern, s, repl string }{
		{`a`, "banana", "[$0]"},
		{`(a)(n)?`, "banana", "${2}x$1"},
		{`x*`, "abc", "-"},
		{`^`, "abc", ""},
		{`b`, "abc", "$$"},
		{`(?P<v>\d+)`, "a1b22c333", "<${v}>"},
	} {
		re := regexp.MustCompile(c.pattern)
		got, err := boundedRegexpReplace(re, c.s, c.repl)
		if want := re.ReplaceAllString(c.s, c.repl); err != nil || got != want {
			t.Errorf("REGEXP_REPLACE(%q, %q, %q) = %q, %v; want %q", c.s, c.pattern, c.repl, got, err, want)
		}
	}
	re, s, repl := regexp.MustCompile(`a`), strings.Repeat("a", 1_000_000), strings.Repeat("b", 10_000)
	var err error
	allocs := testing.AllocsPerRun(1, func() { _, err = boundedRegexpReplace(re, s, repl) })
	if err == nil {
		t.Fatal("a result of 10 GB was not refused")
	}
	if allocs > 100_000 {
		t.Fatalf("%.0f allocations to refuse it: every match was found first", allocs)
	}
}

// A call's matches stop between rows once its context is cancelled: each
// row's match is bounded, not a batch of them.
func TestRegexpsStopOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	res := newRegexps(ctx, "REGEXP", nil)
	re, err := res.get(`a+b`)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Repeat("a", 100_000)
	for range 1000 {
		if err := res.meter(re, s); err != nil {
			t.Fatalf("before the cancel: %v", err)
		}
	}
	cancel()
	for i := range 1000 {
		if err := res.meter(re, s); errors.Is(err, context.Canceled) {
			return
		} else if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	t.Fatal("1,000 rows of 100 KB matched after the cancel")
}
