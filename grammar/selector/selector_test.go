package selector

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
)

// evalCase is one selector evaluated against one message.
type evalCase struct {
	name string
	sel  string
	msg  testMsg
	want Result
}

func runEval(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile(tc.sel)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.sel, err)
			}
			if got := s.Eval(tc.msg); got != tc.want {
				t.Errorf("Eval(%q) = %v, want %v", tc.sel, got, tc.want)
			}
			if got := s.Matches(tc.msg); got != (tc.want == True) {
				t.Errorf("Matches(%q) = %v, want %v", tc.sel, got, tc.want == True)
			}
		})
	}
}

// TestSeedExamples covers each SQL example of the WebLogic text.
func TestSeedExamples(t *testing.T) {
	runEval(t, []evalCase{
		{"salary/eng", "salary > 64000 and dept in ('eng','qa')", props("salary", 70000, "dept", "eng"), True},
		{"salary/qa", "salary > 64000 and dept in ('eng','qa')", props("salary", 64001, "dept", "qa"), True},
		{"salary/low", "salary > 64000 and dept in ('eng','qa')", props("salary", 64000, "dept", "eng"), False},
		{"salary/ops", "salary > 64000 and dept in ('eng','qa')", props("salary", 90000, "dept", "ops"), False},
		{"salary/no dept", "salary > 64000 and dept in ('eng','qa')", props("salary", 90000), Unknown},
		{"salary/no dept low", "salary > 64000 and dept in ('eng','qa')", props("salary", 1), False},
		{"salary/double", "salary > 64000 and dept in ('eng','qa')", props("salary", 64000.5, "dept", "qa"), True},

		{"product/prefix", "(product like 'WebLogic%' or product like '%T3')\n       and version > 3.0", props("product", "WebLogic Server", "version", 3.1), True},
		{"product/suffix", "(product like 'WebLogic%' or product like '%T3')\n       and version > 3.0", props("product", "Over T3", "version", 4), True},
		{"product/old", "(product like 'WebLogic%' or product like '%T3')\n       and version > 3.0", props("product", "WebLogic", "version", 3), False},
		{"product/other", "(product like 'WebLogic%' or product like '%T3')\n       and version > 3.0", props("product", "Tuxedo", "version", 9), False},
		{"product/case", "(product like 'WebLogic%' or product like '%T3')\n       and version > 3.0", props("product", "weblogic", "version", 9), False},
		{"product/no version", "(product like 'WebLogic%' or product like '%T3')\n       and version > 3.0", props("product", "WebLogic"), Unknown},

		{"hire/between", "hireyear between 1990 and 1992 \n       or fireyear is not null", props("hireyear", 1991), True},
		{"hire/edge low", "hireyear between 1990 and 1992 \n       or fireyear is not null", props("hireyear", 1990), True},
		{"hire/edge high", "hireyear between 1990 and 1992 \n       or fireyear is not null", props("hireyear", 1992), True},
		{"hire/fired", "hireyear between 1990 and 1992 \n       or fireyear is not null", props("hireyear", 2000, "fireyear", 2001), True},
		{"hire/neither", "hireyear between 1990 and 1992 \n       or fireyear is not null", props("hireyear", 2000), False},
		{"hire/nothing", "hireyear between 1990 and 1992 \n       or fireyear is not null", props(), Unknown},

		{"years/long", "fireyear - hireyear > 4", props("hireyear", 1990, "fireyear", 1995), True},
		{"years/short", "fireyear - hireyear > 4", props("hireyear", 1990, "fireyear", 1994), False},
		{"years/missing", "fireyear - hireyear > 4", props("hireyear", 1990), Unknown},

		{"priority/7", "JMSPriority >= 6", props().withHeader(JMSPriority, 7), True},
		{"priority/6", "JMSPriority >= 6", props().withHeader(JMSPriority, 6), True},
		{"priority/4", "JMSPriority >= 6", props().withHeader(JMSPriority, 4), False},
		{"priority/property is not the header", "JMSPriority >= 6", props("JMSPriority", 9).withHeader(JMSPriority, 4), False},
	})
}

