package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Error is a malformed schedule: what is wrong, in which field, and where.
// Parse returns every failure as an *Error.
type Error struct {
	// Schedule is the 0-based index of the ';'-separated schedule that holds
	// the error.
	Schedule int
	// Field is the name of the field that holds the error: millisecond,
	// second, minute, hour, dayOfMonth, month or dayOfWeek. It is empty when
	// the error is not inside one of the seven fields (an eighth field).
	Field string
	// Offset is the 0-based byte offset of the error in the source text.
	Offset int
	// Line and Column are the 1-based line and column of the error; Column
	// counts characters, not bytes.
	Line, Column int
	// Msg says what is wrong, without the position.
	Msg string
}

// Error formats the error as "schedule:LINE:COLUMN: MESSAGE".
func (e *Error) Error() string {
	return fmt.Sprintf("schedule:%d:%d: %s", e.Line, e.Column, e.Msg)
}

// fieldKind is the index of a field in a schedule, 0 (millisecond) to 6
// (dayOfWeek).
type fieldKind int

// The seven fields in the order they are written.
const (
	fMillisecond fieldKind = iota
	fSecond
	fMinute
	fHour
	fDayOfMonth
	fMonth
	fDayOfWeek
	numFields
)

// name is the field's name as used in messages and Error.Field.
func (k fieldKind) name() string {
	switch k {
	case fMillisecond:
		return "millisecond"
	case fSecond:
		return "second"
	case fMinute:
		return "minute"
	case fHour:
		return "hour"
	case fDayOfMonth:
		return "dayOfMonth"
	case fMonth:
		return "month"
	case fDayOfWeek:
		return "dayOfWeek"
	}
	return ""
}

// bounds are the smallest and greatest value the field accepts as written.
// dayOfWeek accepts 0 as an alias of 1 (Sunday); its greatest value, and so
// the meaning of "last", is 7 (Saturday).
func (k fieldKind) bounds() (lo, hi int) {
	switch k {
	case fMillisecond:
		return 0, 999
	case fSecond, fMinute:
		return 0, 59
	case fHour:
		return 0, 23
	case fDayOfMonth:
		return 1, 31
	case fMonth:
		return 1, 12
	case fDayOfWeek:
		return 0, 7
	}
	return 0, 0
}

// rangeText is the documented range of a field for messages.
func (k fieldKind) rangeText() string {
	if k == fDayOfWeek {
		return "1-7 (1 = Sunday; 0 is also Sunday)"
	}
	lo, hi := k.bounds()
	return fmt.Sprintf("%d-%d", lo, hi)
}

const fieldList = "millisecond second minute hour dayOfMonth month dayOfWeek"

// newError builds an *Error for field k at pos.
func newError(sched int, k fieldKind, pos lexer.Position, format string, args ...any) *Error {
	return &Error{
		Schedule: sched,
		Field:    k.name(),
		Offset:   pos.Offset,
		Line:     pos.Line,
		Column:   pos.Column,
		Msg:      fmt.Sprintf(format, args...),
	}
}

// isSpace reports whether c is whitespace as the lexer's \s defines it.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// locate finds the schedule and field that the byte at off belongs to, by
// counting separators before it. atBoundary reports that off is at the
// start of the text, of a schedule, or just after whitespace.
func locate(src string, off int) (sched int, k fieldKind, atBoundary bool) {
	k = -1
	atBoundary = true
	for i := 0; i < off && i < len(src); i++ {
		switch c := src[i]; {
		case c == ';':
			sched++
			k = -1
			atBoundary = true
		case isSpace(c):
			atBoundary = true
		default:
			if atBoundary {
				k++
			}
			atBoundary = false
		}
	}
	return sched, k, atBoundary
}

// lastNonSpace is the last byte before off that is not whitespace, or 0.
func lastNonSpace(src string, off int) byte {
	for i := min(off, len(src)) - 1; i >= 0; i-- {
		if !isSpace(src[i]) {
			return src[i]
		}
	}
	return 0
}

