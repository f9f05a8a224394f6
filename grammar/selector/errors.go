package selector

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Position is a place in a selector's source text.
type Position struct {
	// Offset is the byte offset from the start of the source, from 0.
	Offset int
	// Line is the line number, from 1.
	Line int
	// Column is the byte offset within the line, from 1 (as Go's own
	// compiler counts columns).
	Column int
}

// String formats the position as "line:column".
func (p Position) String() string {
	return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column)
}

// Error is the error Compile returns for every malformed selector: a lexical
// or syntax error, a type error between literals, a bad LIKE pattern, an
// invalid XPath expression and so on.
type Error struct {
	// Pos is where in the source the problem was found.
	Pos Position
	// Msg describes the problem, without the position.
	Msg string
}

// Error formats the error as "selector:line:column: message".
func (e *Error) Error() string {
	return "selector:" + e.Pos.String() + ": " + e.Msg
}

func errorAt(pos lexer.Position, format string, args ...any) *Error {
	return &Error{Pos: fromLexer(pos), Msg: fmt.Sprintf(format, args...)}
}

func fromLexer(p lexer.Position) Position {
	return Position{Offset: p.Offset, Line: p.Line, Column: p.Column}
}

// fromParser turns what the participle parser returned into an *Error.
func fromParser(err error) *Error {
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	var perr participle.Error
	if !errors.As(err, &perr) {
		// Not expected from participle with our lexer; keep the text.
		return &Error{Pos: Position{Line: 1, Column: 1}, Msg: err.Error()}
	}
	return &Error{Pos: fromLexer(perr.Position()), Msg: rephrase(perr.Message())}
}

// rephrase rewrites participle's `unexpected token "x" (expected y)` into
// `expected y but found "x"`, and names the end of input plainly.
func rephrase(msg string) string {
	const head = "unexpected token "
	if !strings.HasPrefix(msg, head) {
		return msg
	}
	rest := msg[len(head):]
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return msg
	}
	tok, _ := strconv.Unquote(quoted)
	found := strconv.Quote(tok)
	if tok == "<EOF>" {
		found = "end of input"
	}
	rest = rest[len(quoted):]
	if exp, ok := strings.CutPrefix(rest, " (expected "); ok && strings.HasSuffix(exp, ")") {
		return "expected " + strings.TrimSuffix(exp, ")") + " but found " + found
	}
	return "unexpected " + found
}
