// Package quote quotes, for error messages, what a client sent: a handle,
// a name, a value. Quoted whole, a 100 MB one cost gigabytes (%q writes
// four bytes for an unprintable byte, and each wrapping of an error copies
// its message), so it is clipped. It imports nothing of flightd, for
// packages of every layer.
package quote

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Clipped quotes s when it is at most max bytes; otherwise its first max
// bytes (cut back to a character boundary), an ellipsis and its length.
func Clipped[T ~string | ~[]byte](s T, max int) string {
	if len(s) <= max {
		return strconv.Quote(string(s))
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(string(s[:n])), len(s))
}
