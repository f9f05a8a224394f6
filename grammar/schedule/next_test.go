package schedule

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ts parses an RFC 3339 time for a test, in UTC unless it carries an offset.
func ts(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("bad test time %q: %v", s, err)
	}
	return v
}

const layout = "2006-01-02T15:04:05.000Z07:00"

// A tuesday: 2026-05-12 is a Tuesday.
const tuesday = "2026-05-12T10:17:23.456Z"

func TestNext(t *testing.T) {
	tests := []struct {
		name, src, after, want string
	}{
		// Table 6-1, in order.
		{"next nearest half-hour", "0 0 0,30 * * * *", tuesday, "2026-05-12T10:30:00.000Z"},
		{"half-hour, strictly after", "0 0 0,30 * * * *", "2026-05-12T10:30:00Z", "2026-05-12T11:00:00.000Z"},
		{"half-hour, just before", "0 0 0,30 * * * *", "2026-05-12T10:29:59.999Z", "2026-05-12T10:30:00.000Z"},
		{"half-hour, sub-millisecond after", "0 0 0,30 * * * *", "2026-05-12T10:30:00.000001Z", "2026-05-12T11:00:00.000Z"},
		{"half-hour, over midnight and the year", "0 0 0,30 * * * *", "2026-12-31T23:45:00Z", "2027-01-01T00:00:00.000Z"},

		{"first minute of half hours at 4 and 5", "* * 0,30 4-5 * * *", tuesday, "2026-05-13T04:00:00.000Z"},
		{"first minute of half hours, inside", "* * 0,30 4-5 * * *", "2026-05-13T04:00:00Z", "2026-05-13T04:00:00.001Z"},
		{"first minute of half hours, end of a minute", "* * 0,30 4-5 * * *", "2026-05-13T04:00:59.999Z", "2026-05-13T04:30:00.000Z"},
		{"first minute of half hours, last one", "* * 0,30 4-5 * * *", "2026-05-13T05:30:59.999Z", "2026-05-14T04:00:00.000Z"},

		{"9 to 5, inside", "* * * 9-16 * * *", tuesday, "2026-05-12T10:17:23.457Z"},
		{"9 to 5, before", "* * * 9-16 * * *", "2026-05-12T08:00:00Z", "2026-05-12T09:00:00.000Z"},
		{"9 to 5, last instant", "* * * 9-16 * * *", "2026-05-12T16:59:59.998Z", "2026-05-12T16:59:59.999Z"},
		{"9 to 5, after", "* * * 9-16 * * *", "2026-05-12T16:59:59.999Z", "2026-05-13T09:00:00.000Z"},

		// Erratum: captioned "the second Tuesday", but 2 is Monday.
		{"second Monday (Table 6-1: Tuesday)", "* * * * 8-14 * 2", tuesday, "2026-06-08T00:00:00.000Z"},
		{"second Monday, within it", "* * * * 8-14 * 2", "2026-05-11T23:59:59.998Z", "2026-05-11T23:59:59.999Z"},
		{"second Tuesday is 3", "* * * * 8-14 * 3", "2026-05-13T00:00:00Z", "2026-06-09T00:00:00.000Z"},

		// Erratum: 0 for Sunday.
		{"Sunday afternoon, 0", "* * * 13-16 * * 0", tuesday, "2026-05-17T13:00:00.000Z"},
		{"Sunday afternoon, 1", "* * * 13-16 * * 1", tuesday, "2026-05-17T13:00:00.000Z"},
		{"Sunday afternoon, last instant", "* * * 13-16 * * 0", "2026-05-17T16:59:59.999Z", "2026-05-24T13:00:00.000Z"},

		// Erratum: "* * * * * 31 *" is a parse error; the last day of the
		// month is 31 in the dayOfMonth field.
		{"last day of the month", "* * * * 31 * *", tuesday, "2026-05-31T00:00:00.000Z"},
		{"last day of April", "0 0 0 0 31 * *", "2026-04-01T00:00:00Z", "2026-04-30T00:00:00.000Z"},
		{"last day, then next month", "0 0 0 0 31 * *", "2026-04-30T00:00:00Z", "2026-05-31T00:00:00.000Z"},
		{"last day of February", "0 0 0 0 31 * *", "2026-02-01T00:00:00Z", "2026-02-28T00:00:00.000Z"},
		{"last day of February, leap", "0 0 0 0 31 * *", "2028-02-01T00:00:00Z", "2028-02-29T00:00:00.000Z"},
		{"last day with l", "0 0 0 0 l * *", "2026-06-01T00:00:00Z", "2026-06-30T00:00:00.000Z"},

		{"April 15th on a Sunday", "* * * * 15 4 1", tuesday, "2029-04-15T00:00:00.000Z"},
		{"April 15th on a Sunday, within it", "* * * * 15 4 1", "2029-04-15T12:00:00Z", "2029-04-15T12:00:00.001Z"},
		{"April 15th on a Sunday, the one after", "* * * * 15 4 1", "2029-04-15T23:59:59.999Z", "2035-04-15T00:00:00.000Z"},

		{"weekday 1 A.M.: Tuesday to Wednesday", "0 0 0 1 * * 2-6;0 0 0 2 * * 1,7", tuesday, "2026-05-13T01:00:00.000Z"},
		{"Friday to Saturday 2 A.M.", "0 0 0 1 * * 2-6;0 0 0 2 * * 1,7", "2026-05-15T01:00:00Z", "2026-05-16T02:00:00.000Z"},
		{"Saturday to Sunday 2 A.M.", "0 0 0 1 * * 2-6;0 0 0 2 * * 1,7", "2026-05-16T03:00:00Z", "2026-05-17T02:00:00.000Z"},
		{"Sunday to Monday 1 A.M.", "0 0 0 1 * * 2-6;0 0 0 2 * * 1,7", "2026-05-17T02:00:00Z", "2026-05-18T01:00:00.000Z"},
		{"soonest of three", "0 0 0 23 * * *;0 0 0 12 * * *;0 0 0 11 * * *", tuesday, "2026-05-12T11:00:00.000Z"},

		// Leap years and clamping.
		{"Feb 29 clamps to 28", "0 0 0 0 29 2 *", "2026-03-01T00:00:00Z", "2027-02-28T00:00:00.000Z"},
		{"Feb 29 in a leap year", "0 0 0 0 29 2 *", "2027-03-01T00:00:00Z", "2028-02-29T00:00:00.000Z"},
		{"Feb 29 is not also the 28th", "0 0 0 0 29 2 *", "2028-02-27T12:00:00Z", "2028-02-29T00:00:00.000Z"},
		{"Feb 28 and 29 in a leap year", "0 0 0 0 28,29 2 *", "2028-02-28T00:00:00Z", "2028-02-29T00:00:00.000Z"},
		{"Feb 28 and 29, not leap: once", "0 0 0 0 28,29 2 *", "2027-02-28T00:00:00Z", "2028-02-28T00:00:00.000Z"},
		{"2100 is not a leap year", "0 0 0 0 29 2 *", "2100-01-01T00:00:00Z", "2100-02-28T00:00:00.000Z"},
		{"2400 is a leap year", "0 0 0 0 29 2 *", "2399-12-31T00:00:00Z", "2400-02-29T00:00:00.000Z"},
		{"29-31 in a 28-day February", "0 0 0 0 29-31 2 *", "2027-02-01T00:00:00Z", "2027-02-28T00:00:00.000Z"},
		{"30 in 30-day months stays", "0 0 0 0 30 * *", "2026-04-01T00:00:00Z", "2026-04-30T00:00:00.000Z"},
		{"31 skips to the next month end", "0 0 0 0 31 1-12 *", "2026-01-31T00:00:00Z", "2026-02-28T00:00:00.000Z"},
		{"dom and dow both match", "0 0 0 0 13 * 6", tuesday, "2026-11-13T00:00:00.000Z"}, // Friday the 13th
		{"clamped day must be the weekday", "0 0 0 0 31 2 2", "2026-01-01T00:00:00Z", "2033-02-28T00:00:00.000Z"},

		// last in every field.
		{"l in every field", "l l l l l l l", "2026-01-01T00:00:00Z", "2033-12-31T23:59:59.999Z"},
		{"last ms", "last * * * * * *", tuesday, "2026-05-12T10:17:23.999Z"},
		{"last second", "0 Last * * * * *", tuesday, "2026-05-12T10:17:59.000Z"},
		{"last minute", "0 0 LAST * * * *", tuesday, "2026-05-12T10:59:00.000Z"},
		{"last hour", "0 0 0 l * * *", tuesday, "2026-05-12T23:00:00.000Z"},
		{"last month", "0 0 0 0 1 L *", tuesday, "2026-12-01T00:00:00.000Z"},
		{"last day of week is Saturday", "0 0 0 0 * * last", tuesday, "2026-05-16T00:00:00.000Z"},

		// Lists mixing values and ranges.
		{"9-17,0 from 10", "0 0 0 9-17,0 * * *", tuesday, "2026-05-12T11:00:00.000Z"},
		{"9-17,0 from 17", "0 0 0 9-17,0 * * *", "2026-05-12T17:00:00Z", "2026-05-13T00:00:00.000Z"},
		{"9-17,0 from 0", "0 0 0 9-17,0 * * *", "2026-05-13T00:00:00Z", "2026-05-13T09:00:00.000Z"},
		{"quarter hours", "0 0 0,15,30,45 * * * *", tuesday, "2026-05-12T10:30:00.000Z"},

		// Milliseconds.
		{"ms 40 is 39", "40 * * * * * *", tuesday, "2026-05-12T10:17:24.039Z"},
		{"ms 0-40 is 0-39", "0-40 * * * * * *", "2026-05-12T10:17:23.039Z", "2026-05-12T10:17:24.000Z"},
		{"ms 50-999 starts at 39", "50-999 * * * * * *", "2026-05-12T10:17:23Z", "2026-05-12T10:17:23.039Z"},
		{"ms every", "* * * * * * *", tuesday, "2026-05-12T10:17:23.457Z"},
		{"ms carries to the next year", "* * * * * * *", "2026-12-31T23:59:59.999Z", "2027-01-01T00:00:00.000Z"},

		// Whitespace variants.
		{"tabs and newlines", "\t0\n0 \r\n0,30  *\t*\n* *  ", tuesday, "2026-05-12T10:30:00.000Z"},

		// Offsets: the schedule reads the wall clock of after's Location.
		{"in a fixed zone", "0 0 0 9 * * *", "2026-05-12T10:17:23.456+02:00", "2026-05-13T09:00:00.000+02:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := ts(t, tt.after)
			got := MustParse(tt.src).Next(after)
			if s := got.Format(layout); s != tt.want {
				t.Errorf("Next(%q, %s) = %s, want %s", tt.src, tt.after, s, tt.want)
			}
		})
	}
}

