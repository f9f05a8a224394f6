package selector

import (
	"strings"
	"testing"
	"time"
)

// TestLike checks the LIKE matcher directly.
func TestLike(t *testing.T) {
	cases := []struct {
		pattern string
		esc     rune
		subject string
		want    bool
	}{
		{"", -1, "", true},
		{"", -1, "a", false},
		{"abc", -1, "abc", true},
		{"abc", -1, "abcd", false},
		{"abc", -1, "ab", false},
		{"%", -1, "", true},
		{"%", -1, "anything", true},
		{"%%", -1, "x", true},
		{"_", -1, "", false},
		{"_", -1, "a", true},
		{"_", -1, "ab", false},
		{"__", -1, "ab", true},
		{"_", -1, "é", true},     // one code point, two bytes
		{"_", -1, "日", true},     // three bytes
		{"__", -1, "日本", true},   // two characters
		{"_", -1, "\xff", true},  // an invalid byte counts as one character
		{"a_c", -1, "a日c", true}, // wildcard inside
		{"WebLogic%", -1, "WebLogic Server", true},
		{"WebLogic%", -1, "WebLogic", true},
		{"WebLogic%", -1, "Web", false},
		{"%T3", -1, "Over T3", true},
		{"%T3", -1, "T3", true},
		{"%T3", -1, "T3x", false},
		{"%mid%", -1, "a mid b", true},
		{"%mid%", -1, "a mi d b", false},
		{"a%b", -1, "ab", true},
		{"a%b", -1, "axxb", true},
		{"a%b", -1, "axxbx", false},
		{"ab%ba", -1, "aba", false}, // the two ends may not overlap
		{"ab%ba", -1, "abba", true},
		{"a%b%c", -1, "abc", true},
		{"a%b%c", -1, "axbxcxc", true},
		{"a%b%c", -1, "acb", false},
		{"%a_c%", -1, "xxabcxx", true},
		{"%a_c%", -1, "xxacxx", false},
		{"%a_c", -1, "aXcaYc", true},
		{"_%_", -1, "a", false},
		{"_%_", -1, "ab", true},
		{"%__", -1, "日本", true},
		{"%__", -1, "日", false},
		{"%日_", -1, "x日本", true},
		{"%a%a%a%b", -1, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"%a%a%a%b", -1, "aaab", true},
		{"%a%a%a%b", -1, "aab", false},
		{`100\%`, '\\', "100%", true},
		{`100\%`, '\\', "1000", false},
		{`a\_b`, '\\', "a_b", true},
		{`a\_b`, '\\', "axb", false},
		{`a\\b`, '\\', `a\b`, true},
		{`%\%%`, '\\', "50% off", true},
		{`%\%%`, '\\', "50 off", false},
		{"a!%", '!', "a%", true},
		{"a!%", '!', "ab", false},
		{"a日%", '日', "a%", true},
		{"%%x", '%', "%x", true}, // with % as the escape character, %% is a literal %
		{"%%x", '%', "ax", false},
	}
	for _, tc := range cases {
		p, err := compileLike(tc.pattern, tc.esc)
		if err != nil {
			t.Errorf("compileLike(%q, %q): %v", tc.pattern, tc.esc, err)
			continue
		}
		if got := p.match(tc.subject); got != tc.want {
			t.Errorf("%q LIKE %q ESCAPE %q = %v, want %v", tc.subject, tc.pattern, tc.esc, got, tc.want)
		}
	}
}

// TestLikeAgainstReference compares the matcher with a simple recursive
// definition over many short patterns and subjects.
func TestLikeAgainstReference(t *testing.T) {
	alphabet := []string{"a", "b", "%", "_"}
	var patterns []string
	var grow func(p string, n int)
	grow = func(p string, n int) {
		patterns = append(patterns, p)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(p+c, n-1)
		}
	}
	grow("", 5)
	var subjects []string
	var growS func(s string, n int)
	growS = func(s string, n int) {
		subjects = append(subjects, s)
		if n == 0 {
			return
		}
		growS(s+"a", n-1)
		growS(s+"b", n-1)
	}
	growS("", 5)
	for _, pat := range patterns {
		p, err := compileLike(pat, -1)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range subjects {
			if got, want := p.match(s), refLike(pat, s); got != want {
				t.Fatalf("%q LIKE %q = %v, want %v", s, pat, got, want)
			}
		}
	}
}

// refLike is the textbook (exponential) LIKE definition for ASCII input.
func refLike(p, s string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '%':
		for i := 0; i <= len(s); i++ {
			if refLike(p[1:], s[i:]) {
				return true
			}
		}
		return false
	case '_':
		return s != "" && refLike(p[1:], s[1:])
	}
	return s != "" && s[0] == p[0] && refLike(p[1:], s[1:])
}

// TestLikeLinear checks that a pathological pattern stays fast.
func TestLikeLinear(t *testing.T) {
	s := MustCompile("s LIKE '%a%a%a%a%a%a%a%a%a%b' OR s LIKE '%a_a_a_a%b'")
	m := props("s", strings.Repeat("a", 20000))
	start := time.Now()
	if got := s.Eval(m); got != False {
		t.Fatalf("Eval = %v", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("pathological LIKE took %v", d)
	}
}
