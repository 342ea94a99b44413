package tpcds

import (
	"regexp"
	"strconv"
	"strings"
)

// orderBy describes the outermost ORDER BY of a query.
type orderBy struct {
	present bool
	keys    []int // output columns of the sort keys; nil if any key is an expression
	limit   int64 // outermost LIMIT, 0 if none
	// limitAt is the byte span of the LIMIT's number in the query.
	limitAt [2]int
}

// withLimit returns q with its outermost LIMIT (as ob found it) set to n.
func (ob orderBy) withLimit(q string, n int64) string {
	q = strings.TrimRight(strings.TrimSpace(q), ";")
	return q[:ob.limitAt[0]] + strconv.FormatInt(n, 10) + q[ob.limitAt[1]:]
}

var (
	nullsRe = regexp.MustCompile(`(?i)\s+nulls\s+(first|last)\s*$`)
	dirRe   = regexp.MustCompile(`(?i)\s+(asc|desc)\s*$`)
	identRe = regexp.MustCompile(`^(?:[a-zA-Z_][a-zA-Z0-9_]*\.)?("[^"]+"|[a-zA-Z_][a-zA-Z0-9_]*)$`)
	limitRe = regexp.MustCompile(`(?i)^\s*limit\s+(\d+)`)
)

// topLevel returns the query with string literals, quoted identifiers,
// comments and everything inside parentheses blanked out, keeping offsets.
func topLevel(q string) string {
	b := []byte(q)
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '-' && i+1 < len(b) && b[i+1] == '-':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case c == '\'':
			b[i] = ' '
			for i++; i < len(b) && b[i] != '\''; i++ {
				b[i] = ' '
			}
			if i < len(b) {
				b[i] = ' '
			}
		case c == '(':
			depth++
			b[i] = ' '
		case c == ')':
			depth--
			b[i] = ' '
		case depth > 0:
			b[i] = ' '
		}
	}
	return string(b)
}

var orderByRe = regexp.MustCompile(`(?i)\border\s+by\b`)

// parseOrderBy finds the outermost ORDER BY and maps its keys to output
// columns by ordinal or by (unqualified, case-insensitive) name.
func parseOrderBy(q string, columns []string) orderBy {
	q = strings.TrimRight(strings.TrimSpace(q), ";")
	top := topLevel(q)
	var ob orderBy
	locs := orderByRe.FindAllStringIndex(top, -1)
	if len(locs) == 0 {
		return ob
	}
	ob.present = true
	start := locs[len(locs)-1][1]
	end := len(q)
	if m := regexp.MustCompile(`(?i)\blimit\b`).FindStringIndex(top[start:]); m != nil {
		end = start + m[0]
		if lm := limitRe.FindStringSubmatchIndex(q[end:]); lm != nil {
			ob.limit, _ = strconv.ParseInt(q[end+lm[2]:end+lm[3]], 10, 64)
			ob.limitAt = [2]int{end + lm[2], end + lm[3]}
		}
	}
	// Split the clause on top-level commas (the blanked copy has none inside
	// parentheses or strings).
	clause, clauseTop := q[start:end], top[start:end]
	var items []string
	last := 0
	for i := 0; i < len(clauseTop); i++ {
		if clauseTop[i] == ',' {
			items = append(items, clause[last:i])
			last = i + 1
		}
	}
	items = append(items, clause[last:])
	for _, it := range items {
		it = strings.TrimSpace(it)
		it = nullsRe.ReplaceAllString(it, "")
		it = dirRe.ReplaceAllString(it, "")
		it = strings.TrimSpace(it)
		col := -1
		if n, err := strconv.Atoi(it); err == nil && n >= 1 && n <= len(columns) {
			col = n - 1
		} else if m := identRe.FindStringSubmatch(it); m != nil {
			name := strings.Trim(m[1], `"`)
			for i, c := range columns {
				if strings.EqualFold(c, name) {
					col = i
					break
				}
			}
		}
		if col < 0 {
			ob.keys = nil
			return ob
		}
		ob.keys = append(ob.keys, col)
	}
	return ob
}