func TestNextWeekdayErrata(t *testing.T) {
	// "* * * * 8-14 * 2" over a year: always the second Monday.
	s := MustParse("0 0 0 0 8-14 * 2")
	at := ts(t, "2026-01-01T00:00:00Z")
	for range 12 {
		at = s.Next(at)
		if at.Weekday() != time.Monday || at.Day() < 8 || at.Day() > 14 {
			t.Fatalf("Next = %s (%s), want the second Monday", at.Format(layout), at.Weekday())
		}
	}
}

func TestNextMillis(t *testing.T) {
	after := ts(t, tuesday).UnixMilli()
	got, err := NextMillis("0 0 0,30 * * * *", after, time.UTC)
	if err != nil || got != ts(t, "2026-05-12T10:30:00Z").UnixMilli() {
		t.Errorf("NextMillis = %d, %v; want %d", got, err, ts(t, "2026-05-12T10:30:00Z").UnixMilli())
	}
	rel, err := NextMillisRelative("0 0 0,30 * * * *", after, time.UTC)
	if want := int64(12*60*1000 + 36*1000 + 544); err != nil || rel != want {
		t.Errorf("NextMillisRelative = %d, %v; want %d", rel, err, want)
	}
	berlin := loadLocation(t, "Europe/Berlin")
	rel, err = NextMillisRelative("0 0 0 12 * * *", after, berlin) // 12:17 in Berlin
	if want := int64(23*3600*1000 + 42*60*1000 + 36*1000 + 544); err != nil || rel != want {
		t.Errorf("NextMillisRelative in Berlin = %d, %v; want %d", rel, err, want)
	}
	if _, err := NextMillis("* * * * * 31 *", after, nil); err == nil || !strings.Contains(err.Error(), "month") {
		t.Errorf("NextMillis of a bad schedule: %v, want a month error", err)
	}
	if _, err := NextMillis("* * * * * * *", 1<<63-1, time.UTC); err == nil {
		t.Error("NextMillis at the end of int64: no error")
	}
}

