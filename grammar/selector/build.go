package selector

import (
	"errors"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// This file turns the syntax tree into a tree of closures, checking types
// on the way. Every closure reads the message through the Message interface
// and passes Values by value, so evaluation allocates nothing.

// condFn evaluates a boolean expression.
type condFn func(Message) Result

// valueFn evaluates an operand.
type valueFn func(Message) Value

// staticType is what the compiler knows of an expression's type.
type staticType uint8

const (
	anyType    staticType = iota // identifiers: known only at run time
	boolType                     // TRUE, FALSE, comparisons, AND, OR, ...
	numberType                   // numeric literals and arithmetic
	stringType                   // string literals and JMS_BEA_SELECT
)

func (t staticType) String() string {
	switch t {
	case boolType:
		return "boolean"
	case numberType:
		return "number"
	case stringType:
		return "string"
	}
	return "value"
}

// expr is a compiled expression. Boolean expressions set cond, others val;
// asCond and asValue convert between the two on demand.
type expr struct {
	typ   staticType
	pos   lexer.Position
	cond  condFn
	val   valueFn
	konst bool // reads nothing from the message: may be folded
}

// build compiles a whole selector.
func build(ast *disjunction) (condFn, error) {
	e, err := buildDisjunction(ast)
	if err != nil {
		return nil, err
	}
	if e.typ != boolType && e.typ != anyType {
		return nil, errorAt(e.pos, "a selector must be a boolean expression, not a %s", e.typ)
	}
	c := e.asCond()
	if e.konst {
		r := c(nil)
		return func(Message) Result { return r }, nil
	}
	return c, nil
}

// asCond returns e as a condition; a non-boolean value is Unknown.
func (e expr) asCond() condFn {
	if e.cond != nil {
		return e.cond
	}
	v := e.val
	return func(m Message) Result { return truth(v(m)) }
}

// asValue returns e as a value; an Unknown condition is Null.
func (e expr) asValue() valueFn {
	if e.val != nil {
		return e.val
	}
	c := e.cond
	if e.konst {
		v := fromResult(c(nil))
		return func(Message) Value { return v }
	}
	return func(m Message) Value { return fromResult(c(m)) }
}

func truth(v Value) Result {
	if v.Kind != Bool {
		return Unknown
	}
	return resultOf(v.Bool)
}

func resultOf(b bool) Result {
	if b {
		return True
	}
	return False
}

func fromResult(r Result) Value {
	switch r {
	case True:
		return Value{Kind: Bool, Bool: true}
	case False:
		return Value{Kind: Bool}
	}
	return Value{}
}

func not3(r Result) Result {
	switch r {
	case True:
		return False
	case False:
		return True
	}
	return Unknown
}

func constValue(v Value, t staticType, pos lexer.Position) expr {
	return expr{typ: t, pos: pos, konst: true, val: func(Message) Value { return v }}
}

// fold replaces a constant expression by its value.
func fold(e expr) expr {
	if !e.konst {
		return e
	}
	if e.cond != nil {
		r := e.cond(nil)
		e.cond = func(Message) Result { return r }
		return e
	}
	v := e.val(nil)
	e.val = func(Message) Value { return v }
	return e
}

// wantBool checks an operand of AND, OR or NOT.
func wantBool(e expr, op string) error {
	if e.typ == boolType || e.typ == anyType {
		return nil
	}
	return errorAt(e.pos, "%s needs boolean operands, but this is a %s", op, e.typ)
}

// wantNumber checks an operand of arithmetic or BETWEEN.
func wantNumber(e expr, op string) error {
	if e.typ == numberType || e.typ == anyType {
		return nil
	}
	return errorAt(e.pos, "%s needs numeric operands, but this is a %s", op, e.typ)
}

func buildDisjunction(d *disjunction) (expr, error) {
	return buildJunction(d.Terms, buildConjunction, "OR", True)
}

func buildConjunction(d *conjunction) (expr, error) {
	return buildJunction(d.Terms, buildCondition, "AND", False)
}

// buildJunction builds OR (dominant True) or AND (dominant False) over
// terms with SQL's three-valued logic: the dominant value of any term
// decides; otherwise any unknown term makes the result unknown.
func buildJunction[T any](ts []T, build func(T) (expr, error), op string, dominant Result) (expr, error) {
	terms := make([]condFn, 0, len(ts))
	var first expr
	konst := true
	for i, t := range ts {
		e, err := build(t)
		if err != nil {
			return expr{}, err
		}
		if len(ts) == 1 {
			return e, nil
		}
		if err := wantBool(e, op); err != nil {
			return expr{}, err
		}
		if i == 0 {
			first = e
		}
		konst = konst && e.konst
		terms = append(terms, e.asCond())
	}
	other := True
	if dominant == True {
		other = False
	}
	var c condFn
	if len(terms) == 2 {
		a, b := terms[0], terms[1]
		c = func(m Message) Result {
			x := a(m)
			if x == dominant {
				return dominant
			}
			y := b(m)
			if y == dominant {
				return dominant
			}
			if x == Unknown || y == Unknown {
				return Unknown
			}
			return other
		}
	} else {
		c = func(m Message) Result {
			r := other
			for _, t := range terms {
				switch t(m) {
				case dominant:
					return dominant
				case Unknown:
					r = Unknown
				}
			}
			return r
		}
	}
	return fold(expr{typ: boolType, pos: first.pos, cond: c, konst: konst}), nil
}

func buildCondition(n *condition) (expr, error) {
	if n.Not == nil {
		return buildPredicate(n.Pred)
	}
	e, err := buildCondition(n.Not)
	if err != nil {
		return expr{}, err
	}
	if err := wantBool(e, "NOT"); err != nil {
		return expr{}, err
	}
	c := e.asCond()
	return fold(expr{typ: boolType, pos: n.Pos, konst: e.konst,
		cond: func(m Message) Result { return not3(c(m)) }}), nil
}

func buildPredicate(p *predicate) (expr, error) {
	left, err := buildOperand(p.Left)
	if err != nil {
		return expr{}, err
	}
	switch {
	case p.Comparison != nil:
		right, err := buildOperand(p.Comparison.Right)
		if err != nil {
			return expr{}, err
		}
		return buildComparison(p.Comparison, left, right)
	case p.Null != nil:
		return buildNullTest(p.Null, left), nil
	case p.Test != nil:
		return buildTest(p.Test, left)
	}
	return left, nil
}

func buildComparison(c *comparison, left, right expr) (expr, error) {
	rel := relationOf(c.Op)
	if left.typ != anyType && right.typ != anyType && left.typ != right.typ {
		return expr{}, errorAt(c.Pos, "cannot compare a %s with a %s", left.typ, right.typ)
	}
	if rel > ne {
		for _, e := range [...]expr{left, right} {
			if e.typ == stringType || e.typ == boolType {
				return expr{}, errorAt(c.Pos, "operator %s does not apply to a %s: JMS allows only = and <> on strings and booleans", c.Op, e.typ)
			}
		}
	}
	l, r := left.asValue(), right.asValue()
	out := expr{typ: boolType, pos: left.pos, konst: left.konst && right.konst}
	switch {
	case right.konst && !left.konst:
		k := r(nil)
		out.cond = func(m Message) Result { return rel.apply(l(m), k) }
	case left.konst && !right.konst:
		k := l(nil)
		out.cond = func(m Message) Result { return rel.apply(k, r(m)) }
	default:
		out.cond = func(m Message) Result { return rel.apply(l(m), r(m)) }
	}
	return fold(out), nil
}

func buildNullTest(n *nullTest, left expr) expr {
	v := left.asValue()
	want := !n.Not // IS NULL is true for Null, IS NOT NULL for the rest
	return fold(expr{typ: boolType, pos: left.pos, konst: left.konst,
		cond: func(m Message) Result { return resultOf((v(m).Kind == Null) == want) }})
}

func buildTest(t *test, left expr) (expr, error) {
	var e expr
	var err error
	switch {
	case t.Between != nil:
		e, err = buildBetween(t.Between, left)
	case t.In != nil:
		e, err = buildIn(t.In, left)
	default:
		e, err = buildLike(t.Like, left)
	}
	if err != nil || !t.Not {
		return e, err
	}
	c := e.cond
	e.cond = func(m Message) Result { return not3(c(m)) }
	return fold(e), nil
}

func buildBetween(b *between, left expr) (expr, error) {
	low, err := buildOperand(b.Low)
	if err != nil {
		return expr{}, err
	}
	high, err := buildOperand(b.High)
	if err != nil {
		return expr{}, err
	}
	for _, e := range [...]expr{left, low, high} {
		if err := wantNumber(e, "BETWEEN"); err != nil {
			return expr{}, err
		}
	}
	x, lo, hi := left.asValue(), low.asValue(), high.asValue()
	return fold(expr{typ: boolType, pos: left.pos, konst: left.konst && low.konst && high.konst,
		cond: func(m Message) Result {
			v := x(m)
			a := ge.apply(v, lo(m))
			if a == False {
				return False
			}
			z := le.apply(v, hi(m))
			if z == False {
				return False
			}
			if a == Unknown || z == Unknown {
				return Unknown
			}
			return True
		}}), nil
}

// wantString checks the left operand of IN and LIKE.
func wantString(e expr, op string) error {
	if e.typ == stringType || e.typ == anyType {
		return nil
	}
	return errorAt(e.pos, "%s needs a string operand, but this is a %s", op, e.typ)
}

// inMapAt is the list length from which IN uses a map rather than a scan.
const inMapAt = 8

func buildIn(in *inList, left expr) (expr, error) {
	if err := wantString(left, "IN"); err != nil {
		return expr{}, err
	}
	items := make([]string, len(in.Items))
	for i, it := range in.Items {
		items[i] = unquote(it.Raw)
	}
	x := left.asValue()
	out := expr{typ: boolType, pos: left.pos, konst: left.konst}
	if len(items) >= inMapAt {
		set := make(map[string]struct{}, len(items))
		for _, s := range items {
			set[s] = struct{}{}
		}
		out.cond = func(m Message) Result {
			v := x(m)
			if v.Kind != String {
				return Unknown
			}
			_, ok := set[v.Str]
			return resultOf(ok)
		}
	} else {
		out.cond = func(m Message) Result {
			v := x(m)
			if v.Kind != String {
				return Unknown
			}
			for _, s := range items {
				if s == v.Str {
					return True
				}
			}
			return False
		}
	}
	return fold(out), nil
}

func buildLike(l *like, left expr) (expr, error) {
	if err := wantString(left, "LIKE"); err != nil {
		return expr{}, err
	}
	var esc rune = -1
	if l.Escape != nil {
		s := unquote(l.Escape.Raw)
		r := []rune(s)
		if len(r) != 1 {
			return expr{}, errorAt(l.Escape.Pos, "ESCAPE needs exactly one character, found %q", s)
		}
		esc = r[0]
	}
	pat, err := compileLike(unquote(l.Pattern.Raw), esc)
	if err != nil {
		return expr{}, errorAt(l.Pattern.Pos, "bad LIKE pattern: %v", err)
	}
	x := left.asValue()
	return fold(expr{typ: boolType, pos: left.pos, konst: left.konst,
		cond: func(m Message) Result {
			v := x(m)
			if v.Kind != String {
				return Unknown
			}
			return resultOf(pat.match(v.Str))
		}}), nil
}

func buildOperand(o *operand) (expr, error) {
	e, err := buildTerm(o.Left)
	if err != nil {
		return expr{}, err
	}
	for _, op := range o.Ops {
		r, err := buildTerm(op.Right)
		if err != nil {
			return expr{}, err
		}
		if e, err = buildArith(op.Op[0], op.Pos, e, r); err != nil {
			return expr{}, err
		}
	}
	return e, nil
}

func buildTerm(t *term) (expr, error) {
	e, err := buildFactor(t.Left)
	if err != nil {
		return expr{}, err
	}
	for _, op := range t.Ops {
		r, err := buildFactor(op.Right)
		if err != nil {
			return expr{}, err
		}
		if e, err = buildArith(op.Op[0], op.Pos, e, r); err != nil {
			return expr{}, err
		}
	}
	return e, nil
}

func buildArith(op byte, pos lexer.Position, left, right expr) (expr, error) {
	for i, e := range [...]expr{left, right} {
		if e.typ == numberType || e.typ == anyType {
			continue
		}
		side := [...]string{"left", "right"}[i]
		return expr{}, errorAt(pos, "operator %c needs numbers, but its %s operand is a %s", op, side, e.typ)
	}
	l, r := left.asValue(), right.asValue()
	f := arithmetic(op)
	return fold(expr{typ: numberType, pos: left.pos, konst: left.konst && right.konst,
		val: func(m Message) Value { return f(l(m), r(m)) }}), nil
}

func buildFactor(f *factor) (expr, error) {
	if f.Primary != nil {
		return buildPrimary(f.Primary)
	}
	// A minus sign directly before an integer literal makes a negative
	// literal, so that -9223372036854775808 is in range.
	if f.Sign == "-" && f.Operand.Primary != nil && f.Operand.Primary.Int != nil {
		return intLiteral("-"+*f.Operand.Primary.Int, f.Pos)
	}
	e, err := buildFactor(f.Operand)
	if err != nil {
		return expr{}, err
	}
	if err := wantNumber(e, "unary "+f.Sign); err != nil {
		return expr{}, err
	}
	v := e.asValue()
	out := expr{typ: numberType, pos: f.Pos, konst: e.konst}
	if f.Sign == "-" {
		out.val = func(m Message) Value { return negate(v(m)) }
	} else {
		out.val = func(m Message) Value { return plus(v(m)) }
	}
	return fold(out), nil
}

func buildPrimary(p *primary) (expr, error) {
	switch {
	case p.Paren != nil:
		e, err := buildDisjunction(p.Paren)
		e.pos = p.Pos
		return e, err
	case p.Str != nil:
		return constValue(Value{Kind: String, Str: unquote(p.Str.Raw)}, stringType, p.Pos), nil
	case p.Int != nil:
		return intLiteral(*p.Int, p.Pos)
	case p.Float != nil:
		text := strings.TrimRight(*p.Float, "fFdD")
		d, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return expr{}, errorAt(p.Pos, "numeric literal %s is out of range", *p.Float)
		}
		return constValue(Value{Kind: Double, Double: d}, numberType, p.Pos), nil
	case p.Bool != nil:
		return constValue(Value{Kind: Bool, Bool: strings.EqualFold(*p.Bool, "TRUE")}, boolType, p.Pos), nil
	case p.Null:
		return expr{}, errorAt(p.Pos, "NULL is not a value: test for it with IS NULL or IS NOT NULL")
	}
	return buildReference(p.Ref)
}

