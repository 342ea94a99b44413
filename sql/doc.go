// Package sql is flightd's SQL front end: a hand-written lexer and
// recursive-descent parser for a Flink-SQL-compatible dialect over an ANSI
// core, the AST, and a printer.
//
//	text --lexer--> tokens --parser--> []Statement (AST, Pos on every node)
//	                                      |
//	                      Format(node) <--+--> plan.Bind (package plan)
//
// Unquoted identifiers are folded to lower case; quoted ones (`x` or "x")
// keep their case. Placeholders are `?` (numbered left to right) or `$n`;
// NumParams counts them. Errors are *Error values with line:column, and
// Snippet renders the source line with a caret. Format prints SQL that
// parses back to the same tree (tested), fully parenthesizing expressions.
//
// The package imports nothing else of flightd.
package sql