func TestRecurrenceBound(t *testing.T) {
	// The package documentation promises that successive matches of every
	// schedule Parse accepts are at most 12 years apart, well inside
	// HorizonYears. Only dayOfMonth, month and dayOfWeek can make a year
	// go without a match; check every single-value combination of them over
	// a full 400-year Gregorian cycle and more.
	worst := 0
	for m := 1; m <= 12; m++ {
		for d := 1; d <= 31; d++ {
			for w := range 7 {
				sp := spec{dom: 1 << d, month: 1 << m, dow: 1 << w}
				prev := -1
				for y := 1600; y < 2100; y++ {
					days := sp.days(y, m)
					day := nextBit(days, 1)
					if day < 0 || sp.dow&(1<<weekday(y, m, day)) == 0 {
						continue
					}
					if prev >= 0 {
						worst = max(worst, y-prev)
					}
					prev = y
				}
			}
		}
	}
	if worst != 12 || worst >= HorizonYears {
		t.Errorf("longest gap between matching years %d, documented 12 (horizon %d)", worst, HorizonYears)
	}
}

// bruteNext is the earliest wall-clock time after after's that sp matches,
// found by trying every day and then every hour, minute, second and
// millisecond in turn, with no skipping beyond the prefix already passed.
func bruteNext(sp *spec, after civil) (civil, bool) {
	y, mo, d := after.year, after.month, after.day
	for range 366 * 14 {
		last := daysIn(y, mo)
		domOK := false
		for v := 1; v <= 31; v++ {
			if sp.dom&(1<<v) != 0 && min(v, last) == d {
				domOK = true
			}
		}
		if domOK && sp.month&(1<<mo) != 0 && sp.dow&(1<<weekday(y, mo, d)) != 0 {
			sameDay := y == after.year && mo == after.month && d == after.day
			for h := 0; h < 24; h++ {
				if sp.hour&(1<<h) == 0 || sameDay && h < after.hour {
					continue
				}
				sameH := sameDay && h == after.hour
				for mi := 0; mi < 60; mi++ {
					if sp.minute&(1<<mi) == 0 || sameH && mi < after.minute {
						continue
					}
					sameMi := sameH && mi == after.minute
					for s := 0; s < 60; s++ {
						if sp.second&(1<<s) == 0 || sameMi && s < after.second {
							continue
						}
						sameS := sameMi && s == after.second
						for ms := 0; ms < 1000; ms++ {
							if sp.ms[ms/64]&(1<<(ms%64)) == 0 || sameS && ms <= after.milli {
								continue
							}
							return civil{y, mo, d, h, mi, s, ms}, true
						}
					}
				}
			}
		}
		if d++; d > last {
			d = 1
			if mo++; mo > 12 {
				mo = 1
				y++
			}
		}
	}
	return civil{}, false
}

