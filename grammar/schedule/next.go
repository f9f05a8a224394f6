package schedule

import (
	"fmt"
	"math/bits"
	"time"
)

// HorizonYears bounds the search of Next: it looks for a matching wall-clock
// time in at most this many calendar years after the given instant and
// returns the zero time beyond. Every schedule that Parse accepts matches at
// least once every 12 years, so in practice the zero time is only returned
// near the end of time.Time's range.
const HorizonYears = 100

// Next returns the earliest instant strictly after after at which the
// schedule is due, in after's Location, with millisecond precision. The
// schedule is read as wall-clock time in that Location; see the package
// documentation for daylight-saving transitions. Next returns the zero
// time when nothing matches within HorizonYears.
//
// The equivalent of WebLogic's Schedule.nextScheduledTime(schedule) is
// s.Next(time.Now()).
func (s *Schedule) Next(after time.Time) time.Time {
	loc := after.Location()
	from := maxWall(after).addMilli()
	best, ok := s.nextWall(from, from.year+HorizonYears)
	if !ok {
		return time.Time{}
	}
	t := resolve(best, loc)
	if g, in := gapOf(best, loc); in {
		// A skipped wall time is due a gap's length later (see resolve),
		// so wall times just after the gap can be due before it.
		if w, ok := s.nextWall(g.end, g.end.year); ok {
			if u := resolve(w, loc); u.Before(t) {
				t = u
			}
		}
	}
	// Just after a gap, skipped wall times already behind the wall clock
	// can still be due: those the clock before the change would not yet
	// have shown.
	if g, ok := gapBefore(after); ok {
		if w, ok := s.nextWall(g.wallBefore(after).addMilli(), g.end.year); ok && w.less(g.end) {
			if u := resolve(w, loc); u.After(after) && u.Before(t) {
				t = u
			}
		}
	}
	if !t.After(after) {
		// Unreachable by construction (see maxWall); never return a time
		// that is not after after.
		return time.Time{}
	}
	return t
}

// nextWall is the earliest wall-clock reading at or after from that any
// of the schedules matches, searching no later than the end of year limit.
func (s *Schedule) nextWall(from civil, limit int) (civil, bool) {
	var best civil
	found := false
	for i := range s.specs {
		w, ok := s.specs[i].next(from, limit)
		if ok && (!found || w.less(best)) {
			best, found = w, true
		}
	}
	return best, found
}

// NextMillis parses src and returns the next time it is due strictly after
// afterMillis (milliseconds since the Unix epoch), reading the schedule as
// wall-clock time in loc (time.Local if nil). It is the equivalent of
// WebLogic's Schedule.nextScheduledTimeInMillis.
func NextMillis(src string, afterMillis int64, loc *time.Location) (int64, error) {
	s, err := Parse(src)
	if err != nil {
		return 0, err
	}
	if loc == nil {
		loc = time.Local
	}
	after := time.UnixMilli(afterMillis).In(loc)
	t := s.Next(after)
	// UnixMilli wraps around beyond the int64 range; that too is no time.
	if t.IsZero() || t.UnixMilli() <= afterMillis {
		return 0, fmt.Errorf("schedule %q: no time within %d years after %s", src, HorizonYears, after.Format(time.RFC3339Nano))
	}
	return t.UnixMilli(), nil
}

// NextMillisRelative is NextMillis as a delay: the milliseconds from
// afterMillis to the next time src is due, always positive. It is the
// equivalent of WebLogic's Schedule.nextScheduledTimeInMillisRelative; for
// the delay from now pass time.Now().UnixMilli().
func NextMillisRelative(src string, afterMillis int64, loc *time.Location) (int64, error) {
	next, err := NextMillis(src, afterMillis, loc)
	if err != nil {
		return 0, err
	}
	return next - afterMillis, nil
}

// civil is a wall-clock reading with millisecond precision, independent of
// any time zone.
type civil struct {
	year                                    int
	month, day, hour, minute, second, milli int
}

// civilOf is t's wall-clock reading in its own Location, truncated to the
// millisecond.
func civilOf(t time.Time) civil {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return civil{y, int(mo), d, h, mi, s, t.Nanosecond() / 1e6}
}

// less reports whether c is earlier than d.
func (c civil) less(d civil) bool {
	switch {
	case c.year != d.year:
		return c.year < d.year
	case c.month != d.month:
		return c.month < d.month
	case c.day != d.day:
		return c.day < d.day
	case c.hour != d.hour:
		return c.hour < d.hour
	case c.minute != d.minute:
		return c.minute < d.minute
	case c.second != d.second:
		return c.second < d.second
	}
	return c.milli < d.milli
}

