package schedule

import (
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// This file holds the syntax of the schedule language: participle grammar
// types (the struct tags are the grammar), the lexer rules, and the parser
// built from them. The grammar types are a parse tree only; compile.go turns
// them into the bit sets that Next searches.
//
// The type names become the production names of EBNF(), so they follow the BNF
// of WebLogic JMS "Managing Your Applications", "Setting a Scheduled
// Time-to-Deliver Override": millisecond second minute hour dayOfMonth month
// dayOfWeek.

// scheduleList is the whole input: one or more schedules separated by ';'.
type scheduleList struct {
	Schedules []*schedule `parser:"WS? @@ (Semi @@)* WS?"`
}

// schedule is one seven-field schedule.
type schedule struct {
	Pos         lexer.Position
	Millisecond *millisecond `parser:"@@ WS"`
	Second      *second      `parser:"@@ WS"`
	Minute      *minute      `parser:"@@ WS"`
	Hour        *hour        `parser:"@@ WS"`
	DayOfMonth  *dayOfMonth  `parser:"@@ WS"`
	Month       *month       `parser:"@@ WS"`
	DayOfWeek   *dayOfWeek   `parser:"@@"`
}

// field is the syntax shared by all seven fields: "*" or a comma list of
// items. Each field has its own named type below so that the generated EBNF
// names the productions after the fields.
type field struct {
	Pos   lexer.Position
	Any   bool    `parser:"@'*'"`
	Items []*item `parser:"| @@ (',' @@)*"`
}

// The seven fields, in order. They share field's grammar.
type (
	millisecond field
	second      field
	minute      field
	hour        field
	dayOfMonth  field
	month       field
	dayOfWeek   field
)

// item is a value or an inclusive range of values.
type item struct {
	Pos  lexer.Position
	From *value `parser:"@@"`
	To   *value `parser:"('-' @@)?"`
}

// value is a non-negative decimal integer or l/last.
type value struct {
	Pos    lexer.Position
	Number *string `parser:"@Int"`
	Last   *string `parser:"| @Last"`
}

// lexRules are the token definitions, tried in order. Whitespace is a token
// (WS), not elided: it is what separates fields, so "1, 2" is two fields and
// never a list. Word exists only so that a misspelt "last" is reported as one
// word rather than as a stray letter.
func lexRules() []lexer.SimpleRule {
	return []lexer.SimpleRule{
		{Name: "Semi", Pattern: `\s*;\s*`},
		{Name: "WS", Pattern: `\s+`},
		{Name: "Int", Pattern: `[0-9]+`},
		{Name: "Last", Pattern: `(?i)(?:last|l)\b`},
		{Name: "Word", Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
		{Name: "Punct", Pattern: `[*,-]`},
	}
}

// parser is built once, when the package is initialised, and only read after
// that; participle parsers keep no per-parse state, so it is safe for
// concurrent use.
var parser = participle.MustBuild[scheduleList](
	participle.Lexer(lexer.MustSimple(lexRules())),
)

// EBNF returns the grammar of the schedule language in EBNF: the
// productions as participle prints them, followed by the token definitions
// as comments. It is the source of docs/grammar/schedule.ebnf.
func EBNF() string {
	var b strings.Builder
	b.WriteString(parser.String())
	b.WriteString("\n\n(* Tokens (Go regular expressions). <ws> separates fields; *)\n")
	b.WriteString("(* <word> is never valid and exists for error messages. *)\n")
	for _, r := range lexRules() {
		b.WriteString("(* <" + strings.ToLower(r.Name) + "> = " + r.Pattern + " *)\n")
	}
	b.WriteString("\n(* Value ranges: millisecond 0-999, second 0-59, minute 0-59, hour 0-23, *)\n")
	b.WriteString("(* dayOfMonth 1-31, month 1-12, dayOfWeek 1-7 (1 = Sunday, 0 = Sunday too). *)\n")
	return b.String()
}