// randomSchedule writes a random valid schedule.
func randomSchedule(r *rand.Rand) string {
	var b strings.Builder
	for k := fMillisecond; k < numFields; k++ {
		if k > 0 {
			b.WriteByte(' ')
		}
		lo, hi := k.bounds()
		if r.IntN(4) == 0 {
			b.WriteByte('*')
			continue
		}
		value := func() int {
			if r.IntN(8) == 0 {
				return hi
			}
			// Favour small spans so that narrow fields are common.
			return lo + r.IntN(hi-lo+1)
		}
		for i := range 1 + r.IntN(3) {
			if i > 0 {
				b.WriteByte(',')
			}
			a, c := value(), value()
			if a > c {
				a, c = c, a
			}
			writeValue := func(v int) {
				if v == hi && r.IntN(2) == 0 {
					b.WriteString("l")
				} else {
					b.WriteString(strconv.Itoa(v))
				}
			}
			writeValue(a)
			if a != c {
				b.WriteByte('-')
				writeValue(c)
			}
		}
	}
	return b.String()
}

func TestNextMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 400
	if testing.Short() {
		n = 50
	}
	for range n {
		src := randomSchedule(r)
		s := MustParse(src)
		after := time.UnixMilli(r.Int64N(3_000_000_000_000)).UTC().Add(time.Duration(r.IntN(1e6)))
		got := s.Next(after)
		want, ok := bruteNext(&s.specs[0], civilOf(after))
		if !ok {
			t.Fatalf("brute force found nothing for %q after %s", src, after.Format(time.RFC3339Nano))
		}
		if civilOf(got) != want || got.Nanosecond()%1e6 != 0 {
			t.Fatalf("Next(%q, %s) = %s, brute force %+v", src, after.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano), want)
		}
	}
}
