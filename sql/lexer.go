package sql

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tQuotedIdent
	tString
	tNumber
	tParam       // ? or $n
	tHint        // /*+ ... */ (text is the body)
	tPunct       // operators and punctuation
	tBadUnclosed // lexing error; text is the message
)

type token struct {
	kind tokKind
	text string // identifier (folded for unquoted), string value, number text, punct
	raw  string // the identifier exactly as written (unquoted), for keyword checks
	pos  Pos
}

// lexer turns SQL text into tokens. It never fails: malformed input yields a
// tBadUnclosed token that the parser reports with its position.
type lexer struct {
	src  string
	off  int
	line int
	col  int
}

func newLexer(src string) *lexer { return &lexer{src: src, line: 1, col: 1} }

func (l *lexer) pos() Pos { return Pos{Offset: l.off, Line: l.line, Col: l.col} }

func (l *lexer) advance(n int) {
	for i := 0; i < n && l.off < len(l.src); i++ {
		if l.src[l.off] == '\n' {
			l.line++
			l.col = 1
		} else if l.src[l.off]&0xC0 != 0x80 {
			l.col++
		}
		l.off++
	}
}

func (l *lexer) peekByte(k int) byte {
	if l.off+k < len(l.src) {
		return l.src[l.off+k]
	}
	return 0
}

// skipSpace skips white space and comments other than hints.
func (l *lexer) skipSpace() *token {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.advance(1)
		case c == '-' && l.peekByte(1) == '-':
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance(1)
			}
		case c == '/' && l.peekByte(1) == '*' && l.peekByte(2) != '+':
			start := l.pos()
			end := strings.Index(l.src[l.off+2:], "*/")
			if end < 0 {
				l.advance(len(l.src) - l.off)
				return &token{kind: tBadUnclosed, text: "unterminated comment", pos: start}
			}
			l.advance(end + 4)
		default:
			return nil
		}
	}
	return nil
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func (l *lexer) next() token {
	if bad := l.skipSpace(); bad != nil {
		return *bad
	}
	start := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tEOF, pos: start}
	}
	c := l.src[l.off]
	r, size := utf8.DecodeRuneInString(l.src[l.off:])
	switch {
	case isIdentStart(r):
		b := l.off
		l.advance(size)
		for l.off < len(l.src) {
			r, size = utf8.DecodeRuneInString(l.src[l.off:])
			if !isIdentPart(r) {
				break
			}
			l.advance(size)
		}
		raw := l.src[b:l.off]
		return token{kind: tIdent, text: strings.ToLower(raw), raw: raw, pos: start}
	case c >= '0' && c <= '9' || c == '.' && l.peekByte(1) >= '0' && l.peekByte(1) <= '9':
		return l.number(start)
	case c == '\'':
		s, ok := l.quoted('\'')
		if !ok {
			return token{kind: tBadUnclosed, text: "unterminated string literal", pos: start}
		}
		return token{kind: tString, text: s, pos: start}
	case c == '"' || c == '`':
		s, ok := l.quoted(c)
		if !ok {
			return token{kind: tBadUnclosed, text: "unterminated quoted identifier", pos: start}
		}
		return token{kind: tQuotedIdent, text: s, raw: s, pos: start}
	case c == '?':
		l.advance(1)
		return token{kind: tParam, text: "?", pos: start}
	case c == '$' && l.peekByte(1) >= '0' && l.peekByte(1) <= '9':
		b := l.off
		l.advance(1)
		for l.off < len(l.src) && l.src[l.off] >= '0' && l.src[l.off] <= '9' {
			l.advance(1)
		}
		return token{kind: tParam, text: l.src[b:l.off], pos: start}
	case c == '/' && l.peekByte(1) == '*' && l.peekByte(2) == '+':
		end := strings.Index(l.src[l.off+3:], "*/")
		if end < 0 {
			l.advance(len(l.src) - l.off)
			return token{kind: tBadUnclosed, text: "unterminated hint", pos: start}
		}
		body := l.src[l.off+3 : l.off+3+end]
		l.advance(end + 5)
		return token{kind: tHint, text: body, pos: start}
	}
	for _, op := range []string{"<>", "<=", ">=", "!=", "||", "=>", "::"} {
		if strings.HasPrefix(l.src[l.off:], op) {
			l.advance(2)
			return token{kind: tPunct, text: op, pos: start}
		}
	}
	if strings.ContainsRune("(),.;=<>+-*/%[]", rune(c)) {
		l.advance(1)
		return token{kind: tPunct, text: string(c), pos: start}
	}
	l.advance(size)
	return token{kind: tBadUnclosed, text: "unexpected character " + quoteRune(r), pos: start}
}

func quoteRune(r rune) string {
	if r == utf8.RuneError {
		return "(invalid UTF-8)"
	}
	// Escaped unless printable: a NUL, an ESC sequence or a bidi override
	// went into error messages (and the terminals and logs showing them) raw.
	return strconv.QuoteRune(r)
}

func (l *lexer) number(start Pos) token {
	b := l.off
	digits := func() {
		for l.off < len(l.src) && l.src[l.off] >= '0' && l.src[l.off] <= '9' {
			l.advance(1)
		}
	}
	digits()
	if l.peekByte(0) == '.' {
		l.advance(1)
		digits()
	}
	if c := l.peekByte(0); c == 'e' || c == 'E' {
		n := 1
		if s := l.peekByte(1); s == '+' || s == '-' {
			n = 2
		}
		if d := l.peekByte(n); d >= '0' && d <= '9' {
			l.advance(n)
			digits()
		}
	}
	return token{kind: tNumber, text: l.src[b:l.off], pos: start}
}

// quoted reads a quote-delimited token; a doubled quote stands for itself.
func (l *lexer) quoted(q byte) (string, bool) {
	l.advance(1)
	var sb strings.Builder
	for l.off < len(l.src) {
		c := l.src[l.off]
		if c == q {
			if l.peekByte(1) == q {
				sb.WriteByte(q)
				l.advance(2)
				continue
			}
			l.advance(1)
			return sb.String(), true
		}
		sb.WriteByte(c)
		l.advance(1)
	}
	return "", false
}