// TestThreeValuedLogic checks the SQL truth tables with TRUE, FALSE and a
// NULL (unknown) operand.
func TestThreeValuedLogic(t *testing.T) {
	m := props("t", true, "f", false) // u is missing: unknown
	runEval(t, []evalCase{
		{"T and T", "t AND t", m, True},
		{"T and F", "t AND f", m, False},
		{"T and U", "t AND u", m, Unknown},
		{"F and U", "f AND u", m, False},
		{"U and F", "u AND f", m, False},
		{"U and U", "u AND u", m, Unknown},
		{"T or U", "t OR u", m, True},
		{"U or T", "u OR t", m, True},
		{"F or U", "f OR u", m, Unknown},
		{"F or F", "f OR f", m, False},
		{"U or U", "u OR u", m, Unknown},
		{"not T", "NOT t", m, False},
		{"not F", "NOT f", m, True},
		{"not U", "NOT u", m, Unknown},
		{"not not U", "NOT NOT u", m, Unknown},
		{"and chain", "t AND t AND u AND f", m, False},
		{"and chain unknown", "t AND t AND u AND t", m, Unknown},
		{"or chain", "f OR u OR f OR t", m, True},
		{"or chain unknown", "f OR u OR f OR f", m, Unknown},
		{"bare true property", "t", m, True},
		{"bare false property", "f", m, False},
		{"bare missing", "u", m, Unknown},
		{"bare non-boolean", "n", props("n", 1), Unknown},
		{"literal TRUE", "TRUE", m, True},
		{"literal false", "false", m, False},
		{"folded", "1 = 1 AND 2 > 1", m, True},
		{"not comparison with null", "NOT x = 1", m, Unknown},
		{"unknown compared", "(u = TRUE) = TRUE", m, Unknown},
	})
}

// TestPrecedence checks NOT > AND > OR and * / over + -.
func TestPrecedence(t *testing.T) {
	m := props("t", true, "f", false, "a", 2, "b", 3, "c", 4)
	runEval(t, []evalCase{
		{"and before or", "t OR f AND f", m, True},
		{"and before or 2", "f AND f OR t", m, True},
		{"parens", "(t OR f) AND f", m, False},
		{"not before and", "NOT f AND t", m, True},
		{"not binds to predicate", "NOT a = 3", m, True},
		{"not before or", "NOT t OR t", m, True},
		{"mul before add", "a + b * c = 14", m, True},
		{"parens arith", "(a + b) * c = 20", m, True},
		{"left assoc sub", "c - b - a = -1", m, True},
		{"left assoc div", "c / a / a = 1", m, True},
		{"unary minus", "-a * b = -6", m, True},
		{"unary double minus", "- -a = 2", m, True},
		{"unary plus", "+a = 2", m, True},
		{"sub of negative", "a - -3 = 5", m, True},
		{"between binds tighter than and", "a BETWEEN 1 AND 3 AND t", m, True},
		{"between arithmetic bounds", "a + 1 BETWEEN b AND c - 1", m, True},
		{"keywords any case", "a Between 1 aNd 3 AnD NoT f Or FaLsE", m, True},
	})
}