// addMilli is the wall-clock reading one millisecond after c.
func (c civil) addMilli() civil {
	if c.milli++; c.milli < 1000 {
		return c
	}
	c.milli = 0
	if c.second++; c.second < 60 {
		return c
	}
	c.second = 0
	if c.minute++; c.minute < 60 {
		return c
	}
	c.minute = 0
	if c.hour++; c.hour < 24 {
		return c
	}
	c.hour = 0
	if c.day++; c.day <= daysIn(c.year, c.month) {
		return c
	}
	c.day = 1
	if c.month++; c.month <= 12 {
		return c
	}
	c.month = 1
	c.year++
	return c
}

// daysIn is the number of days in a month of the proleptic Gregorian
// calendar.
func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// weekday is the day of the week of a date.
func weekday(year, month, day int) time.Weekday {
	return time.Date(year, time.Month(month), day, 12, 0, 0, 0, time.UTC).Weekday()
}

// nextBit is the smallest i >= from with bit i of set, or -1.
func nextBit(set uint64, from int) int {
	if from >= 64 {
		return -1
	}
	rest := set >> from
	if rest == 0 {
		return -1
	}
	return from + bits.TrailingZeros64(rest)
}

// nextMilli is the smallest matching millisecond >= from, or -1.
func (sp *spec) nextMilli(from int) int {
	for w := from / 64; w < len(sp.ms); w++ {
		word := sp.ms[w]
		if w == from/64 {
			word &^= 1<<(from%64) - 1
		}
		if word != 0 {
			if v := w*64 + bits.TrailingZeros64(word); v < 1000 {
				return v
			}
			return -1
		}
	}
	return -1
}

// days is the set of days of year/month that the day-of-month field
// matches: the values as written, with those beyond the month's last day
// clamped to it.
func (sp *spec) days(year, month int) uint64 {
	last := daysIn(year, month)
	set := uint64(sp.dom) & bitRange(1, last)
	if uint64(sp.dom)>>(last+1) != 0 {
		set |= 1 << last
	}
	return set
}

// next is the earliest wall-clock reading at or after from that matches sp,
// searching no later than the end of year limit. It skips whole months,
// days, hours, minutes and seconds that cannot match.
func (sp *spec) next(from civil, limit int) (civil, bool) {
	c := from
	allWeekdays := sp.dow == 0x7f
	for c.year <= limit {
		// Month.
		if sp.month&(1<<c.month) == 0 {
			m := nextBit(uint64(sp.month), c.month)
			if m < 0 {
				c = civil{year: c.year + 1, month: 1, day: 1}
				continue
			}
			c = civil{year: c.year, month: m, day: 1}
		}
		// Day: day-of-month (clamped) and day-of-week must both match.
		days := sp.days(c.year, c.month)
		d := nextBit(days, c.day)
		for d >= 0 && !allWeekdays && sp.dow&(1<<weekday(c.year, c.month, d)) == 0 {
			d = nextBit(days, d+1)
		}
		if d < 0 {
			c = nextMonth(c)
			continue
		}
		if d != c.day {
			c = civil{year: c.year, month: c.month, day: d}
		}
		// Hour.
		h := nextBit(uint64(sp.hour), c.hour)
		if h < 0 {
			c = civil{year: c.year, month: c.month, day: c.day + 1}
			if c.day > daysIn(c.year, c.month) {
				c = nextMonth(c)
			}
			continue
		}
		if h != c.hour {
			c.hour, c.minute, c.second, c.milli = h, 0, 0, 0
		}
		// Minute.
		mi := nextBit(sp.minute, c.minute)
		if mi < 0 {
			c.hour, c.minute, c.second, c.milli = c.hour+1, 0, 0, 0
			continue // hour 24 finds no bit and moves to the next day
		}
		if mi != c.minute {
			c.minute, c.second, c.milli = mi, 0, 0
		}
		// Second.
		s := nextBit(sp.second, c.second)
		if s < 0 {
			c.minute, c.second, c.milli = c.minute+1, 0, 0
			continue
		}
		if s != c.second {
			c.second, c.milli = s, 0
		}
		// Millisecond.
		ms := sp.nextMilli(c.milli)
		if ms < 0 {
			c.second, c.milli = c.second+1, 0
			continue
		}
		c.milli = ms
		return c, true
	}
	return civil{}, false
}

// nextMonth is midnight on the first day of the month after c's.
func nextMonth(c civil) civil {
	if c.month == 12 {
		return civil{year: c.year + 1, month: 1, day: 1}
	}
	return civil{year: c.year, month: c.month + 1, day: 1}
}

// overlapWindow bounds how far back maxWall and resolve look for a zone
// transition that matters: no transition in the tz database moves the wall
// clock by more than a day.
const overlapWindow = 72 * time.Hour