// syntaxError turns a participle parse or lex error into an *Error that
// names the field and says what was expected there.
func syntaxError(src string, err error) *Error {
	var perr participle.Error
	if !errors.As(err, &perr) {
		// Not expected from participle; keep the text and give position 1:1.
		return &Error{Line: 1, Column: 1, Msg: err.Error()}
	}
	pos := perr.Position()
	off := min(max(pos.Offset, 0), len(src))
	var lexErr *lexer.Error
	isLexErr := errors.As(err, &lexErr)

	sched, k, atBoundary := locate(src, off)
	var c byte
	if off < len(src) {
		c = src[off]
	}
	startsToken := off < len(src) && c != ';' && !isSpace(c)
	if startsToken && atBoundary {
		k++ // the offending text begins a new field
	}

	if !startsToken {
		// Something is missing at a separator or the end of the text.
		switch prev := lastNonSpace(src, off); {
		case prev == 0 || prev == ';' || k < 0:
			where := "empty schedule"
			if c == ';' || sched > 0 {
				where = "empty schedule next to ';'"
			}
			return newError(sched, fMillisecond, pos, "%s: a schedule has 7 fields: %s", where, fieldList)
		case prev == '-' && !atBoundary:
			return newError(sched, k, pos, "%s range has no end", k.name())
		case prev == ',' && !atBoundary:
			return newError(sched, k, pos, "%s list ends with ','", k.name())
		case k+1 < numFields:
			return newError(sched, k+1, pos, "%s field missing: a schedule has 7 whitespace-separated fields: %s", (k + 1).name(), fieldList)
		}
		// Seven fields were read and something else follows.
		return &Error{Schedule: sched, Offset: pos.Offset, Line: pos.Line, Column: pos.Column,
			Msg: fmt.Sprintf("unexpected %s after the dayOfWeek field", quoteAt(src, off))}
	}
	if k >= numFields {
		return &Error{Schedule: sched, Offset: pos.Offset, Line: pos.Line, Column: pos.Column,
			Msg: fmt.Sprintf("unexpected %s after the dayOfWeek field: a schedule has 7 fields: %s (separate schedules with ';')", quoteAt(src, off), fieldList)}
	}
	if isLexErr {
		return newError(sched, k, pos, "%s field: unexpected character %s", k.name(), quoteAt(src, off))
	}
	lo, hi := k.bounds()
	if k == fDayOfWeek {
		lo = 1
	}
	want := fmt.Sprintf("want * or a comma-separated list of values (%d-%d, l, last) and ranges (a-b)", lo, hi)
	// participle reports a bad item at the ',' or '-' before it; step onto
	// the culprit itself.
	shift := func() {
		off++
		pos.Offset++
		pos.Column++
		c = src[off]
	}
	afterValue := off > 0 && isValueChar(src[off-1])
	var next byte
	if off+1 < len(src) {
		next = src[off+1]
	}
	switch {
	case c == ',' && off > 0 && src[off-1] == '*':
		return newError(sched, k, pos, "%s field: * stands alone and cannot be part of a list", k.name())
	case c == '-' && afterValue && afterRange(src, off):
		return newError(sched, k, pos, "%s field: unexpected \"-\" after a range: a range is two values joined by one '-'", k.name())
	case (c == ',' || c == '-') && isLetter(next) && !isLast(wordAt(src, off+1)):
		shift()
		return newError(sched, k, pos, "%s field: unknown word %s: %s", k.name(), quoteAt(src, off), want)
	case c == ',' && afterValue && endsField(src, off+1):
		return newError(sched, k, pos, "%s list ends with ','", k.name())
	case c == ',' && afterValue && next == ',':
		shift()
		return newError(sched, k, pos, "%s list has an empty item", k.name())
	case c == '-' && afterValue && (endsField(src, off+1) || next == ','):
		return newError(sched, k, pos, "%s range has no end", k.name())
	case (c == ',' || c == '-') && afterValue && off+1 < len(src):
		shift()
	}
	switch {
	case isLetter(c):
		return newError(sched, k, pos, "%s field: unknown word %s: %s", k.name(), quoteAt(src, off), want)
	case c == '*' && off > 0 && src[off-1] == ',':
		return newError(sched, k, pos, "%s field: * stands alone and cannot be part of a list", k.name())
	}
	return newError(sched, k, pos, "%s field: unexpected %s: %s", k.name(), quoteAt(src, off), want)
}

// endsField reports whether off is at the end of a field: the end of the
// text, whitespace or ';'.
func endsField(src string, off int) bool {
	return off >= len(src) || isSpace(src[off]) || src[off] == ';'
}

// wordAt is the run of digits and letters at off.
func wordAt(src string, off int) string {
	end := off
	for end < len(src) && isValueChar(src[end]) {
		end++
	}
	return src[off:end]
}

// isLast reports whether w is l or last, in any case.
func isLast(w string) bool {
	return strings.EqualFold(w, "l") || strings.EqualFold(w, "last")
}

// isValueChar reports whether c can be part of a value: a digit or letter.
func isValueChar(c byte) bool { return isDigit(c) || isLetter(c) }

// afterRange reports whether the value that ends just before off is the
// end of a range a-b.
func afterRange(src string, off int) bool {
	i := off - 1
	for i >= 0 && isValueChar(src[i]) {
		i--
	}
	return i >= 0 && src[i] == '-'
}

// isLetter reports whether c is an ASCII letter or underscore.
func isLetter(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// quoteAt quotes the token or character at off for a message.
func quoteAt(src string, off int) string {
	if off >= len(src) {
		return "end of schedule"
	}
	end := off + 1
	if isLetter(src[off]) || isDigit(src[off]) {
		for end < len(src) && (isLetter(src[end]) || isDigit(src[end])) {
			end++
		}
	} else {
		// One whole character, or one byte of invalid UTF-8.
		_, size := utf8.DecodeRuneInString(src[off:])
		end = off + size
	}
	tok := src[off:end]
	if len(tok) > 20 {
		tok = tok[:20] + "..."
	}
	return strconv.Quote(tok)
}

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
