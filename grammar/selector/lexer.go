package selector

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
)

// Token types of the selector lexer. participle reserves -1 for EOF.
const (
	tokKeyword lexer.TokenType = -(iota + 2)
	tokIdent
	tokString
	tokInt
	tokFloat
	tokPunct
)

// maxDepth bounds parenthesis nesting plus runs of prefix operators (NOT and
// unary signs), so that a hostile selector cannot drive the recursive-descent
// parser and the evaluator arbitrarily deep.
const maxDepth = 200

// isReserved reports whether word is one of the selector's reserved words
// (JMS 2.0 §3.8.1.1): NOT AND OR BETWEEN LIKE IN IS ESCAPE NULL TRUE FALSE,
// in any mix of ASCII case. None of them may be an identifier. Only ASCII
// letters fold, so "LI\u212AE" (with a Kelvin sign) is an identifier.
func isReserved(word string) bool {
	if len(word) < 2 || len(word) > 7 {
		return false
	}
	var buf [7]byte
	for i := 0; i < len(word); i++ {
		c := word[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(word)]) {
	case "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE", "NULL", "TRUE", "FALSE":
		return true
	}
	return false
}

// lexDef is the participle lexer definition. It is hand-written rather than
// built from regular expressions because reserved words are case-insensitive
// while identifiers are not, identifiers may contain '$' (which defeats \b),
// and unterminated strings and malformed numbers deserve their own messages.
type lexDef struct{}

var (
	_ lexer.Definition       = lexDef{}
	_ lexer.StringDefinition = lexDef{}
)

// Symbols names the token types for the grammar's tags and the EBNF.
func (lexDef) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF":     lexer.EOF,
		"Keyword": tokKeyword,
		"Ident":   tokIdent,
		"String":  tokString,
		"Int":     tokInt,
		"Float":   tokFloat,
		"Punct":   tokPunct,
	}
}

// Lex reads all of r and lexes it.
func (d lexDef) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return d.LexString(filename, string(b))
}

// LexString lexes a selector held in a string.
func (lexDef) LexString(filename, src string) (lexer.Lexer, error) {
	return &scanner{src: src, pos: lexer.Position{Filename: filename, Line: 1, Column: 1}}, nil
}

// scanner produces one token per Next call.
type scanner struct {
	src    string
	pos    lexer.Position
	parens int // open parentheses
	prefix int // consecutive prefix operators
	prev   lexer.Token
}

// isSpace reports whether c is selector white space: space, tab, form feed
// and line terminators, as in the JMS (Java) definition.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// isIdentStart approximates Java's Character.isJavaIdentifierStart.
func isIdentStart(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) ||
		unicode.In(r, unicode.Sc, unicode.Pc, unicode.Nl)
}

