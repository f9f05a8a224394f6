package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// spec is one compiled schedule: for each field, the set of values that
// match, as a bit set. Bit i stands for value i except in dow.
type spec struct {
	ms     [16]uint64 // bits 0-999: milliseconds, after rounding
	second uint64     // bits 0-59
	minute uint64     // bits 0-59
	hour   uint32     // bits 0-23
	dom    uint32     // bits 1-31: days of the month as written, before clamping
	month  uint16     // bits 1-12
	dow    uint8      // bit w: time.Weekday w (Sunday = 0 ... Saturday = 6)
}

// Schedule is a parsed schedule: one or more seven-field schedules, of which
// the soonest wins. It is immutable and safe for concurrent use.
type Schedule struct {
	src   string
	specs []spec
}

// String returns the schedule's source text as given to Parse.
func (s *Schedule) String() string { return s.src }

// Parse parses a schedule: one or more seven-field schedules separated by
// ';'. A malformed schedule returns an *Error naming the field and the
// position.
func Parse(src string) (*Schedule, error) {
	list, err := parser.ParseString("schedule", src)
	if err != nil {
		return nil, syntaxError(src, err)
	}
	s := &Schedule{src: src, specs: make([]spec, len(list.Schedules))}
	for i, sch := range list.Schedules {
		if err := s.specs[i].compile(i, sch); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// MustParse is Parse for schedules known to be valid, such as constants in
// programs and tests; it panics if src is malformed.
func MustParse(src string) *Schedule {
	s, err := Parse(src)
	if err != nil {
		panic(fmt.Sprintf("schedule.MustParse(%q): %v", src, err))
	}
	return s
}

// compile fills sp from the parse tree of schedule number idx.
func (sp *spec) compile(idx int, sch *schedule) error {
	fields := [numFields]*field{
		(*field)(sch.Millisecond), (*field)(sch.Second), (*field)(sch.Minute),
		(*field)(sch.Hour), (*field)(sch.DayOfMonth), (*field)(sch.Month),
		(*field)(sch.DayOfWeek),
	}
	for k, f := range fields {
		if err := sp.compileField(idx, fieldKind(k), f); err != nil {
			return err
		}
	}
	return nil
}

// compileField sets the bits of field k from f.
func (sp *spec) compileField(idx int, k fieldKind, f *field) error {
	lo, hi := k.bounds()
	if f.Any {
		if k == fDayOfWeek {
			lo = 1 // 0 is only an alias of 1
		}
		sp.set(k, lo, hi)
		return nil
	}
	for _, it := range f.Items {
		a, err := valueOf(idx, k, it.From)
		if err != nil {
			return err
		}
		b := a
		if it.To != nil {
			if b, err = valueOf(idx, k, it.To); err != nil {
				return err
			}
			if a > b {
				return newError(idx, k, it.Pos, "%s range %s is reversed: its start is after its end (to wrap around, write %s)",
					k.name(), itemText(it), wrapHint(k, a, b))
			}
		}
		sp.set(k, a, b)
	}
	return nil
}

// valueOf is the number a value stands for, checked against the field's
// range; l and last stand for the greatest value.
func valueOf(idx int, k fieldKind, v *value) (int, error) {
	lo, hi := k.bounds()
	if v.Last != nil {
		return hi, nil
	}
	n, err := strconv.Atoi(*v.Number)
	if err != nil || n < lo || n > hi {
		return 0, newError(idx, k, v.Pos, "%s value %s out of range %s", k.name(), *v.Number, k.rangeText())
	}
	return n, nil
}

// itemText is an item as written, for messages.
func itemText(it *item) string {
	text := func(v *value) string {
		if v.Last != nil {
			return *v.Last
		}
		return *v.Number
	}
	s := text(it.From)
	if it.To != nil {
		s += "-" + text(it.To)
	}
	return s
}

// wrapHint suggests the two ranges that a reversed range a-b probably
// meant, such as 22-23,0-2 for 22-2.
func wrapHint(k fieldKind, a, b int) string {
	lo, hi := k.bounds()
	if k == fDayOfWeek {
		lo = 1
		b = max(b, 1)
	}
	part := func(x, y int) string {
		if x == y {
			return strconv.Itoa(x)
		}
		return strconv.Itoa(x) + "-" + strconv.Itoa(y)
	}
	return strings.Join([]string{part(a, hi), part(lo, b)}, ",")
}

// roundMilli rounds a millisecond value down to the nearest of the values
// 0, 19, 39, 59, ..., 979, 999 (see the package documentation).
func roundMilli(v int) int {
	if v < 19 {
		return 0
	}
	return 19 + (v-19)/20*20
}

// set adds the values a to b inclusive (as written, already range-checked)
// to field k.
func (sp *spec) set(k fieldKind, a, b int) {
	switch k {
	case fMillisecond:
		for v := roundMilli(a); v <= roundMilli(b); v++ {
			sp.ms[v/64] |= 1 << (v % 64)
		}
	case fSecond:
		sp.second |= bitRange(a, b)
	case fMinute:
		sp.minute |= bitRange(a, b)
	case fHour:
		sp.hour |= uint32(bitRange(a, b))
	case fDayOfMonth:
		sp.dom |= uint32(bitRange(a, b))
	case fMonth:
		sp.month |= uint16(bitRange(a, b))
	case fDayOfWeek:
		// Written 1-7 with 1 = Sunday (0 also Sunday); stored as time.Weekday.
		sp.dow |= uint8(bitRange(max(a, 1)-1, max(b, 1)-1))
	}
}

// bitRange is a mask with bits a to b set, 0 <= a <= b <= 63.
func bitRange(a, b int) uint64 {
	return (^uint64(0) >> (63 - b)) &^ (1<<a - 1)
}
