package selector

import "testing"

// benchMsg is a Message with ten properties held in a slice and looked up
// by linear search, as a simple engine might keep them, and fixed headers.
type benchMsg struct {
	names  []string
	values []Value
}

func newBenchMsg() *benchMsg {
	m := &benchMsg{}
	add := func(n string, v Value) {
		m.names = append(m.names, n)
		m.values = append(m.values, v)
	}
	add("region", Value{Kind: String, Str: "emea"})
	add("product", Value{Kind: String, Str: "WebLogic Server"})
	add("version", Value{Kind: Double, Double: 12.2})
	add("customer", Value{Kind: String, Str: "acme"})
	add("l4", Value{Kind: Long, Long: 4})
	add("l5", Value{Kind: Long, Long: 5})
	add("d6", Value{Kind: Double, Double: 6.5})
	add("s7", Value{Kind: String, Str: "abcabcxyz"})
	add("s8", Value{Kind: String, Str: "h"})
	add("b9", Value{Kind: Bool, Bool: true})
	return m
}

func (m *benchMsg) Header(h Header) Value {
	switch h {
	case JMSPriority:
		return Value{Kind: Long, Long: 7}
	case JMSType:
		return Value{Kind: String, Str: "order"}
	}
	return Value{}
}

func (m *benchMsg) Property(name string) Value {
	for i, n := range m.names {
		if n == name {
			return m.values[i]
		}
	}
	return Value{}
}

func (m *benchMsg) Body() ([]byte, bool) { return nil, false }

const (
	priorityBench = "JMSPriority >= 6"
	// Five clauses, the last ones reached only through AND/OR, reading
	// properties at the middle and end of the slice.
	fiveClauseBench = "region IN ('amer', 'emea', 'apac') AND product LIKE 'WebLogic%' " +
		"AND (version > 12.1 OR customer = 'globex') AND s8 NOT LIKE '%z%'"
)

func benchmarkSelector(b *testing.B, src string) {
	s := MustCompile(src)
	m := newBenchMsg()
	if !s.Matches(m) {
		b.Fatalf("%q does not match the benchmark message", src)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Matches(m)
	}
}

// BenchmarkPriority is JMSPriority >= 6, the example of WebLogic JMS "Managing
// Your Applications", "Defining Message Selectors Using SQL Statements".
func BenchmarkPriority(b *testing.B) { benchmarkSelector(b, priorityBench) }

// BenchmarkFiveClauses is a five-clause AND/OR selector with IN and LIKE
// over a ten-property message.
func BenchmarkFiveClauses(b *testing.B) { benchmarkSelector(b, fiveClauseBench) }

// BenchmarkLikePathological matches '%a%a%a%b' against a long subject of
// a's, the classic exponential case for backtracking matchers.
func BenchmarkLikePathological(b *testing.B) {
	subject := make([]byte, 1000)
	for i := range subject {
		subject[i] = 'a'
	}
	p, err := compileLike("%a%a%a%a%a%b", -1)
	if err != nil {
		b.Fatal(err)
	}
	s := string(subject)
	b.ReportAllocs()
	for b.Loop() {
		if p.match(s) {
			b.Fatal("matched")
		}
	}
}

// BenchmarkXMLSelector is the XML example of WebLogic JMS "Managing Your
// Applications", "Defining XML Message Selectors Using XML Selector Method":
// it parses the body each time.
func BenchmarkXMLSelector(b *testing.B) {
	s := MustCompile("JMS_BEA_SELECT('xpath', '/order/item[2]/name/text()') = 'Mitre Saw'")
	m := props().withBody(orderXML)
	b.ReportAllocs()
	for b.Loop() {
		s.Matches(m)
	}
}

// BenchmarkCompile measures compiling the five-clause selector.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(fiveClauseBench); err != nil {
			b.Fatal(err)
		}
	}
}
