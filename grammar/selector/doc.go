// Package selector is Sluice's message selector language: the SQL-92 subset
// of JMS 2.0 §3.8.1.1 that WebLogic JMS accepts, plus WebLogic's XML
// selector function JMS_BEA_SELECT.
//
// # Place in Sluice
//
// The broker's engine calls Compile once when a consumer, durable
// subscriber or queue browser is created with a selector, keeps the
// *Selector, and calls Matches for each candidate message through the
// Message interface, which its own message type implements. Selector.Target
// tells the engine when a topic subscriber's selector has the indexable
// form "identifier IS NOT NULL". The sluice command's "selector check"
// subcommand wraps Compile for people; EBNF feeds the generated grammar
// documentation. Like everything under grammar/, the package imports
// nothing else from Sluice.
//
// The grammar is written as participle (github.com/alecthomas/participle/v2)
// struct types with a small hand-written lexer; Compile parses, checks types
// and turns the tree into closures, so matching a message re-parses nothing,
// uses no reflection and, except for JMS_BEA_SELECT, allocates nothing.
//
// # Interpretations
//
// The JMS specification and the WebLogic text leave some points open or
// are silent on them. This is what Sluice does.
//
// Empty selector. A selector that is empty or only white space selects
// every message (IsEmpty); so does the nil *Selector.
//
// White space is space, tab, form feed, CR and LF.
//
// Identifiers follow Java's identifier rules, approximated with Unicode
// categories: a letter, '_', '$', a currency symbol or a connector
// punctuation, then any of those, digits and combining marks. They are
// case-sensitive. The reserved words NOT AND OR BETWEEN LIKE IN IS ESCAPE
// NULL TRUE FALSE are case-insensitive (ASCII letters only) and are never
// identifiers.
//
// Header fields. JMSDeliveryMode, JMSPriority, JMSMessageID, JMSTimestamp,
// JMSCorrelationID, JMSType, JMSRedelivered and JMSDeliveryTime (exact case)
// are resolved at compile time to Header constants and read with
// Message.Header. Every other identifier, including JMSX… and JMS_…
// properties and header names JMS does not let selectors read
// (JMSDestination, JMSReplyTo, JMSExpiration), is a property read with
// Message.Property. Header fields carry no static type: JMSPriority = 'x'
// compiles, and is unknown.
//
// Literals. Strings are single-quoted; a quote inside one is doubled; there are no
// other escapes. Exact numerics are decimal digits, optionally followed by
// L (leading zeros do not make octal; hexadecimal is rejected). Approximate
// numerics have a decimal point and/or an exponent (7E3, 7., .5, -57.9E2)
// and may end in F or D, which is accepted and ignored: every approximate
// literal is a double. A number ends where its syntax ends, so 1AND is 1
// followed by AND. Signs are unary operators, not part of literals,
// except that a minus directly before an exact literal is folded into it so
// that -9223372036854775808 is in range. A literal outside the range of a
// long or a double is a compile error. TRUE and FALSE are booleans. NULL is
// not a value: it may appear only in IS [NOT] NULL.
//
// Precedence, loosest first: OR; AND; NOT; the predicates (= <> < <= > >=,
// [NOT] BETWEEN, [NOT] IN, [NOT] LIKE, IS [NOT] NULL), which do not chain;
// binary + -; * /; unary + -. Parentheses group anything. Nesting of
// parentheses and prefix operators is limited to 200 levels.
//
// Compile-time type checks. A literal, a comparison, an arithmetic result
// and JMS_BEA_SELECT have a static type; an identifier has none. Where both
// sides' types are known and cannot meet, the selector is rejected: a
// string or boolean with a number, a boolean with a string ('a' > 3,
// TRUE = 1); an ordering comparison (< <= > >=) with a string or boolean
// operand ('a' < name; JMS allows only = and <> on those); arithmetic,
// unary signs and BETWEEN with a string or boolean operand ('x' + 1); IN
// and LIKE on a number or boolean; AND, OR and NOT on a number or string;
// and a selector that is not boolean as a whole (5, 'a', a + 1). A bare
// identifier is a valid selector: true when it names a boolean property
// that is true.
//
// Run-time semantics follow SQL's three-valued logic. A missing property or
// header is NULL. A comparison with NULL, or between values of different
// kinds (a string with a number, a boolean with a string), or an ordering
// comparison of strings or booleans, is unknown. Arithmetic with NULL or a
// non-number is NULL. NOT unknown is unknown; AND and OR use the SQL truth
// tables (FALSE AND unknown is FALSE, TRUE OR unknown is TRUE). A message
// matches only when the selector is TRUE.
//
// Numbers. Integer values (byte, short, int, long) are Long and
// floating-point values (float, double) are Double. When a Long meets a
// Double, the Long is converted to Double. Long arithmetic wraps on
// overflow, and division truncates toward zero, as in Java. Integer
// division by zero yields NULL, so the comparison it feeds is unknown
// (Java would throw; a selector cannot). Double arithmetic follows IEEE 754:
// x / 0.0 is ±Infinity or NaN, and NaN is unequal to everything (NaN <> NaN
// is TRUE) and neither less nor greater than anything.
//
// BETWEEN. a BETWEEN b AND c is a >= b AND a <= c, and a NOT BETWEEN b AND
// c is NOT (a BETWEEN b AND c), both under three-valued logic.
//
// IN takes string literals only, as JMS says. Its left operand is any
// string-valued expression (an identifier or JMS_BEA_SELECT). If that is
// NULL or not a string at run time, the result is unknown, and NOT IN is
// then unknown too.
//
// LIKE takes a string-literal pattern in which % matches any run of
// characters and _ exactly one character; a character is a Unicode code
// point (Java counts UTF-16 units, which differs only outside the Basic
// Multilingual Plane). ESCAPE names one character, which makes a
// following %, _ or itself literal; an escape before any other character,
// or at the end of the pattern, is a compile error. The pattern is compiled
// once and matched without backtracking, in at worst time proportional to
// the subject's length times the pattern's. NULL or a non-string subject
// gives unknown.
//
// IS [NOT] NULL applies to any operand, not only identifiers: a boolean
// sub-expression is NULL when it is unknown, and a literal is never NULL.
//
// JMS_BEA_SELECT('xpath', 'expression') is a string-valued function usable
// wherever a string operand is (=, <>, IN, LIKE, IS NULL). Its name is
// case-sensitive; it takes exactly two string literals, the first of which
// must be 'xpath' in any case. The XPath 1.0 expression is compiled by
// github.com/antchfx/xpath when the selector is compiled; an invalid one is
// a compile error at the position of the literal. For each message the body
// (Message.Body) is parsed with github.com/antchfx/xmlquery, which costs an
// XML parse per evaluation, allocation included. The result is the string
// value of the first selected node in document order (the text of a text
// node, the concatenated text of an element, an attribute's value), or a
// scalar result converted to a string as XPath's string() does. It is NULL,
// as WebLogic documents, when the body is absent or does not parse as XML
// (including a missing end tag, no root element, more than one root, or
// text outside the root), when the expression selects nothing, and when the
// selected value is the empty string (<order></order>). Text that is only
// white space is not empty. A panic inside the XPath library is treated as
// "selects nothing".
//
// Indexed subscribers. Target reports the name when the selector is exactly
// identifier IS NOT NULL, in any case and spacing of the keywords. It does
// not when the identifier is a header field (JMSType, JMSCorrelationID, …,
// also JMSDestination, JMSReplyTo and JMSExpiration), is JMSX… or JMS_…,
// or is a JMS_BEA_SELECT call; nor when anything else is present: another
// clause, NOT, or parentheses — (a IS NOT NULL) is not indexed, following
// WebLogic's "this exact message selector syntax". Such selectors are still
// evaluated normally. An indexed selector is TRUE exactly when the message
// has a property of that name, whatever its value (a boolean property set
// to false counts).
//
// Errors. Every malformed selector yields an *Error with the byte offset,
// line and column (in bytes, from 1) of the problem, formatted as
// "selector:line:column: message". Compile never panics.
package selector
