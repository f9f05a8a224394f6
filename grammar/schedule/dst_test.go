package schedule

import (
	"testing"
	"time"
	_ "time/tzdata" // the transitions below, even without a system zoneinfo
)

func loadLocation(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

// In 2026 New York springs forward on 8 March (02:00 EST becomes 03:00 EDT)
// and falls back on 1 November (02:00 EDT becomes 01:00 EST); Berlin springs
// forward on 29 March (02:00 CET becomes 03:00 CEST) and falls back on 25
// October (03:00 CEST becomes 02:00 CET). Go's time.Date resolves a skipped
// time before the gap in New York and after it in Berlin, and a repeated
// time to its first occurrence in New York and its second in Berlin, so
// both zones are tested.
func TestNextDST(t *testing.T) {
	tests := []struct {
		name, zone, src, after, want string
	}{
		// Gap: a wall time that does not exist is due the gap's length
		// later, as java.util.GregorianCalendar resolves it: 02:50 EST,
		// which the clock never shows, is 03:50 EDT.
		{"NY gap: 02:50 is due at 03:50 EDT", "America/New_York", "0 0 50 2 * * *", "2026-03-08T00:00:00-05:00", "2026-03-08T03:50:00.000-04:00"},
		{"NY gap: 02:30 is due at 03:30 EDT", "America/New_York", "0 0 30 2 * * *", "2026-03-08T00:00:00-05:00", "2026-03-08T03:30:00.000-04:00"},
		{"NY gap: still due after the gap", "America/New_York", "0 0 30 2 * * *", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00.000-04:00"},
		{"NY gap: then the next day", "America/New_York", "0 0 30 2 * * *", "2026-03-08T03:30:00-04:00", "2026-03-09T02:30:00.000-04:00"},
		{"NY gap: 03:10 comes before 02:50", "America/New_York", "0 0 50 2 * * *;0 0 10 3 * * *", "2026-03-08T01:50:00-05:00", "2026-03-08T03:10:00.000-04:00"},
		{"NY gap: then 02:50 at 03:50", "America/New_York", "0 0 50 2 * * *;0 0 10 3 * * *", "2026-03-08T03:10:00-04:00", "2026-03-08T03:50:00.000-04:00"},
		{"NY gap: then the next day's 02:50", "America/New_York", "0 0 50 2 * * *;0 0 10 3 * * *", "2026-03-08T03:50:00-04:00", "2026-03-09T02:50:00.000-04:00"},
		{"NY gap: one schedule, both", "America/New_York", "0 0 10,50 2,3 * * *", "2026-03-08T01:50:00-05:00", "2026-03-08T03:10:00.000-04:00"},
		{"NY gap: 02:50 from inside the shifted hour", "America/New_York", "0 0 10,50 2,3 * * *", "2026-03-08T03:20:00-04:00", "2026-03-08T03:50:00.000-04:00"},
		{"NY gap: 02:00 too", "America/New_York", "0 0 0 2 * * *", "2026-03-08T01:59:59.999-05:00", "2026-03-08T03:00:00.000-04:00"},
		{"NY gap: 03:00 exists", "America/New_York", "0 0 0 3 * * *", "2026-03-08T00:00:00-05:00", "2026-03-08T03:00:00.000-04:00"},
		{"NY gap: every ms jumps the gap", "America/New_York", "* * * * * * *", "2026-03-08T01:59:59.999-05:00", "2026-03-08T03:00:00.000-04:00"},
		{"NY gap: every ms goes on after it", "America/New_York", "* * * * * * *", "2026-03-08T03:00:00-04:00", "2026-03-08T03:00:00.001-04:00"},
		{"NY gap: half hours collapse once", "America/New_York", "0 0 0,30 * * * *", "2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00.000-04:00"},
		{"NY gap: half hours, after the gap", "America/New_York", "0 0 0,30 * * * *", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00.000-04:00"},
		{"NY gap: 02:xx during the gap hour", "America/New_York", "0 0 15,45 2 * * *", "2026-03-08T00:00:00-05:00", "2026-03-08T03:15:00.000-04:00"},
		{"NY gap: 02:xx, the second", "America/New_York", "0 0 15,45 2 * * *", "2026-03-08T03:15:00-04:00", "2026-03-08T03:45:00.000-04:00"},
		{"NY gap: after in UTC, result in UTC", "UTC", "0 0 30 2 * * *", "2026-03-08T00:00:00-05:00", "2026-03-09T02:30:00.000Z"},

		// Overlap: a wall time that occurs twice is due at its first occurrence only.
		{"NY overlap: first 01:30", "America/New_York", "0 0 30 1 * * *", "2026-11-01T00:00:00-04:00", "2026-11-01T01:30:00.000-04:00"},
		{"NY overlap: not the second 01:30", "America/New_York", "0 0 30 1 * * *", "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00.000-05:00"},
		{"NY overlap: half hours skip the repeat", "America/New_York", "0 0 0,30 * * * *", "2026-11-01T01:30:00-04:00", "2026-11-01T02:00:00.000-05:00"},
		{"NY overlap: from inside the repeat", "America/New_York", "0 0 0,30 * * * *", "2026-11-01T01:15:00-05:00", "2026-11-01T02:00:00.000-05:00"},
		{"NY overlap: every ms waits out the repeat", "America/New_York", "* * * * * * *", "2026-11-01T01:59:59.999-04:00", "2026-11-01T02:00:00.000-05:00"},
		{"NY overlap: 01:00 hour, first", "America/New_York", "* * * 1 * * *", "2026-11-01T00:59:59.999-04:00", "2026-11-01T01:00:00.000-04:00"},
		{"NY overlap: 01:00 hour, not repeated", "America/New_York", "* * * 1 * * *", "2026-11-01T01:59:59.999-04:00", "2026-11-02T01:00:00.000-05:00"},
		{"NY overlap: 02:00 EST", "America/New_York", "0 0 0 2 * * *", "2026-11-01T00:00:00-04:00", "2026-11-01T02:00:00.000-05:00"},

		{"Berlin gap: 02:30 at 03:30 CEST", "Europe/Berlin", "0 0 30 2 * * *", "2026-03-29T00:00:00+01:00", "2026-03-29T03:30:00.000+02:00"},
		{"Berlin gap: every ms", "Europe/Berlin", "* * * * * * *", "2026-03-29T01:59:59.999+01:00", "2026-03-29T03:00:00.000+02:00"},
		{"Berlin gap: 03:30 after the gap", "Europe/Berlin", "0 0 30 2,3 * * *", "2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00.000+02:00"},
		{"Berlin overlap: first 02:30", "Europe/Berlin", "0 0 30 2 * * *", "2026-10-25T00:00:00+02:00", "2026-10-25T02:30:00.000+02:00"},
		{"Berlin overlap: not the second", "Europe/Berlin", "0 0 30 2 * * *", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00.000+01:00"},
		{"Berlin overlap: from inside the repeat", "Europe/Berlin", "* * * * * * *", "2026-10-25T02:45:00+01:00", "2026-10-25T03:00:00.000+01:00"},
		{"Berlin overlap: 02:59:59.999 CEST", "Europe/Berlin", "* * * 2 * * *", "2026-10-25T02:59:59.998+02:00", "2026-10-25T02:59:59.999+02:00"},

		// Lord Howe Island moves its clocks by half an hour (02:00 to 02:30 on
		// 4 October 2026, 02:00 back to 01:30 on 5 April 2026).
		{"Lord Howe gap: half an hour later", "Australia/Lord_Howe", "0 0 15 2 * * *", "2026-10-04T00:00:00+10:30", "2026-10-04T02:45:00.000+11:00"},
		{"Lord Howe overlap", "Australia/Lord_Howe", "0 0 45 1 * * *", "2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00.000+10:30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc := loadLocation(t, tt.zone)
			after := ts(t, tt.after).In(loc)
			got := MustParse(tt.src).Next(after)
			if s := got.Format(layout); s != tt.want {
				t.Errorf("Next(%q, %s in %s) = %s, want %s", tt.src, tt.after, tt.zone, s, tt.want)
			}
			if got.Location() != loc {
				t.Errorf("Next returned a time in %v, want %v", got.Location(), loc)
			}
		})
	}
}

func TestNextDSTWalk(t *testing.T) {
	// Walking a whole year of half hours in New York: every result is after
	// the last, none repeats a wall time, and there are 2 per hour of wall
	// clock except on the two transition days.
	ny := loadLocation(t, "America/New_York")
	s := MustParse("0 0 0,30 * * * *")
	at := time.Date(2025, 12, 31, 23, 59, 0, 0, ny)
	seen := map[civil]bool{}
	perDay := map[string]int{}
	for {
		next := s.Next(at)
		if !next.After(at) {
			t.Fatalf("Next(%s) = %s, not after", at, next)
		}
		if next.Year() > 2026 {
			break
		}
		w := civilOf(next)
		if seen[w] {
			t.Fatalf("wall time %v twice", w)
		}
		seen[w] = true
		perDay[next.Format("2006-01-02")]++
		at = next
	}
	for day, n := range perDay {
		want := 48
		if day == "2026-03-08" {
			want = 46 // 02:00 and 03:00 are due at 03:00 EDT, 02:30 and 03:30 at 03:30 EDT
		}
		if day == "2026-11-01" {
			want = 48 // the repeated 01:00 and 01:30 are not due again
		}
		if n != want {
			t.Errorf("%s: %d half hours, want %d", day, n, want)
		}
	}
}
