package selector

// relation is a comparison operator.
type relation uint8

const (
	eq relation = iota
	ne
	lt
	le
	gt
	ge
)

func relationOf(op string) relation {
	switch op {
	case "<>":
		return ne
	case "<":
		return lt
	case "<=":
		return le
	case ">":
		return gt
	case ">=":
		return ge
	}
	return eq
}

func isNumeric(k Kind) bool { return k == Long || k == Double }

func toDouble(v Value) float64 {
	if v.Kind == Long {
		return float64(v.Long)
	}
	return v.Double
}

// apply compares a with b. Null on either side, values of different kinds
// (after numeric promotion), and ordering of strings or booleans are all
// Unknown. Long is promoted to Double when the kinds differ. NaN compares
// as in Java: unequal to everything, and neither less nor greater.
func (rel relation) apply(a, b Value) Result {
	if !isNumeric(a.Kind) || !isNumeric(b.Kind) {
		if a.Kind != b.Kind || a.Kind == Null || rel > ne {
			return Unknown
		}
		var same bool
		if a.Kind == String {
			same = a.Str == b.Str
		} else {
			same = a.Bool == b.Bool
		}
		return resultOf(same == (rel == eq))
	}
	// order: -1, 0, +1, or 2 when unordered (NaN).
	var order int
	if a.Kind == Long && b.Kind == Long {
		switch {
		case a.Long < b.Long:
			order = -1
		case a.Long > b.Long:
			order = 1
		}
	} else {
		x, y := toDouble(a), toDouble(b)
		switch {
		case x < y:
			order = -1
		case x > y:
			order = 1
		case x == y:
			order = 0
		default:
			order = 2
		}
	}
	switch rel {
	case eq:
		return resultOf(order == 0)
	case ne:
		return resultOf(order != 0)
	case lt:
		return resultOf(order == -1)
	case le:
		return resultOf(order == -1 || order == 0)
	case gt:
		return resultOf(order == 1)
	}
	return resultOf(order == 0 || order == 1)
}

// arithmetic returns the function for a binary arithmetic operator. A Null
// or non-numeric operand gives Null. Long with Long stays Long (wrapping on
// overflow as Java does; division truncates toward zero; division by zero
// gives Null). Otherwise both are promoted to Double and IEEE 754 rules
// apply (x/0.0 is ±Inf or NaN).
func arithmetic(op byte) func(a, b Value) Value {
	switch op {
	case '+':
		return func(a, b Value) Value {
			if a.Kind == Long && b.Kind == Long {
				return Value{Kind: Long, Long: a.Long + b.Long}
			}
			if !isNumeric(a.Kind) || !isNumeric(b.Kind) {
				return Value{}
			}
			return Value{Kind: Double, Double: toDouble(a) + toDouble(b)}
		}
	case '-':
		return func(a, b Value) Value {
			if a.Kind == Long && b.Kind == Long {
				return Value{Kind: Long, Long: a.Long - b.Long}
			}
			if !isNumeric(a.Kind) || !isNumeric(b.Kind) {
				return Value{}
			}
			return Value{Kind: Double, Double: toDouble(a) - toDouble(b)}
		}
	case '*':
		return func(a, b Value) Value {
			if a.Kind == Long && b.Kind == Long {
				return Value{Kind: Long, Long: a.Long * b.Long}
			}
			if !isNumeric(a.Kind) || !isNumeric(b.Kind) {
				return Value{}
			}
			return Value{Kind: Double, Double: toDouble(a) * toDouble(b)}
		}
	}
	return func(a, b Value) Value {
		if a.Kind == Long && b.Kind == Long {
			if b.Long == 0 {
				return Value{}
			}
			// Go defines MinInt64 / -1 as MinInt64, as Java does.
			return Value{Kind: Long, Long: a.Long / b.Long}
		}
		if !isNumeric(a.Kind) || !isNumeric(b.Kind) {
			return Value{}
		}
		return Value{Kind: Double, Double: toDouble(a) / toDouble(b)}
	}
}

// negate is unary minus: Null for anything not numeric.
func negate(v Value) Value {
	switch v.Kind {
	case Long:
		return Value{Kind: Long, Long: -v.Long}
	case Double:
		return Value{Kind: Double, Double: -v.Double}
	}
	return Value{}
}

// plus is unary plus: the number itself, Null for anything not numeric.
func plus(v Value) Value {
	if isNumeric(v.Kind) {
		return Value{Kind: v.Kind, Long: v.Long, Double: v.Double}
	}
	return Value{}
}