// isIdentPart approximates Java's Character.isJavaIdentifierPart.
func isIdentPart(r rune) bool {
	return isIdentStart(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') }

func hexRun(s string) int {
	n := 0
	for n < len(s) && isHex(s[n]) {
		n++
	}
	return n
}

// advance moves past n bytes of source, keeping line and column.
func (s *scanner) advance(n int) {
	s.pos.Advance(s.src[s.pos.Offset : s.pos.Offset+n])
}

// Next returns the next token or an *Error.
func (s *scanner) Next() (lexer.Token, error) {
	for s.pos.Offset < len(s.src) && isSpace(s.src[s.pos.Offset]) {
		s.advance(1)
	}
	start := s.pos
	if start.Offset >= len(s.src) {
		return lexer.EOFToken(start), nil
	}
	rest := s.src[start.Offset:]
	typ, n, err := s.scan(rest, start)
	if err != nil {
		return lexer.Token{}, err
	}
	tok := lexer.Token{Type: typ, Value: rest[:n], Pos: start}
	s.advance(n)
	if err := s.depth(tok); err != nil {
		return lexer.Token{}, err
	}
	s.prev = tok
	return tok, nil
}

// scan classifies the token at the head of rest and returns its length.
func (s *scanner) scan(rest string, at lexer.Position) (lexer.TokenType, int, error) {
	c := rest[0]
	switch {
	case c == '\'':
		return s.scanString(rest, at)
	case isDigit(c) || (c == '.' && len(rest) > 1 && isDigit(rest[1])):
		return scanNumber(rest, at)
	}
	switch c {
	case '(', ')', ',', '=', '+', '-', '*', '/':
		return tokPunct, 1, nil
	case '<':
		if len(rest) > 1 && (rest[1] == '>' || rest[1] == '=') {
			return tokPunct, 2, nil
		}
		return tokPunct, 1, nil
	case '>':
		if len(rest) > 1 && rest[1] == '=' {
			return tokPunct, 2, nil
		}
		return tokPunct, 1, nil
	}
	r, size := utf8.DecodeRuneInString(rest)
	if r == utf8.RuneError && size <= 1 {
		return 0, 0, errorAt(at, "invalid UTF-8 in selector")
	}
	if !isIdentStart(r) {
		if c == '"' {
			return 0, 0, errorAt(at, "unexpected '\"': string literals use single quotes")
		}
		if c == '!' && strings.HasPrefix(rest, "!=") {
			return 0, 0, errorAt(at, "unexpected \"!=\": use <> for inequality")
		}
		return 0, 0, errorAt(at, "unexpected character %q", r)
	}
	n := size
	for n < len(rest) {
		r, size := utf8.DecodeRuneInString(rest[n:])
		if r == utf8.RuneError && size <= 1 {
			return 0, 0, errorAt(at, "invalid UTF-8 in identifier")
		}
		if !isIdentPart(r) {
			break
		}
		n += size
	}
	if isReserved(rest[:n]) {
		return tokKeyword, n, nil
	}
	return tokIdent, n, nil
}

// scanString scans a single-quoted literal in which a doubled quote stands for one.
func (s *scanner) scanString(rest string, at lexer.Position) (lexer.TokenType, int, error) {
	for i := 1; i < len(rest); i++ {
		if rest[i] != '\'' {
			continue
		}
		if i+1 < len(rest) && rest[i+1] == '\'' {
			i++
			continue
		}
		if !utf8.ValidString(rest[:i+1]) {
			return 0, 0, errorAt(at, "invalid UTF-8 in string literal")
		}
		return tokString, i + 1, nil
	}
	return 0, 0, errorAt(at, "string literal not terminated (missing closing ')")
}

// scanNumber scans an exact literal (digits, optional L suffix) or an
// approximate one (digits with a decimal point and/or an exponent, optional
// F or D suffix). Signs are unary operators, not part of the literal.
func scanNumber(rest string, at lexer.Position) (lexer.TokenType, int, error) {
	n := 0
	for n < len(rest) && isDigit(rest[n]) {
		n++
	}
	typ := tokInt
	if n < len(rest) && rest[n] == '.' {
		typ = tokFloat
		n++
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
	}
	if n < len(rest) && (rest[n] == 'e' || rest[n] == 'E') {
		typ = tokFloat
		n++
		if n < len(rest) && (rest[n] == '+' || rest[n] == '-') {
			n++
		}
		digits := n
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		if n == digits {
			return 0, 0, errorAt(at, "malformed number %q: exponent has no digits", rest[:n])
		}
	}
	if n < len(rest) {
		switch rest[n] {
		case 'l', 'L':
			if typ == tokInt {
				n++
			}
		case 'f', 'F', 'd', 'D':
			typ = tokFloat
			n++
		}
	}
	// A number ends where its syntax ends, so 1AND is 1 followed by AND, as
	// in Java-based selector parsers. Two cases get a clear message instead
	// of a puzzling syntax error later: hexadecimal (0x1F) and a second
	// decimal point or digit run glued on (1.5.3).
	if n == 1 && rest[0] == '0' && len(rest) > 2 && (rest[1] == 'x' || rest[1] == 'X') && isHex(rest[2]) {
		return 0, 0, errorAt(at, "malformed number %q: hexadecimal literals are not supported", rest[:2+hexRun(rest[2:])])
	}
	if n < len(rest) && (rest[n] == '.' || isDigit(rest[n])) {
		end := n
		for end < len(rest) && (rest[end] == '.' || isDigit(rest[end])) {
			end++
		}
		return 0, 0, errorAt(at, "malformed number %q", rest[:end])
	}
	return typ, n, nil
}

// depth enforces maxDepth.
func (s *scanner) depth(tok lexer.Token) error {
	switch {
	case tok.Type == tokPunct && tok.Value == "(":
		s.parens++
	case tok.Type == tokPunct && tok.Value == ")":
		if s.parens > 0 {
			s.parens--
		}
	}
	if s.isPrefix(tok) {
		s.prefix++
	} else if tok.Type != tokPunct || tok.Value != "(" {
		s.prefix = 0
	}
	if s.parens+s.prefix > maxDepth {
		return errorAt(tok.Pos, "selector nested too deeply (more than %d levels)", maxDepth)
	}
	return nil
}

// isPrefix reports whether tok is a prefix operator: NOT, or a sign that
// follows something that cannot end an operand.
func (s *scanner) isPrefix(tok lexer.Token) bool {
	if tok.Type == tokKeyword {
		return strings.EqualFold(tok.Value, "NOT")
	}
	if tok.Type != tokPunct || (tok.Value != "+" && tok.Value != "-") {
		return false
	}
	switch s.prev.Type {
	case 0, tokPunct:
		return s.prev.Value != ")"
	case tokKeyword:
		return !strings.EqualFold(s.prev.Value, "TRUE") && !strings.EqualFold(s.prev.Value, "FALSE") &&
			!strings.EqualFold(s.prev.Value, "NULL")
	}
	return false
}
