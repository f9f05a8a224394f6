package selector

// Result is the SQL truth value of a selector for one message.
type Result uint8

// The three truth values. Unknown is the zero value: a message matches only
// when its selector is True.
const (
	Unknown Result = iota
	False
	True
)

// String returns "unknown", "false" or "true".
func (r Result) String() string {
	switch r {
	case True:
		return "true"
	case False:
		return "false"
	}
	return "unknown"
}

// Selector is a compiled message selector. It is immutable and safe for
// concurrent use by any number of goroutines.
//
// The nil *Selector selects every message, as does the Selector compiled
// from an empty selector.
type Selector struct {
	src    string
	eval   func(Message) Result // nil: selects everything
	target string               // "" unless the selector is "identifier IS NOT NULL"
}

// IsEmpty reports whether src is the empty selector: empty or only white
// space (space, tab, form feed, CR, LF). JMS treats an empty selector like
// no selector at all, so it selects every message; Compile returns a
// Selector whose Eval is always True for it.
func IsEmpty(src string) bool {
	for i := 0; i < len(src); i++ {
		if !isSpace(src[i]) {
			return false
		}
	}
	return true
}

// Compile parses and type-checks a selector and builds its evaluator. A
// malformed selector yields an *Error giving the position of the problem.
// The empty selector (see IsEmpty) compiles to a Selector that selects every
// message.
func Compile(src string) (*Selector, error) {
	if IsEmpty(src) {
		return &Selector{src: src}, nil
	}
	ast, err := parse(src)
	if err != nil {
		return nil, err
	}
	eval, err := build(ast)
	if err != nil {
		return nil, err
	}
	s := &Selector{src: src, eval: eval}
	s.target, _ = targetOf(ast)
	return s, nil
}

// MustCompile is like Compile but panics on error. It is meant for
// selectors fixed in the program text, such as in tests.
func MustCompile(src string) *Selector {
	s, err := Compile(src)
	if err != nil {
		panic(err)
	}
	return s
}

// Eval evaluates the selector against m with SQL three-valued logic. It does
// not allocate, except in JMS_BEA_SELECT, which parses the XML body.
func (s *Selector) Eval(m Message) Result {
	if s == nil || s.eval == nil {
		return True
	}
	return s.eval(m)
}

// Matches reports whether m is selected: whether Eval is True.
func (s *Selector) Matches(m Message) bool {
	return s.Eval(m) == True
}

// String returns the selector's source text exactly as compiled ("" for the
// nil Selector).
func (s *Selector) String() string {
	if s == nil {
		return ""
	}
	return s.src
}

// Target recognises WebLogic's indexable subscriber form "identifier IS NOT
// NULL" (see doc.go for the exact rule). When ok is true, the selector is
// true exactly when the message has a property called name, so the engine
// may route by an index of names instead of evaluating the selector.
func (s *Selector) Target() (name string, ok bool) {
	if s == nil || s.target == "" {
		return "", false
	}
	return s.target, true
}
