package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParse parses arbitrary text. A failure must be an *Error whose
// position lies within the text; a schedule that parses must give a Next
// that is after the given time, or the zero time, in every zone tried.
func FuzzParse(f *testing.F) {
	// More seeds are in testdata/fuzz/FuzzParse.
	f.Add("0 0 0,30 * * * *", int64(1778581043456), uint8(0))
	f.Add("l l l l l l l;* * * * 8-14 * 2", int64(-62135596800000), uint8(1))
	zones := []*time.Location{time.UTC}
	for _, name := range []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Apia"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			f.Fatal(err)
		}
		zones = append(zones, loc)
	}
	f.Fuzz(func(t *testing.T, src string, afterMillis int64, zone uint8) {
		s, err := Parse(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q) error %T %v, want *Error", src, err, err)
			}
			if e.Offset < 0 || e.Offset > len(src) || e.Line < 1 || e.Column < 1 ||
				e.Column > utf8.RuneCountInString(src)+1 || e.Msg == "" {
				t.Fatalf("Parse(%q): bad error %+v", src, e)
			}
			switch e.Field {
			case "", "millisecond", "second", "minute", "hour", "dayOfMonth", "month", "dayOfWeek":
			default:
				t.Fatalf("Parse(%q): bad field in %+v", src, e)
			}
			if e.Schedule < 0 || e.Schedule > strings.Count(src, ";") {
				t.Fatalf("Parse(%q): bad schedule index in %+v", src, e)
			}
			return
		}
		after := time.UnixMilli(afterMillis).In(zones[int(zone)%len(zones)])
		if next := s.Next(after); !next.IsZero() && !next.After(after) {
			t.Fatalf("Next(%q, %s) = %s, not after", src, after.Format(time.RFC3339Nano), next.Format(time.RFC3339Nano))
		}
	})
}
