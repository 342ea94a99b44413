package sql

import (
	"fmt"
	"strings"
)

// Error is a syntax (or, from the binder, semantic) error at a position in
// the SQL text.
type Error struct {
	Line, Col, Offset int
	Msg               string
}

func (e *Error) Error() string { return fmt.Sprintf("line %d:%d: %s", e.Line, e.Col, e.Msg) }

// Snippet renders the error with the offending source line and a caret under
// the column, for terminals and client messages.
func (e *Error) Snippet(src string) string {
	lines := strings.Split(src, "\n")
	if e.Line < 1 || e.Line > len(lines) {
		return e.Error()
	}
	line := strings.TrimRight(lines[e.Line-1], "\r")
	var caret strings.Builder
	col := 1
	for _, r := range line {
		if col >= e.Col {
			break
		}
		if r == '\t' {
			caret.WriteByte('\t')
		} else {
			caret.WriteByte(' ')
		}
		col++
	}
	caret.WriteByte('^')
	return e.Error() + "\n" + line + "\n" + caret.String()
}

// Errorf returns an *Error at pos. The binder uses it too, so that every
// user-facing error names its position.
func Errorf(pos Pos, format string, args ...any) *Error {
	return &Error{Line: pos.Line, Col: pos.Col, Offset: pos.Offset, Msg: fmt.Sprintf(format, args...)}
}
