package nexmark

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/flightd/flightd/bench/tpcds"
)

// A streaming query emits an event-time window once the watermark passes
// its end; windows still open when the input ends are legitimately not in
// its result. The batch answer it is compared with is therefore the batch
// query restricted to the windows the final watermark closed: each window
// TVF's rows filtered to window_end <= watermark (so every aggregation and
// join over it sees closed windows only), and for a GROUP BY SESSION(...)
// query the result filtered on its SESSION_END column.

var (
	windowTVF = regexp.MustCompile(`(?i)\bTABLE\s*\(\s*(?:TUMBLE|HOP|CUMULATE|SESSION)\s*\(`)
	// A group window of the legacy syntax: GROUP BY ..., SESSION(ts, gap).
	groupWindow = regexp.MustCompile(`(?i)\bGROUP\s+BY\s+[^()]*?\b(?:TUMBLE|HOP|SESSION)\s*\(`)
	windowEndAs = regexp.MustCompile("(?i)\\b(?:TUMBLE|HOP|SESSION)_END\\s*\\([^)]*\\)\\s+AS\\s+(`?\\w+`?)")
	aliasAfter  = regexp.MustCompile(`^\s+(?:(?i:AS)\s+)?(\w+)`)
)

// Words that may follow a FROM item and are not its alias.
var notAlias = map[string]bool{"where": true, "group": true, "order": true, "having": true, "limit": true,
	"join": true, "inner": true, "left": true, "right": true, "full": true, "cross": true, "on": true,
	"union": true, "window": true}

var proctimeCall = regexp.MustCompile(`(?i)\bPROCTIME\s*\(`)

const errProcessingTime = "processing-time windows: which window a row falls in depends on when it arrived, so no batch answer compares"

// processingTime reports whether q's windows may be over processing time
// (PROCTIME() in the query or a view it sets up).
func processingTime(q Query) bool {
	if !windowed(q.Select) {
		return false
	}
	return proctimeCall.MatchString(q.Select) || slices.ContainsFunc(q.Setup, proctimeCall.MatchString)
}

// windowed reports whether sel has event-time windows.
func windowed(sel string) bool {
	return windowTVF.MatchString(sel) || groupWindow.MatchString(sel)
}

// closedWindows rewrites the batch query sel to the windows whose end is
// at or before wm. It fails when sel has windows it cannot restrict (a
// group window whose end is not a named result column).
func closedWindows(sel string, wm time.Time) (string, error) {
	lit := "TIMESTAMP '" + wm.UTC().Format("2006-01-02 15:04:05.000") + "'"
	var out strings.Builder
	rest := sel
	n := 0
	for {
		loc := windowTVF.FindStringIndex(rest)
		if loc == nil {
			break
		}
		open := loc[0] + strings.IndexByte(rest[loc[0]:], '(')
		end, err := tpcds.ClosingParen(rest, open)
		if err != nil {
			return "", err
		}
		tvf := rest[loc[0] : end+1]
		after := rest[end+1:]
		alias := fmt.Sprintf("closed_w%d", n)
		if m := aliasAfter.FindStringSubmatchIndex(after); m != nil && !notAlias[strings.ToLower(after[m[2]:m[3]])] {
			alias = after[m[2]:m[3]]
			after = after[m[1]:]
		}
		out.WriteString(rest[:loc[0]])
		fmt.Fprintf(&out, "(SELECT * FROM %s WHERE window_end <= %s) AS %s", tvf, lit, alias)
		rest = after
		n++
	}
	out.WriteString(rest)
	sel = out.String()
	if groupWindow.MatchString(sel) {
		m := windowEndAs.FindStringSubmatch(sel)
		if m == nil {
			return "", fmt.Errorf("a group window without a named *_END column: its closed windows cannot be told apart")
		}
		sel = fmt.Sprintf("SELECT * FROM (%s) AS closed_windows WHERE %s <= %s", sel, m[1], lit)
	}
	return sel, nil
}
