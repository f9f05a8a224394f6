package selector

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/antchfx/xmlquery"
	"github.com/antchfx/xpath"
)

// xmlSelectName is WebLogic's XML selector function, JMS_BEA_SELECT(type,
// expression). The name is case-sensitive, like every identifier.
const xmlSelectName = "JMS_BEA_SELECT"

// buildCall compiles a function call. JMS_BEA_SELECT is the only function.
func buildCall(r *reference) (expr, error) {
	if r.Name != xmlSelectName {
		return expr{}, errorAt(r.Pos, "unknown function %s (the only function is %s)", r.Name, xmlSelectName)
	}
	if len(r.Args) != 2 {
		return expr{}, errorAt(r.Pos, "%s takes 2 arguments ('xpath', expression), not %d", xmlSelectName, len(r.Args))
	}
	if kind := unquote(r.Args[0].Raw); !strings.EqualFold(kind, "xpath") {
		return expr{}, errorAt(r.Args[0].Pos, "%s supports only the 'xpath' syntax type, not %q", xmlSelectName, kind)
	}
	src := unquote(r.Args[1].Raw)
	compiled, err := xpath.Compile(src)
	if err != nil {
		return expr{}, errorAt(r.Args[1].Pos, "invalid XPath expression %q: %v", src, err)
	}
	x := &xmlSelect{expr: compiled}
	return expr{typ: stringType, pos: r.Pos, val: x.value}, nil
}

// xmlSelect evaluates one compiled XPath expression against message bodies.
type xmlSelect struct {
	// mu serialises Evaluate: an xpath.Expr keeps iteration state in its
	// query tree and is not safe for concurrent use. Parsing the body, the
	// expensive part, happens outside the lock.
	mu   sync.Mutex
	expr *xpath.Expr
}

// value is JMS_BEA_SELECT's result for m: the string value of the first
// node the expression selects (or of its scalar result), or Null when the
// body is absent or is not well-formed XML, when nothing is selected, or
// when the selected value is the empty string.
//
// The body is parsed on every call; this allocates and costs time in
// proportion to the body's size.
func (x *xmlSelect) value(m Message) Value {
	body, ok := m.Body()
	if !ok {
		return Value{}
	}
	doc, err := xmlquery.Parse(bytes.NewReader(body))
	if err != nil || !wellFormed(doc) {
		return Value{}
	}
	s, ok := x.evaluate(doc)
	if !ok || s == "" {
		return Value{}
	}
	return Value{Kind: String, Str: s}
}

// wellFormed checks what the XML parser lets through: a document must have
// exactly one root element and no text outside it but white space.
func wellFormed(doc *xmlquery.Node) bool {
	roots := 0
	for n := doc.FirstChild; n != nil; n = n.NextSibling {
		switch n.Type {
		case xmlquery.ElementNode:
			roots++
		case xmlquery.TextNode, xmlquery.CharDataNode:
			if strings.TrimLeft(n.Data, " \t\r\n") != "" {
				return false
			}
		}
	}
	return roots == 1
}

// evaluate runs the expression over doc. A panic inside the XPath library
// (a defect there, triggered by some expression and document) is taken as
// "nothing selected" rather than allowed to bring down the broker.
func (x *xmlSelect) evaluate(doc *xmlquery.Node) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	x.mu.Lock()
	defer x.mu.Unlock()
	switch r := x.expr.Evaluate(xmlquery.CreateXPathNavigator(doc)).(type) {
	case *xpath.NodeIterator:
		if !r.MoveNext() {
			return "", false
		}
		return r.Current().Value(), true
	case string:
		return r, true
	case float64:
		return xpathNumber(r), true
	case bool:
		return strconv.FormatBool(r), true
	}
	return "", false
}

// xpathNumber formats a number as XPath's string() does.
func xpathNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
