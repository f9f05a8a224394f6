package selector

import "strings"

// targetOf recognises the indexable form "identifier IS NOT NULL": the
// whole selector is one predicate whose left side is a bare identifier (no
// parentheses, signs, arithmetic or function call) and whose test is IS NOT
// NULL, and the identifier is an ordinary application property.
func targetOf(d *disjunction) (string, bool) {
	if len(d.Terms) != 1 || len(d.Terms[0].Terms) != 1 {
		return "", false
	}
	p := d.Terms[0].Terms[0].Pred
	if p == nil || p.Null == nil || !p.Null.Not {
		return "", false
	}
	if len(p.Left.Ops) != 0 || len(p.Left.Left.Ops) != 0 {
		return "", false
	}
	prim := p.Left.Left.Left.Primary
	if prim == nil || prim.Ref == nil || prim.Ref.Call || !indexable(prim.Ref.Name) {
		return "", false
	}
	return prim.Ref.Name, true
}

// indexable reports whether name may be a subscriber index key: not a JMS
// header field (whether or not selectors can read it), and not in the
// JMSX (JMS-defined) or JMS_ (provider-specific) property namespaces.
func indexable(name string) bool {
	if _, ok := headerOf(name); ok {
		return false
	}
	switch name {
	case "JMSDestination", "JMSReplyTo", "JMSExpiration":
		return false
	}
	return !strings.HasPrefix(name, "JMSX") && !strings.HasPrefix(name, "JMS_")
}
