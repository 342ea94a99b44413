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
	// SQLState is the SQLSTATE class the error belongs to when it is more
	// specific than a semantic error: StateSyntax, StateTooComplex, or
	// StateTooLarge.
	SQLState string
}

// SQLSTATE codes of the errors the parser reports.
const (
	StateSyntax     = "42601" // syntax_error
	StateTooComplex = "54001" // statement_too_complex
	StateTooLarge   = "54000" // program_limit_exceeded: too many tokens
)

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

// StateErrorf is Errorf for an error of SQLSTATE state.
func StateErrorf(state string, pos Pos, format string, args ...any) *Error {
	e := Errorf(pos, format, args...)
	e.SQLState = state
	return e
}

// CheckSize refuses statements longer than maxBytes or with more than
// maxTokens tokens (zero: no bound) before they are parsed: the parser
// holds every token at once and the planner's work grows with them, so
// these bound what one statement may cost before it runs. Counting lexes
// the text once without keeping the tokens; tokens is the count (up to
// the first bad token), for estimates of what the statement will hold.
func CheckSize(src string, maxBytes, maxTokens int) (tokens int, err error) {
	if maxBytes > 0 && len(src) > maxBytes {
		return 0, StateErrorf(StateTooLarge, Pos{Line: 1, Col: 1}, "statement too large: %d bytes, more than the limit of %d", len(src), maxBytes)
	}
	lx := newLexer(src)
	for n := 0; ; n++ {
		t := lx.next()
		if t.kind == tEOF || t.kind == tBadUnclosed {
			return n, nil // the parser reports a bad token with its position
		}
		if maxTokens > 0 && n == maxTokens {
			return n, StateErrorf(StateTooLarge, t.pos, "statement too large: more than %d terms (names, literals, operators)", maxTokens)
		}
	}
}
