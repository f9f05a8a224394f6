package schedule

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// values lists the values each field of sp matches, as ranges, in the
// order of the fields: "ms=0-39 s=0 min=0,30 h=* dom=* mon=* dow=*". A
// field matching every value it can is "*"; dow lists time.Weekday numbers
// (Sunday = 0).
func values(sp *spec) string {
	list := func(has func(int) bool, lo, hi int) string {
		var parts []string
		all := true
		for v := lo; v <= hi; v++ {
			if !has(v) {
				all = false
				continue
			}
			if v == lo || !has(v-1) {
				end := v
				for end < hi && has(end+1) {
					end++
				}
				if end == v {
					parts = append(parts, fmt.Sprint(v))
				} else {
					parts = append(parts, fmt.Sprintf("%d-%d", v, end))
				}
			}
		}
		if all {
			return "*"
		}
		return strings.Join(parts, ",")
	}
	bit := func(set uint64) func(int) bool { return func(v int) bool { return set&(1<<v) != 0 } }
	ms := func(v int) bool { return sp.ms[v/64]&(1<<(v%64)) != 0 }
	return fmt.Sprintf("ms=%s s=%s min=%s h=%s dom=%s mon=%s dow=%s",
		list(ms, 0, 999), list(bit(sp.second), 0, 59), list(bit(sp.minute), 0, 59),
		list(bit(uint64(sp.hour)), 0, 23), list(bit(uint64(sp.dom)), 1, 31),
		list(bit(uint64(sp.month)), 1, 12), list(bit(uint64(sp.dow)), 0, 6))
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // values() of each ';'-separated schedule
	}{
		{"all stars", "* * * * * * *", []string{"ms=* s=* min=* h=* dom=* mon=* dow=*"}},
		{"table: half-hour", "0 0 0,30 * * * *", []string{"ms=0 s=0 min=0,30 h=* dom=* mon=* dow=*"}},
		{"table: first minute of the half hours at 4 and 5", "* * 0,30 4-5 * * *", []string{"ms=* s=* min=0,30 h=4-5 dom=* mon=* dow=*"}},
		{"table: 9 to 5", "* * * 9-16 * * *", []string{"ms=* s=* min=* h=9-16 dom=* mon=* dow=*"}},
		{"table: second Monday (Table 6-1 says Tuesday)", "* * * * 8-14 * 2", []string{"ms=* s=* min=* h=* dom=8-14 mon=* dow=1"}},
		{"table: Sunday afternoon, 0 = Sunday", "* * * 13-16 * * 0", []string{"ms=* s=* min=* h=13-16 dom=* mon=* dow=0"}},
		{"table: April 15th on a Sunday", "* * * * 15 4 1", []string{"ms=* s=* min=* h=* dom=15 mon=4 dow=0"}},
		{"table: weekdays and weekends", "0 0 0 1 * * 2-6;0 0 0 2 * * 1,7", []string{
			"ms=0 s=0 min=0 h=1 dom=* mon=* dow=1-5",
			"ms=0 s=0 min=0 h=2 dom=* mon=* dow=0,6",
		}},
		{"list mixing a range and a value", "0 0 0 9-17,0 * * *", []string{"ms=0 s=0 min=0 h=0,9-17 dom=* mon=* dow=*"}},
		{"last day of the month", "0 0 0 0 31 * *", []string{"ms=0 s=0 min=0 h=0 dom=31 mon=* dow=*"}},
		{"l in every field", "l l l l l l l", []string{"ms=999 s=59 min=59 h=23 dom=31 mon=12 dow=6"}},
		{"last in any case", "LAST Last lAsT last L l LaSt", []string{"ms=999 s=59 min=59 h=23 dom=31 mon=12 dow=6"}},
		{"ranges up to last", "0-l 0-last 30-L 12-l 15-last 6-l 2-last", []string{"ms=* s=* min=30-59 h=12-23 dom=15-31 mon=6-12 dow=1-6"}},
		{"dow 0 to 7", "0 0 0 0 * * 0-7", []string{"ms=0 s=0 min=0 h=0 dom=* mon=* dow=*"}},
		{"dow 0 and 1 are both Sunday", "0 0 0 0 * * 0,1", []string{"ms=0 s=0 min=0 h=0 dom=* mon=* dow=0"}},
		{"dow 0-3 is Sunday to Tuesday", "0 0 0 0 * * 0-3", []string{"ms=0 s=0 min=0 h=0 dom=* mon=* dow=0-2"}},
		{"leading zeros", "000 00 05 007 01 012 07", []string{"ms=0 s=0 min=5 h=7 dom=1 mon=12 dow=6"}},
		{"overlapping items", "0 0 0 1-5,3-8,8 * * *", []string{"ms=0 s=0 min=0 h=1-8 dom=* mon=* dow=*"}},
		{"one-value range", "0 0 0 4-4 * * *", []string{"ms=0 s=0 min=0 h=4 dom=* mon=* dow=*"}},

		// Millisecond rounding: down to 0, 19, 39, 59, ..., 979, 999.
		{"ms 0-40 is 0-39", "0-40 * * * * * *", []string{"ms=0-39 s=* min=* h=* dom=* mon=* dow=*"}},
		{"ms 50-999 is 39-999", "50-999 * * * * * *", []string{"ms=39-999 s=* min=* h=* dom=* mon=* dow=*"}},
		{"ms 1-18 is 0", "1-18 * * * * * *", []string{"ms=0 s=* min=* h=* dom=* mon=* dow=*"}},
		{"ms values", "18,19,38,40,500,998,999 * * * * * *", []string{"ms=0,19,39,499,979,999 s=* min=* h=* dom=* mon=* dow=*"}},
		{"ms 20-38 is 19", "20-38 * * * * * *", []string{"ms=19 s=* min=* h=* dom=* mon=* dow=*"}},

		// Whitespace: any run of spaces, tabs, newlines, CRs and form feeds.
		{"leading and trailing blanks", "  \t0 0 0,30 * * * *\n ", []string{"ms=0 s=0 min=0,30 h=* dom=* mon=* dow=*"}},
		{"tabs and newlines between fields", "0\t0\n0,30\r\n*  *\f*   *", []string{"ms=0 s=0 min=0,30 h=* dom=* mon=* dow=*"}},
		{"blanks around ;", "0 0 0 1 * * 2-6 ;\n\t0 0 0 2 * * 1,7", []string{
			"ms=0 s=0 min=0 h=1 dom=* mon=* dow=1-5",
			"ms=0 s=0 min=0 h=2 dom=* mon=* dow=0,6",
		}},
		{"no blanks around ;", "0 0 0 1 * * 2-6;0 0 0 2 * * 1,7;l l l l l l l", []string{
			"ms=0 s=0 min=0 h=1 dom=* mon=* dow=1-5",
			"ms=0 s=0 min=0 h=2 dom=* mon=* dow=0,6",
			"ms=999 s=59 min=59 h=23 dom=31 mon=12 dow=6",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			if s.String() != tt.src {
				t.Errorf("String() = %q, want %q", s.String(), tt.src)
			}
			if len(s.specs) != len(tt.want) {
				t.Fatalf("Parse(%q): %d schedules, want %d", tt.src, len(s.specs), len(tt.want))
			}
			for i := range s.specs {
				if got := values(&s.specs[i]); got != tt.want[i] {
					t.Errorf("Parse(%q) schedule %d:\n got %s\nwant %s", tt.src, i, got, tt.want[i])
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // Error()
		field     string
		sched     int
		offset    int
	}{
		{"erratum: 31 in the month field", "* * * * * 31 *",
			"schedule:1:11: month value 31 out of range 1-12", "month", 0, 10},
		{"empty", "",
			"schedule:1:1: empty schedule: a schedule has 7 fields: millisecond second minute hour dayOfMonth month dayOfWeek", "millisecond", 0, 0},
		{"blank", " \t ",
			"schedule:1:4: empty schedule: a schedule has 7 fields: millisecond second minute hour dayOfMonth month dayOfWeek", "millisecond", 0, 3},
		{"too few fields", "0 0 0,30",
			"schedule:1:9: hour field missing: a schedule has 7 whitespace-separated fields: millisecond second minute hour dayOfMonth month dayOfWeek", "hour", 0, 8},
		{"too few fields, trailing blank", "0 0 0 0 1 ",
			"schedule:1:11: month field missing: a schedule has 7 whitespace-separated fields: millisecond second minute hour dayOfMonth month dayOfWeek", "month", 0, 10},
		{"six fields then ;", "0 0 0 0 1 1;0 0 0 0 1 1 1",
			"schedule:1:12: dayOfWeek field missing: a schedule has 7 whitespace-separated fields: millisecond second minute hour dayOfMonth month dayOfWeek", "dayOfWeek", 0, 11},
		{"too many fields", "* * * * * * * *",
			"schedule:1:15: unexpected \"*\" after the dayOfWeek field: a schedule has 7 fields: millisecond second minute hour dayOfMonth month dayOfWeek (separate schedules with ';')", "", 0, 14},
		{"ms out of range", "1000 * * * * * *",
			"schedule:1:1: millisecond value 1000 out of range 0-999", "millisecond", 0, 0},
		{"second out of range", "* 60 * * * * *",
			"schedule:1:3: second value 60 out of range 0-59", "second", 0, 2},
		{"minute out of range", "* * 1,2,60 * * * *",
			"schedule:1:9: minute value 60 out of range 0-59", "minute", 0, 8},
		{"hour out of range", "* * * 0-24 * * *",
			"schedule:1:9: hour value 24 out of range 0-23", "hour", 0, 8},
		{"dom 0", "* * * * 0 * *",
			"schedule:1:9: dayOfMonth value 0 out of range 1-31", "dayOfMonth", 0, 8},
		{"dom 32", "* * * * 32 * *",
			"schedule:1:9: dayOfMonth value 32 out of range 1-31", "dayOfMonth", 0, 8},
		{"month 0", "* * * * * 0 *",
			"schedule:1:11: month value 0 out of range 1-12", "month", 0, 10},
		{"dow 8", "* * * * * * 8",
			"schedule:1:13: dayOfWeek value 8 out of range 1-7 (1 = Sunday; 0 is also Sunday)", "dayOfWeek", 0, 12},
		{"huge number", "* * * * * * 99999999999999999999999",
			"schedule:1:13: dayOfWeek value 99999999999999999999999 out of range 1-7 (1 = Sunday; 0 is also Sunday)", "dayOfWeek", 0, 12},
		{"negative", "* * * -1 * * *",
			"schedule:1:7: hour field: unexpected \"-\": want * or a comma-separated list of values (0-23, l, last) and ranges (a-b)", "hour", 0, 6},
		{"reversed range", "0 0 0 22-2 * * *",
			"schedule:1:7: hour range 22-2 is reversed: its start is after its end (to wrap around, write 22-23,0-2)", "hour", 0, 6},
		{"reversed dow range with 0", "0 0 0 0 * * 6-0",
			"schedule:1:13: dayOfWeek range 6-0 is reversed: its start is after its end (to wrap around, write 6-7,1)", "dayOfWeek", 0, 12},
		{"reversed range with last", "0 0 0 0 l-3 * *",
			"schedule:1:9: dayOfMonth range l-3 is reversed: its start is after its end (to wrap around, write 31,1-3)", "dayOfMonth", 0, 8},
		{"range without end", "* * 1- * * * *",
			"schedule:1:6: minute range has no end", "minute", 0, 5},
		{"range without end at the end", "* * * * * * 1-",
			"schedule:1:15: dayOfWeek range has no end", "dayOfWeek", 0, 14},
		{"range of ranges", "* * * 1-2-3 * * *",
			"schedule:1:10: hour field: unexpected \"-\" after a range: a range is two values joined by one '-'", "hour", 0, 9},
		{"range ending in -", "1-2- * * * * * *",
			"schedule:1:4: millisecond field: unexpected \"-\" after a range: a range is two values joined by one '-'", "millisecond", 0, 3},
		{"range of ranges ending in l", "1-2-l * * * * * *",
			"schedule:1:4: millisecond field: unexpected \"-\" after a range: a range is two values joined by one '-'", "millisecond", 0, 3},
		{"empty list item", "1,,2 * * * * * *",
			"schedule:1:3: millisecond list has an empty item", "millisecond", 0, 2},
		{"star in a list, first", "*,1 * * * * * *",
			"schedule:1:2: millisecond field: * stands alone and cannot be part of a list", "millisecond", 0, 1},
		{"misspelt last in a range", "0 0 0 0 1-la * *",
			"schedule:1:11: dayOfMonth field: unknown word \"la\": want * or a comma-separated list of values (1-31, l, last) and ranges (a-b)", "dayOfMonth", 0, 10},
		{"lone comma", ",",
			"schedule:1:1: millisecond field: unexpected \",\": want * or a comma-separated list of values (0-999, l, last) and ranges (a-b)", "millisecond", 0, 0},
		{"semicolon inside a schedule", "1 2 3;4 5 6 7",
			"schedule:1:6: hour field missing: a schedule has 7 whitespace-separated fields: millisecond second minute hour dayOfMonth month dayOfWeek", "hour", 0, 5},
		{"list ending with a comma", "* * * * * * 1,",
			"schedule:1:15: dayOfWeek list ends with ','", "dayOfWeek", 0, 14},
		{"blank inside a list", "0 0 0 1, 2 * * *",
			"schedule:1:8: hour list ends with ','", "hour", 0, 7},
		{"star in a list", "0 0 0 1,* * * *",
			"schedule:1:9: hour field: * stands alone and cannot be part of a list", "hour", 0, 8},
		{"unknown word", "0 0 0 0 * * lastx",
			"schedule:1:13: dayOfWeek field: unknown word \"lastx\": want * or a comma-separated list of values (1-7, l, last) and ranges (a-b)", "dayOfWeek", 0, 12},
		{"month name", "0 0 0 0 1 jan *",
			"schedule:1:11: month field: unknown word \"jan\": want * or a comma-separated list of values (1-12, l, last) and ranges (a-b)", "month", 0, 10},
		{"bad character", "0 0 0 0 1 1 #",
			"schedule:1:13: dayOfWeek field: unexpected character \"#\"", "dayOfWeek", 0, 12},
		{"question mark (Quartz)", "0 0 0 0 ? * 2",
			"schedule:1:9: dayOfMonth field: unexpected character \"?\"", "dayOfMonth", 0, 8},
		{"non-ASCII", "0 0 0 0 1 1 \u00e9",
			"schedule:1:13: dayOfWeek field: unexpected character \"\u00e9\"", "dayOfWeek", 0, 12},
		{"column counts characters", "\u00e9",
			"schedule:1:1: millisecond field: unexpected character \"\u00e9\"", "millisecond", 0, 0},
		{"invalid UTF-8", "0 0 0 0 1 1 \xff",
			"schedule:1:13: dayOfWeek field: unexpected character \"\\xff\"", "dayOfWeek", 0, 12},
		{"empty schedule after ;", "0 0 0 0 1 1 1;",
			"schedule:1:15: empty schedule next to ';': a schedule has 7 fields: millisecond second minute hour dayOfMonth month dayOfWeek", "millisecond", 1, 14},
		{"empty schedule between ;", "0 0 0 0 1 1 1 ; ; 0 0 0 0 1 1 1",
			"schedule:1:17: empty schedule next to ';': a schedule has 7 fields: millisecond second minute hour dayOfMonth month dayOfWeek", "millisecond", 1, 16},
		{"leading ;", ";0 0 0 0 1 1 1",
			"schedule:1:1: empty schedule next to ';': a schedule has 7 fields: millisecond second minute hour dayOfMonth month dayOfWeek", "millisecond", 0, 0},
		{"error in the second schedule", "0 0 0 1 * * 2-6;0 0 0 2 * 13 1,7",
			"schedule:1:27: month value 13 out of range 1-12", "month", 1, 26},
		{"error on line 2", "0 0 0 1 * * 2-6;\n0 0 0 25 * * 1,7",
			"schedule:2:7: hour value 25 out of range 0-23", "hour", 1, 23},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.src)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tt.src, s)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q) error %T %v, want *Error", tt.src, err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error\n got %s\nwant %s", tt.src, err, tt.want)
			}
			if e.Field != tt.field || e.Schedule != tt.sched || e.Offset != tt.offset {
				t.Errorf("Parse(%q): Field %q Schedule %d Offset %d, want %q %d %d",
					tt.src, e.Field, e.Schedule, e.Offset, tt.field, tt.sched, tt.offset)
			}
		})
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParse of a malformed schedule did not panic")
		}
	}()
	MustParse("* * * * * 31 *")
}