// TestComparisons checks comparisons of every kind at run time.
func TestComparisons(t *testing.T) {
	m := props("l", 5, "d", 5.0, "half", 2.5, "s", "abc", "b", true, "n", nan, "big", int64(math.MaxInt64))
	runEval(t, []evalCase{
		{"long = long", "l = 5", m, True},
		{"long <> long", "l <> 5", m, False},
		{"long = double", "l = 5.0", m, True},
		{"double = long", "d = 5", m, True},
		{"long < double", "l < 5.5", m, True},
		{"double > long", "half > 2", m, True},
		{"le", "l <= 5", m, True},
		{"ge", "l >= 6", m, False},
		{"lt", "l < 5", m, False},
		{"gt", "l > 4", m, True},
		{"approx 7E3", "7000 = 7E3", m, True},
		{"approx -57.9E2", "-5790 = -57.9E2", m, True},
		{"approx 7.", "7. = 7", m, True},
		{"approx .5", ".5 = 0.5", m, True},
		{"approx 1.5", "1.5 * 2 = 3", m, True},
		{"exact +62", "+62 = 62", m, True},
		{"exact -957", "-957 < 0", m, True},
		{"long suffix", "123L = 123", m, True},
		{"float suffixes", "1.5F = 1.5D", m, True},
		{"leading zeros", "007 = 7", m, True},
		{"min long", "-9223372036854775808 < 0", m, True},
		{"max long", "big = 9223372036854775807", m, True},
		{"string =", "s = 'abc'", m, True},
		{"string <>", "s <> 'abd'", m, True},
		{"string case", "s = 'ABC'", m, False},
		{"quote escape", "q = 'it''s'", props("q", "it's"), True},
		{"empty string", "e = ''", props("e", ""), True},
		{"string vs number at run time", "s = 5", m, Unknown},
		{"number vs string at run time", "l = 'abc'", m, Unknown},
		{"string ordering at run time", "s < t", props("s", "a", "t", "b"), Unknown},
		{"boolean =", "b = TRUE", m, True},
		{"boolean <>", "b <> FALSE", m, True},
		{"boolean ordering at run time", "b > x", props("b", true, "x", false), Unknown},
		{"boolean vs number at run time", "b = 1", m, Unknown},
		{"boolean vs string at run time", "b = s", m, Unknown},
		{"null =", "x = 1", m, Unknown},
		{"null <>", "x <> 1", m, Unknown},
		{"null = null", "x = y", m, Unknown},
		{"NaN =", "n = n", m, False},
		{"NaN <>", "n <> n", m, True},
		{"NaN <", "n < 1", m, False},
		{"NaN >=", "n >= 1", m, False},
		{"header string", "JMSType = 'car'", props().withHeader(JMSType, "car"), True},
		{"header null", "JMSCorrelationID = 'x'", props(), Unknown},
		{"header mode", "JMSDeliveryMode = 'PERSISTENT'", props().withHeader(JMSDeliveryMode, "PERSISTENT"), True},
		{"header bool", "JMSRedelivered", props().withHeader(JMSRedelivered, true), True},
		{"header time", "JMSDeliveryTime > JMSTimestamp", props().withHeader(JMSDeliveryTime, 20).withHeader(JMSTimestamp, 10), True},
		{"header id", "JMSMessageID = 'ID:1'", props().withHeader(JMSMessageID, "ID:1"), True},
		{"header type vs number is unknown", "JMSType = 3", props().withHeader(JMSType, "car"), Unknown},
		{"JMSX is a property", "JMSXDeliveryCount > 1", props("JMSXDeliveryCount", 2), True},
		{"JMS_ is a property", "JMS_BEA_State = 'x'", props("JMS_BEA_State", "x"), True},
		{"header names are case-sensitive", "jmspriority = 1", props("jmspriority", 1).withHeader(JMSPriority, 5), True},
		{"identifiers are case-sensitive", "Dept = 'x'", props("dept", "x"), Unknown},
		{"dollar and underscore", "$a_1 = _b$", props("$a_1", 1, "_b$", 1), True},
		{"unicode identifier", "größe = 3", props("größe", 3), True},
		{"keyword prefix identifier", "INx = 1 AND ORDER = 2 AND NOTE = 3 AND IN$ = 4", props("INx", 1, "ORDER", 2, "NOTE", 3, "IN$", 4), True},
	})
}

