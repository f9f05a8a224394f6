package selector

import (
	"errors"
	"strings"
	"testing"
)

// fuzzMsg is the fixed message fuzzed selectors are evaluated against: a
// few properties of each kind, headers, and the XML body of WebLogic's
// example ("Defining XML Message Selectors Using XML Selector Method").
func fuzzMsg() testMsg {
	return props("a", 1, "b", 2.5, "s", "WebLogic", "t", true, "f", false, "n", nan,
		"salary", 70000, "dept", "eng", "hireyear", 1991).
		withHeader(JMSPriority, 7).withHeader(JMSType, "order").
		withHeader(JMSRedelivered, false).withBody(orderXML)
}

// checkCompileError checks the contract of a failed Compile.
func checkCompileError(t *testing.T, src string, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Compile(%q): error %T %v is not *Error", src, err, err)
	}
	if e.Pos.Offset < 0 || e.Pos.Offset > len(src) || e.Pos.Line < 1 || e.Pos.Column < 1 || e.Msg == "" {
		t.Fatalf("Compile(%q): bad error %+v", src, e)
	}
}

// FuzzCompile compiles arbitrary text and evaluates whatever compiles.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"salary > 64000 and dept in ('eng','qa')",
		"JMSPriority >= 6",
		"a IS NOT NULL",
		"s LIKE '%W_b%' ESCAPE '!'",
	} {
		f.Add(s)
	}
	m := fuzzMsg()
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Compile(src)
		if err != nil {
			checkCompileError(t, src, err)
			return
		}
		if s.String() != src {
			t.Fatalf("String() = %q, want %q", s.String(), src)
		}
		r := s.Eval(m)
		if r != True && r != False && r != Unknown {
			t.Fatalf("Eval(%q) = %d", src, r)
		}
		if s.Matches(m) != (r == True) {
			t.Fatalf("Matches(%q) disagrees with Eval", src)
		}
		if name, ok := s.Target(); ok && (name == "" || !strings.Contains(src, name)) {
			t.Fatalf("Target(%q) = %q", src, name)
		}
	})
}

// FuzzXPathSelector fuzzes the XPath expression and the XML body of
// JMS_BEA_SELECT.
func FuzzXPathSelector(f *testing.F) {
	f.Add("/order/item[2]/name/text()", orderXML)
	f.Add("/order/item[3]/id/text()", "<order><item><id>66</id></item></order>")
	f.Add("count(//a)", "<a><a/></a>")
	m := fuzzMsg()
	f.Fuzz(func(t *testing.T, xpathExpr, body string) {
		src := "JMS_BEA_SELECT('xpath', '" + strings.ReplaceAll(xpathExpr, "'", "''") + "') IS NOT NULL"
		s, err := Compile(src)
		if err != nil {
			checkCompileError(t, src, err)
			return
		}
		mm := m
		mm.body = &body
		r := s.Eval(mm)
		if r == Unknown {
			t.Fatalf("IS NOT NULL gave unknown for %q", src)
		}
		// The value, when there is one, is never empty.
		eq := MustCompile("JMS_BEA_SELECT('xpath', '" + strings.ReplaceAll(xpathExpr, "'", "''") + "') = ''")
		if eq.Eval(mm) == True {
			t.Fatalf("%q selected an empty string instead of NULL", xpathExpr)
		}
	})
}