// intLiteral converts an exact numeric literal, possibly with a leading
// minus and an L suffix.
func intLiteral(text string, pos lexer.Position) (expr, error) {
	n, err := strconv.ParseInt(strings.TrimRight(text, "lL"), 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return expr{}, errorAt(pos, "integer literal %s is out of range for a long", text)
		}
		return expr{}, errorAt(pos, "bad integer literal %s", text)
	}
	return constValue(Value{Kind: Long, Long: n}, numberType, pos), nil
}

// unquote strips a string literal's quotes and undoubles inner quotes.
func unquote(raw string) string {
	return strings.ReplaceAll(raw[1:len(raw)-1], "''", "'")
}

// headerOf maps a selector identifier to a header field (see HeaderNamed).
func headerOf(name string) (Header, bool) {
	if len(name) < 7 || name[:3] != "JMS" {
		return 0, false
	}
	for h := JMSDeliveryMode; h <= JMSDeliveryTime; h++ {
		if headerName(h) == name {
			return h, true
		}
	}
	return 0, false
}

func buildReference(r *reference) (expr, error) {
	if r.Call {
		return buildCall(r)
	}
	if h, ok := headerOf(r.Name); ok {
		return expr{typ: anyType, pos: r.Pos, val: func(m Message) Value { return m.Header(h) }}, nil
	}
	name := r.Name
	return expr{typ: anyType, pos: r.Pos, val: func(m Message) Value { return m.Property(name) }}, nil
}