// TestArithmetic checks promotion, NULL propagation and division.
func TestArithmetic(t *testing.T) {
	m := props("a", 7, "b", 2, "z", 0, "d", 2.0, "s", "x", "max", int64(math.MaxInt64), "min", int64(math.MinInt64))
	runEval(t, []evalCase{
		{"long div truncates", "a / b = 3", m, True},
		{"negative div truncates toward zero", "-a / b = -3", m, True},
		{"double div", "a / d = 3.5", m, True},
		{"promotion", "a * 1.5 = 10.5", m, True},
		{"long div by zero is null", "a / z IS NULL", m, True},
		{"long div by zero compares unknown", "a / z > 0", m, Unknown},
		{"literal div by zero is null", "1 / 0 IS NULL", m, True},
		{"double div by zero is inf", "a / 0.0 > 1E308", m, True},
		{"double zero by zero is NaN", "0.0 / 0.0 <> 0.0 / 0.0", m, True},
		{"null arithmetic", "x + 1 IS NULL", m, True},
		{"null arithmetic compares unknown", "x + 1 = 1", m, Unknown},
		{"string arithmetic at run time", "s + 1 IS NULL", m, True},
		{"unary minus of string is null", "-s IS NULL", m, True},
		{"unary plus of string is null", "+s IS NULL", m, True},
		{"overflow wraps", "max + 1 = min", m, True},
		{"min / -1", "min / -1 = min", m, True},
	})
}

// TestBetweenInLikeNull covers the remaining predicates.
func TestBetweenInLikeNull(t *testing.T) {
	m := props("n", 5, "d", 5.5, "s", "WebLogic", "b", true)
	runEval(t, []evalCase{
		{"between", "n BETWEEN 1 AND 10", m, True},
		{"between double", "d BETWEEN 5 AND 6", m, True},
		{"between outside", "n BETWEEN 6 AND 10", m, False},
		{"between reversed bounds", "n BETWEEN 10 AND 1", m, False},
		{"not between", "n NOT BETWEEN 6 AND 10", m, True},
		{"not between inside", "n NOT BETWEEN 1 AND 10", m, False},
		{"between null", "x BETWEEN 1 AND 10", m, Unknown},
		{"not between null", "x NOT BETWEEN 1 AND 10", m, Unknown},
		{"between null bound but false", "n BETWEEN x AND 3", m, False},
		{"between null bound unknown", "n BETWEEN x AND 10", m, Unknown},
		{"between string at run time", "s BETWEEN 1 AND 2", m, Unknown},
		{"in", "s IN ('a', 'WebLogic')", m, True},
		{"in single", "s IN ('WebLogic')", m, True},
		{"in absent", "s IN ('a', 'b')", m, False},
		{"not in", "s NOT IN ('a', 'b')", m, True},
		{"not in present", "s NOT IN ('WebLogic')", m, False},
		{"in null", "x IN ('a')", m, Unknown},
		{"not in null", "x NOT IN ('a')", m, Unknown},
		{"in non-string at run time", "n IN ('5')", m, Unknown},
		{"in large list", "s IN ('a','b','c','d','e','f','g','h','i','WebLogic')", m, True},
		{"in large list absent", "s IN ('a','b','c','d','e','f','g','h','i','j')", m, False},
		{"not in large list", "s NOT IN ('a','b','c','d','e','f','g','h','i','j')", m, True},
		{"in quote", "q IN ('it''s')", props("q", "it's"), True},
		{"like", "s LIKE 'Web%'", m, True},
		{"like underscore", "s LIKE 'W_bLogic'", m, True},
		{"not like", "s NOT LIKE '%x%'", m, True},
		{"like null", "x LIKE 'a'", m, Unknown},
		{"not like null", "x NOT LIKE 'a'", m, Unknown},
		{"like non-string", "n LIKE '5'", m, Unknown},
		{"like escape", "p LIKE '100\\%' ESCAPE '\\'", props("p", "100%"), True},
		{"like escape no match", "p LIKE '100\\%' ESCAPE '\\'", props("p", "1000"), False},
		{"like escape underscore", "p LIKE 'a!_b' ESCAPE '!'", props("p", "a_b"), True},
		{"like escape underscore literal", "p LIKE 'a!_b' ESCAPE '!'", props("p", "axb"), False},
		{"is null", "x IS NULL", m, True},
		{"is null present", "n IS NULL", m, False},
		{"is not null", "n IS NOT NULL", m, True},
		{"is not null absent", "x IS NOT NULL", m, False},
		{"is null any case", "x iS nUlL", m, True},
		{"is not null of false boolean", "f IS NOT NULL", props("f", false), True},
		{"is null of unknown condition", "(x = 1) IS NULL", m, True},
		{"is null of known condition", "(n = 1) IS NULL", m, False},
		{"is null of literal", "1 IS NULL", m, False},
		{"not is null", "NOT x IS NULL", m, False},
	})
}

