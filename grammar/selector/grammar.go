package selector

import (
	"sync"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The syntax tree. Each type is one production of the grammar; participle
// builds the parser from the struct tags, and the type names become the
// production names in EBNF(). Precedence is encoded by nesting, loosest
// first: OR, AND, NOT, predicates (comparison, BETWEEN, IN, LIKE, IS NULL),
// binary + -, binary * /, unary + -, primaries.

// disjunction is the whole selector: terms joined by OR.
type disjunction struct {
	Pos   lexer.Position
	Terms []*conjunction `parser:"@@ ( 'OR' @@ )*"`
}

// conjunction is factors joined by AND.
type conjunction struct {
	Pos   lexer.Position
	Terms []*condition `parser:"@@ ( 'AND' @@ )*"`
}

// condition is NOT applied to a condition, or a predicate.
type condition struct {
	Pos  lexer.Position
	Not  *condition `parser:"  'NOT' @@"`
	Pred *predicate `parser:"| @@"`
}

// predicate is an arithmetic expression optionally followed by a comparison,
// an IS [NOT] NULL test, or a [NOT] BETWEEN / IN / LIKE test.
type predicate struct {
	Pos        lexer.Position
	Left       *operand    `parser:"@@"`
	Comparison *comparison `parser:"( @@"`
	Null       *nullTest   `parser:"| @@"`
	Test       *test       `parser:"| @@ )?"`
}

// comparison is the right-hand side of = <> < <= > >=.
type comparison struct {
	Pos   lexer.Position
	Op    string   `parser:"@( '=' | '<>' | '<=' | '>=' | '<' | '>' )"`
	Right *operand `parser:"@@"`
}

// nullTest is IS [NOT] NULL.
type nullTest struct {
	Pos lexer.Position
	Not bool `parser:"'IS' @'NOT'? 'NULL'"`
}

// test is [NOT] BETWEEN, [NOT] IN or [NOT] LIKE.
type test struct {
	Pos     lexer.Position
	Not     bool     `parser:"@'NOT'?"`
	Between *between `parser:"( @@"`
	In      *inList  `parser:"| @@"`
	Like    *like    `parser:"| @@ )"`
}

// between is BETWEEN low AND high.
type between struct {
	Pos  lexer.Position
	Low  *operand `parser:"'BETWEEN' @@"`
	High *operand `parser:"'AND' @@"`
}

// inList is IN ('a', 'b', ...): string literals only, as in JMS.
type inList struct {
	Pos   lexer.Position
	Items []*stringLiteral `parser:"'IN' '(' @@ ( ',' @@ )* ')'"`
}

// like is LIKE 'pattern' [ESCAPE 'c'].
type like struct {
	Pos     lexer.Position
	Pattern *stringLiteral `parser:"'LIKE' @@"`
	Escape  *stringLiteral `parser:"( 'ESCAPE' @@ )?"`
}

// stringLiteral is a string literal, quotes and doubled quotes still in place.
type stringLiteral struct {
	Pos lexer.Position
	Raw string `parser:"@String"`
}

// operand is an arithmetic expression: terms joined by binary + and -.
type operand struct {
	Pos  lexer.Position
	Left *term    `parser:"@@"`
	Ops  []*addOp `parser:"@@*"`
}

// addOp is one "+ term" or "- term".
type addOp struct {
	Pos   lexer.Position
	Op    string `parser:"@( '+' | '-' )"`
	Right *term  `parser:"@@"`
}

// term is factors joined by * and /.
type term struct {
	Pos  lexer.Position
	Left *factor  `parser:"@@"`
	Ops  []*mulOp `parser:"@@*"`
}

// mulOp is one "* factor" or "/ factor".
type mulOp struct {
	Pos   lexer.Position
	Op    string  `parser:"@( '*' | '/' )"`
	Right *factor `parser:"@@"`
}

// factor is a unary + or - applied to a factor, or a primary.
type factor struct {
	Pos     lexer.Position
	Sign    string   `parser:"  @( '+' | '-' )"`
	Operand *factor  `parser:"  @@"`
	Primary *primary `parser:"| @@"`
}

// primary is a literal, an identifier or function call, or a parenthesised
// selector. NULL is accepted here only to report a clear error.
type primary struct {
	Pos   lexer.Position
	Paren *disjunction   `parser:"  '(' @@ ')'"`
	Str   *stringLiteral `parser:"| @@"`
	Float *string        `parser:"| @Float"`
	Int   *string        `parser:"| @Int"`
	Bool  *string        `parser:"| @( 'TRUE' | 'FALSE' )"`
	Null  bool           `parser:"| @'NULL'"`
	Ref   *reference     `parser:"| @@"`
}

// reference is an identifier, or a function call when followed by an
// argument list (the only function is JMS_BEA_SELECT).
type reference struct {
	Pos  lexer.Position
	Name string           `parser:"@Ident"`
	Call bool             `parser:"( @'('"`
	Args []*stringLiteral `parser:"  ( @@ ( ',' @@ )* )? ')' )?"`
}

// parser builds the participle parser once, on first use; it is immutable
// and safe for concurrent use afterwards.
var parser = sync.OnceValue(func() *participle.Parser[disjunction] {
	return participle.MustBuild[disjunction](
		participle.Lexer(lexDef{}),
		participle.CaseInsensitive("Keyword"),
		// The grammar is LL(1): once a branch has consumed a token, a
		// failure is final. This makes errors point at the offending token
		// rather than at the start of the construct that was abandoned.
		participle.UseLookahead(0),
	)
})

// EBNF returns the selector grammar in EBNF, as participle derives it from
// the syntax tree. Token classes appear as <keyword>, <ident>, <string>,
// <int>, <float>; keywords match case-insensitively.
func EBNF() string {
	return parser().String()
}

// parse runs the participle parser over src.
func parse(src string) (*disjunction, error) {
	ast, err := parser().ParseString("selector", src)
	if err != nil {
		return nil, fromParser(err)
	}
	return ast, nil
}
