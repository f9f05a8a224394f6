package selector

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// likePattern is a compiled LIKE pattern. The pattern is cut at each '%'
// into segments; a segment is literal text and '_' wildcards, so it always
// spans a fixed number of characters. Matching then needs no backtracking:
// the first segment must match at the start, the last at the end, and each
// middle one is matched at its leftmost place after the previous one, which
// is optimal because segments have fixed length. The cost is at most
// O(len(subject) × len(pattern)), whatever the number of '%'.
type likePattern struct {
	segs     []likeSegment
	anyStart bool // pattern begins with '%'
	anyEnd   bool // pattern ends with '%'
}

// likeSegment is the pattern text between two '%'.
type likeSegment struct {
	pieces []likePiece
	lit    string // the whole segment when it has no '_'
	wild   bool   // has at least one '_'
	chars  int    // characters the segment spans
}

// likePiece is literal text, or a run of n '_' wildcards when lit is "".
type likePiece struct {
	lit string
	n   int
}

// compileLike compiles pattern; esc is the escape character, or -1.
func compileLike(pattern string, esc rune) (*likePattern, error) {
	p := &likePattern{}
	var seg likeSegment
	var lit strings.Builder
	percents := 0
	flushLit := func() {
		if lit.Len() > 0 {
			seg.pieces = append(seg.pieces, likePiece{lit: lit.String()})
			lit.Reset()
		}
	}
	flushSeg := func() {
		flushLit()
		if !seg.wild {
			for _, pc := range seg.pieces {
				seg.lit += pc.lit
			}
		}
		p.segs = append(p.segs, seg)
		seg = likeSegment{}
	}
	escaped := false
	for i, r := range pattern {
		wildcard := !escaped && r != esc
		switch {
		case escaped:
			if r != '%' && r != '_' && r != esc {
				return nil, fmt.Errorf("escape character %q at offset %d must be followed by %%, _ or itself, not %q", esc, i, r)
			}
			escaped = false
			lit.WriteRune(r)
			seg.chars++
		case r == esc:
			escaped = true
		case r == '%':
			if i == 0 {
				p.anyStart = true
			}
			percents++
			if seg.chars > 0 {
				flushSeg()
			}
		case r == '_':
			flushLit()
			if n := len(seg.pieces); n > 0 && seg.pieces[n-1].lit == "" {
				seg.pieces[n-1].n++
			} else {
				seg.pieces = append(seg.pieces, likePiece{n: 1})
			}
			seg.wild = true
			seg.chars++
		default:
			lit.WriteRune(r)
			seg.chars++
		}
		p.anyEnd = wildcard && r == '%'
	}
	if escaped {
		return nil, errors.New("pattern ends with the escape character")
	}
	if seg.chars > 0 || percents == 0 {
		flushSeg()
	}
	return p, nil
}

// matchAt matches seg at s[i:] and returns the end offset, or -1.
func (seg *likeSegment) matchAt(s string, i int) int {
	if !seg.wild {
		if strings.HasPrefix(s[i:], seg.lit) {
			return i + len(seg.lit)
		}
		return -1
	}
	for _, pc := range seg.pieces {
		if pc.lit != "" {
			if !strings.HasPrefix(s[i:], pc.lit) {
				return -1
			}
			i += len(pc.lit)
			continue
		}
		for range pc.n {
			if i >= len(s) {
				return -1
			}
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
	}
	return i
}

// find returns the start and end of the leftmost match of seg in s at or
// after i, or -1, -1.
func (seg *likeSegment) find(s string, i int) (int, int) {
	if !seg.wild {
		j := strings.Index(s[i:], seg.lit)
		if j < 0 {
			return -1, -1
		}
		return i + j, i + j + len(seg.lit)
	}
	for ; i <= len(s); i += runeLen(s, i) {
		if end := seg.matchAt(s, i); end >= 0 {
			return i, end
		}
		if i == len(s) {
			break
		}
	}
	return -1, -1
}

func runeLen(s string, i int) int {
	if i >= len(s) {
		return 1
	}
	_, size := utf8.DecodeRuneInString(s[i:])
	return size
}

// match reports whether s matches the pattern.
func (p *likePattern) match(s string) bool {
	segs := p.segs
	if !p.anyStart && !p.anyEnd && len(segs) == 1 {
		// No '%' at all (or none unescaped).
		return segs[0].matchAt(s, 0) == len(s)
	}
	i := 0
	if !p.anyStart {
		i = segs[0].matchAt(s, 0)
		if i < 0 {
			return false
		}
		segs = segs[1:]
	}
	var last *likeSegment
	if !p.anyEnd && len(segs) > 0 {
		last = &segs[len(segs)-1]
		segs = segs[:len(segs)-1]
	}
	for k := range segs {
		_, end := segs[k].find(s, i)
		if end < 0 {
			return false
		}
		i = end
	}
	if last == nil {
		return true
	}
	// The last segment spans a fixed number of characters: it can only
	// start that many characters before the end.
	start := len(s)
	if !last.wild {
		start -= len(last.lit)
	} else {
		for range last.chars {
			if start <= 0 {
				return false
			}
			_, size := utf8.DecodeLastRuneInString(s[:start])
			start -= size
		}
	}
	return start >= i && last.matchAt(s, start) == len(s)
}