// TestEmptySelector checks the select-everything cases.
func TestEmptySelector(t *testing.T) {
	for _, src := range []string{"", " ", "\t\r\n\f "} {
		if !IsEmpty(src) {
			t.Errorf("IsEmpty(%q) = false", src)
		}
		s, err := Compile(src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", src, err)
		}
		if s.Eval(props()) != True || !s.Matches(props()) {
			t.Errorf("empty selector %q does not select everything", src)
		}
		if s.String() != src {
			t.Errorf("String() = %q, want %q", s.String(), src)
		}
		if _, ok := s.Target(); ok {
			t.Errorf("empty selector %q is a target", src)
		}
	}
	if IsEmpty(" a ") {
		t.Error(`IsEmpty(" a ") = true`)
	}
	var nilSel *Selector
	if !nilSel.Matches(props()) || nilSel.String() != "" {
		t.Error("nil selector should select everything and print as empty")
	}
	if _, ok := nilSel.Target(); ok {
		t.Error("nil selector is a target")
	}
}

// TestString checks that String returns the source verbatim.
func TestString(t *testing.T) {
	src := "  a = 1\n AND  b LIKE 'x%' "
	if got := MustCompile(src).String(); got != src {
		t.Errorf("String() = %q, want %q", got, src)
	}
	if got := True.String() + False.String() + Unknown.String(); got != "truefalseunknown" {
		t.Errorf("Result strings = %q", got)
	}
}

// TestTarget checks recognition of the indexable form.
func TestTarget(t *testing.T) {
	cases := []struct {
		sel  string
		name string
		ok   bool
	}{
		{"Wilma IS NOT NULL", "Wilma", true},
		{"Fred is not null", "Fred", true},
		{"  user_42\n\tIs\tNoT   NuLl  ", "user_42", true},
		{"$x IS NOT NULL", "$x", true},
		{"JMSType IS NOT NULL", "", false},
		{"JMSCorrelationID IS NOT NULL", "", false},
		{"JMSPriority IS NOT NULL", "", false},
		{"JMSDestination IS NOT NULL", "", false},
		{"JMSReplyTo IS NOT NULL", "", false},
		{"JMSExpiration IS NOT NULL", "", false},
		{"JMSXGroupID IS NOT NULL", "", false},
		{"JMS_BEA_State IS NOT NULL", "", false},
		{"Wilma IS NULL", "", false},
		{"NOT Wilma IS NOT NULL", "", false},
		{"(Wilma IS NOT NULL)", "", false},
		{"(Wilma) IS NOT NULL", "", false},
		{"-Wilma IS NOT NULL", "", false},
		{"Wilma + 1 IS NOT NULL", "", false},
		{"Wilma IS NOT NULL AND b = 1", "", false},
		{"Wilma IS NOT NULL OR Fred IS NOT NULL", "", false},
		{"'Wilma' IS NOT NULL", "", false},
		{"JMS_BEA_SELECT('xpath', '/a') IS NOT NULL", "", false},
		{"Wilma = 1", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.sel, func(t *testing.T) {
			s := MustCompile(tc.sel)
			name, ok := s.Target()
			if name != tc.name || ok != tc.ok {
				t.Errorf("Target() = %q, %v; want %q, %v", name, ok, tc.name, tc.ok)
			}
		})
	}
	// An indexed selector still evaluates normally.
	s := MustCompile("Wilma IS NOT NULL")
	if !s.Matches(props("Wilma", true)) || !s.Matches(props("Wilma", false)) || s.Matches(props("Fred", true)) {
		t.Error("Wilma IS NOT NULL evaluates wrongly")
	}
}