// maxWall is the latest wall-clock reading shown at or before after, in
// after's Location. It is after's own reading except during a repeated
// interval after the clocks were put back, when it is the reading just
// before they were put back. A wall-clock time w has been reached by after
// exactly when w <= maxWall(after).
func maxWall(after time.Time) civil {
	m := civilOf(after)
	t := after
	for range 16 {
		start, _ := t.ZoneBounds()
		if start.IsZero() || after.Sub(start) > overlapWindow {
			break
		}
		t = start.Add(-time.Nanosecond)
		if w := civilOf(t); m.less(w) {
			m = w
		}
	}
	return m
}

// resolve is the instant at which the wall-clock time w in loc is due: w's
// only instant if it occurs once, its first occurrence if the clocks were
// put back over it, and, if the clocks skipped it, the instant w names in
// the offset in force before the gap: a gap's length after the wall clock
// would have shown it, as java.util.GregorianCalendar, which WebLogic's
// Schedule uses, resolves it (02:50 on a day New York skips 02:00-03:00 is
// 03:50 EDT).
func resolve(w civil, loc *time.Location) time.Time {
	if g, in := gapOf(w, loc); in {
		return w.in(g.offsetBefore).In(loc)
	}
	t := time.Date(w.year, time.Month(w.month), w.day, w.hour, w.minute, w.second, w.milli*1e6, loc)
	// w occurs; move to an earlier occurrence in the zone before, if any.
	for range 4 {
		start, _ := t.ZoneBounds()
		if start.IsZero() || t.Sub(start) > overlapWindow {
			break
		}
		_, offset := start.Add(-time.Nanosecond).Zone()
		earlier := w.in(offset).In(loc)
		if !earlier.Before(start) || civilOf(earlier) != w {
			break
		}
		t = earlier
	}
	return t
}

// in is the instant c names at a fixed offset east of UTC, in seconds.
func (c civil) in(offset int) time.Time {
	asUTC := time.Date(c.year, time.Month(c.month), c.day, c.hour, c.minute, c.second, c.milli*1e6, time.UTC)
	return asUTC.Add(-time.Duration(offset) * time.Second)
}

// gap is a transition at which the clocks were put forward: the wall
// clock read start (in the old offset) at the instant at, and then end.
// The wall times from start up to but not including end do not occur.
type gap struct {
	at           time.Time
	start, end   civil
	offsetBefore int // seconds east of UTC before the transition
}

// wallBefore is what the wall clock would read at t had the clocks not
// been put forward.
func (g gap) wallBefore(t time.Time) civil {
	return civilOf(t.In(time.FixedZone("", g.offsetBefore)))
}

// gapOf reports whether the clocks in loc skip the wall-clock time w, and
// the gap that does.
func gapOf(w civil, loc *time.Location) (gap, bool) {
	t := time.Date(w.year, time.Month(w.month), w.day, w.hour, w.minute, w.second, w.milli*1e6, loc)
	got := civilOf(t)
	var at time.Time
	switch {
	case got == w:
		return gap{}, false
	case w.less(got):
		// t lies after the gap, which ended when t's zone began.
		at, _ = t.ZoneBounds()
	default:
		// t lies before the gap, which ends when t's zone ends.
		_, at = t.ZoneBounds()
	}
	if at.IsZero() {
		return gap{}, false
	}
	g, ok := gapAt(at)
	if !ok || w.less(g.start) || !w.less(g.end) {
		return gap{}, false
	}
	return g, true
}

// gapAt describes the transition at the instant at, if it put the clocks
// forward.
func gapAt(at time.Time) (gap, bool) {
	before := at.Add(-time.Nanosecond)
	_, offBefore := before.Zone()
	_, offAfter := at.Zone()
	if offAfter <= offBefore {
		return gap{}, false
	}
	g := gap{at: at, end: civilOf(at), offsetBefore: offBefore}
	g.start = civilOf(at.In(time.FixedZone("", offBefore)))
	return g, true
}

// gapBefore finds a gap whose skipped wall times are not all due yet at
// after: one whose transition is at or before after by less than the
// gap's length.
func gapBefore(after time.Time) (gap, bool) {
	start, _ := after.ZoneBounds()
	if start.IsZero() || after.Before(start) || after.Sub(start) > overlapWindow {
		return gap{}, false
	}
	g, ok := gapAt(start)
	if !ok {
		return gap{}, false
	}
	_, offAfter := start.Zone()
	if after.Sub(start) >= time.Duration(offAfter-g.offsetBefore)*time.Second {
		return gap{}, false
	}
	return g, true
}