// TestCompileErrors checks that malformed selectors fail with an *Error at
// the right place.
func TestCompileErrors(t *testing.T) {
	cases := []struct {
		sel    string
		offset int
		line   int
		col    int
		msg    string
	}{
		// Syntax.
		{"(a = 1 AND b", 12, 1, 13, `expected ")" but found end of input`},
		{"a = ", 4, 1, 5, "but found end of input"},
		{"a b", 2, 1, 3, `unexpected "b"`},
		{")", 0, 1, 1, `unexpected ")"`},
		{"a = 1 AND", 9, 1, 10, "end of input"},
		{"a IN ()", 6, 1, 7, `found ")"`},
		{"a IN (1, 2)", 6, 1, 7, `found "1"`},
		{"a IN ('x', b)", 11, 1, 12, `found "b"`},
		{"a LIKE b", 7, 1, 8, `found "b"`},
		{"a LIKE 'x' ESCAPE", 17, 1, 18, "end of input"},
		{"a BETWEEN 1", 11, 1, 12, `expected "AND"`},
		{"a NOT 5", 6, 1, 7, `found "5"`},
		{"a IS 5", 5, 1, 6, `found "5"`},
		{"a = 1 = 2", 6, 1, 7, `unexpected "="`},
		{"a == 1", 3, 1, 4, `"="`},
		{"f(", 2, 1, 3, `expected ")"`},
		{"and = 1", 0, 1, 1, `unexpected "and"`},
		{"a = true AND null = 1", 13, 1, 14, "NULL is not a value"},
		{"a = NULL", 4, 1, 5, "NULL is not a value"},
		{"a IN ('x')\n  AND (b = 1", 23, 2, 13, `expected ")"`},
		// Lexical.
		{"a = 'abc", 4, 1, 5, "string literal not terminated"},
		{`a = "abc"`, 4, 1, 5, "single quotes"},
		{"a != 1", 2, 1, 3, "use <> for inequality"},
		{"a = 1 # b", 6, 1, 7, "unexpected character '#'"},
		{"a = 0x1F", 4, 1, 5, "hexadecimal"},
		{"a = 1.5.3", 4, 1, 5, "malformed number"},
		{"a = 7E", 4, 1, 5, "exponent has no digits"},
		{"a = 12abc", 6, 1, 7, `unexpected "abc"`},
		{"a = 1.5e3.2", 4, 1, 5, "malformed number"},
		{"a = '\xff'", 4, 1, 5, "invalid UTF-8"},
		{"a\xff = 1", 0, 1, 1, "invalid UTF-8"},
		{"\xff", 0, 1, 1, "invalid UTF-8"},
		// Literal ranges.
		{"a = 9223372036854775808", 4, 1, 5, "out of range"},
		{"a = 1E999", 4, 1, 5, "out of range"},
		// Types.
		{"'a' > 3", 4, 1, 5, "cannot compare a string with a number"},
		{"TRUE < 1", 5, 1, 6, "cannot compare a boolean with a number"},
		{"'x' + 1 = a", 4, 1, 5, "operator + needs numbers, but its left operand is a string"},
		{"a = 1 + TRUE", 6, 1, 7, "right operand is a boolean"},
		{"'a' = 1", 4, 1, 5, "cannot compare a string with a number"},
		{"TRUE = 'a'", 5, 1, 6, "cannot compare a boolean with a string"},
		{"a < 'x'", 2, 1, 3, "operator < does not apply to a string"},
		{"TRUE >= a", 5, 1, 6, "operator >= does not apply to a boolean"},
		{"-'x' = a", 1, 1, 2, "unary - needs numeric operands, but this is a string"},
		{"'x' BETWEEN 1 AND 2", 0, 1, 1, "BETWEEN needs numeric operands"},
		{"a BETWEEN 'x' AND 2", 10, 1, 11, "BETWEEN needs numeric operands"},
		{"5 IN ('a')", 0, 1, 1, "IN needs a string operand"},
		{"a + 1 LIKE 'x'", 0, 1, 1, "LIKE needs a string operand"},
		{"a AND 5", 6, 1, 7, "AND needs boolean operands"},
		{"'x' OR a", 0, 1, 1, "OR needs boolean operands"},
		{"NOT 1", 4, 1, 5, "NOT needs boolean operands"},
		{"5", 0, 1, 1, "must be a boolean expression"},
		{"'a'", 0, 1, 1, "must be a boolean expression"},
		{"a + 1", 0, 1, 1, "must be a boolean expression"},
		{"JMS_BEA_SELECT('xpath', '/a')", 0, 1, 1, "must be a boolean expression"},
		{"(1 + 2)", 0, 1, 1, "must be a boolean expression"},
		// LIKE.
		{"a LIKE 'x' ESCAPE 'ab'", 18, 1, 19, "exactly one character"},
		{"a LIKE 'x' ESCAPE ''", 18, 1, 19, "exactly one character"},
		{"a LIKE 'x!' ESCAPE '!'", 7, 1, 8, "ends with the escape character"},
		{"a LIKE 'x!y' ESCAPE '!'", 7, 1, 8, "must be followed by"},
		// Functions.
		{"foo('a') = 'b'", 0, 1, 1, "unknown function foo"},
		{"jms_bea_select('xpath', '/a') = 'b'", 0, 1, 1, "unknown function"},
		{"JMS_BEA_SELECT('xpath') = 'b'", 0, 1, 1, "takes 2 arguments"},
		{"JMS_BEA_SELECT() = 'b'", 0, 1, 1, "takes 2 arguments"},
		{"JMS_BEA_SELECT('xquery', '/a') = 'b'", 15, 1, 16, "only the 'xpath' syntax type"},
		{"JMS_BEA_SELECT('xpath', '/a/[') = 'b'", 24, 1, 25, "invalid XPath expression"},
		{"JMS_BEA_SELECT('xpath', '') = 'b'", 24, 1, 25, "invalid XPath expression"},
		{"JMS_BEA_SELECT('xpath', a) = 'b'", 24, 1, 25, `found "a"`},
		{"JMS_BEA_SELECT('xpath', '/a') + 1 = 2", 30, 1, 31, "left operand is a string"},
		{"JMS_BEA_SELECT('xpath', '/a') > 'b'", 30, 1, 31, "does not apply to a string"},
		{"JMS_BEA_SELECT('xpath', '/a') = 1", 30, 1, 31, "cannot compare a string with a number"},
		// Depth.
		{strings.Repeat("(", 300) + "a" + strings.Repeat(")", 300), 200, 1, 201, "nested too deeply"},
		{strings.Repeat("NOT ", 300) + "a", 800, 1, 801, "nested too deeply"},
		{"a = " + strings.Repeat("- ", 300) + "1", 404, 1, 405, "nested too deeply"},
	}
	for _, tc := range cases {
		name := tc.sel
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			s, err := Compile(tc.sel)
			if err == nil {
				t.Fatalf("Compile(%q) succeeded: %v", tc.sel, s)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Compile(%q) error %T %v is not *Error", tc.sel, err, err)
			}
			if e.Pos.Offset != tc.offset || e.Pos.Line != tc.line || e.Pos.Column != tc.col {
				t.Errorf("Compile(%q) error at %d (%d:%d), want %d (%d:%d): %v",
					tc.sel, e.Pos.Offset, e.Pos.Line, e.Pos.Column, tc.offset, tc.line, tc.col, err)
			}
			if !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("Compile(%q) message %q does not contain %q", tc.sel, e.Msg, tc.msg)
			}
			want := "selector:" + e.Pos.String() + ": " + e.Msg
			if err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

// TestMustCompilePanics checks MustCompile on a bad selector.
func TestMustCompilePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustCompile did not panic")
		}
	}()
	MustCompile("a =")
}

// TestValidSyntax lists selectors that must compile.
func TestValidSyntax(t *testing.T) {
	for _, src := range []string{
		"a",
		"a = b",
		"((a))",
		"(a + 1) * 2 > b",
		"a IS NULL OR b IS NOT NULL",
		"a LIKE '%%' ESCAPE '%'",
		"a LIKE '' ",
		"a NOT LIKE '_'",
		"a IN ('')",
		"a BETWEEN -1 AND +1",
		"a BETWEEN b AND c",
		"TRUE OR a",
		"(a = 1) = (b = 2)",
		"(a = 1) <> TRUE",
		"- - - 5 < a",
		"a<>b", "a<b", "a<=b", "a>b", "a>=b",
		"a=1AND b=2",
		"JMS_BEA_SELECT('XPath', '/order/item[@id=''x'']/name') IN ('a','b')",
		"JMS_BEA_SELECT('xpath', 'count(/a/b)') = '2'",
		"x = 1 -- 1", // no SQL comments in JMS: this is 1 - (-1)
	} {
		if _, err := Compile(src); err != nil {
			t.Errorf("Compile(%q): %v", src, err)
		}
	}
}

// TestEBNF checks that the grammar text comes from the parser.
func TestEBNF(t *testing.T) {
	g := EBNF()
	for _, want := range []string{
		`Disjunction = Conjunction ("OR" Conjunction)* .`,
		`NullTest = "IS" "NOT"? "NULL" .`,
		`Like = "LIKE" StringLiteral ("ESCAPE" StringLiteral)? .`,
		`Between = "BETWEEN" Operand "AND" Operand .`,
	} {
		if !strings.Contains(g, want) {
			t.Errorf("EBNF() lacks %q:\n%s", want, g)
		}
	}
}

// TestNoAllocs proves the hot path allocates nothing.
func TestNoAllocs(t *testing.T) {
	m := newBenchMsg()
	for _, src := range []string{priorityBench, fiveClauseBench,
		"NOT (s8 NOT IN ('a','b','c','d','e','f','g','h','i')) OR s8 IS NULL",
		"l4 BETWEEN 1 AND l5 * 2 OR d6 / l4 > 1.5 OR -l4 <> 3",
		"s7 LIKE '%a_c%x%' OR s7 LIKE 'a__%' OR s7 = 'x'",
		"b9 AND missing IS NULL",
	} {
		s := MustCompile(src)
		s.Eval(m)
		if n := testing.AllocsPerRun(1000, func() { s.Eval(m) }); n != 0 {
			t.Errorf("Eval(%q) allocates %v times per run", src, n)
		}
	}
}

// TestConcurrentUse evaluates one selector from many goroutines (run with
// -race to make this meaningful), XML selector included.
func TestConcurrentUse(t *testing.T) {
	s := MustCompile("JMS_BEA_SELECT('xpath', '/order/item[2]/name/text()') = 'Mitre Saw' AND n > 1")
	m := props("n", 2).withBody(orderXML)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if !s.Matches(m) {
					t.Error("concurrent Matches = false")
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestHeaderNames checks HeaderNamed and Header.String against each other.
func TestHeaderNames(t *testing.T) {
	for _, h := range Headers() {
		got, ok := HeaderNamed(h.String())
		if !ok || got != h {
			t.Errorf("HeaderNamed(%q) = %v, %v", h.String(), got, ok)
		}
	}
	for _, name := range []string{"jmspriority", "JMSX", "JMSDestination", "JMS", "x", ""} {
		if h, ok := HeaderNamed(name); ok {
			t.Errorf("HeaderNamed(%q) = %v", name, h)
		}
	}
	if s := Header(99).String(); s != "Header(99)" {
		t.Errorf("Header(99).String() = %q", s)
	}
}
