package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/grammar/schedule"
)

// execute runs the sluice command tree with args and returns its standard
// output and error.
func execute(args ...string) (string, error) {
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestScheduleNext(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"Berlin half hours", []string{"schedule", "next", "0 0 0,30 * * * *",
			"--after", "2026-11-29T21:17:00.000+01:00", "--tz", "Europe/Berlin", "--count", "3"},
			"2026-11-29T21:30:00.000+01:00\n2026-11-29T22:00:00.000+01:00\n2026-11-29T22:30:00.000+01:00\n"},
		{"default count is 1", []string{"schedule", "next", "0 0 0,30 * * * *",
			"--after", "2026-11-29T21:17:00+01:00", "--tz", "Europe/Berlin"},
			"2026-11-29T21:30:00.000+01:00\n"},
		{"after converted into --tz", []string{"schedule", "next", "0 0 0 9 * * *",
			"--after", "2026-11-29T21:17:00Z", "--tz", "Asia/Tokyo"},
			"2026-11-30T09:00:00.000+09:00\n"},
		{"UTC", []string{"schedule", "next", "0 0 0 1 * * 2-6;0 0 0 2 * * 1,7",
			"--after", "2026-05-15T12:00:00.000Z", "--tz", "UTC", "--count", "3"},
			"2026-05-16T02:00:00.000Z\n2026-05-17T02:00:00.000Z\n2026-05-18T01:00:00.000Z\n"},
		{"DST gap in New York", []string{"schedule", "next", "0 0 30 2 * * *",
			"--after", "2026-03-07T12:00:00-05:00", "--tz", "America/New_York", "--count", "3"},
			"2026-03-08T03:30:00.000-04:00\n2026-03-09T02:30:00.000-04:00\n2026-03-10T02:30:00.000-04:00\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := execute(tt.args...)
			if err != nil {
				t.Fatalf("sluice %q: %v", tt.args, err)
			}
			if out != tt.want {
				t.Errorf("sluice %q printed\n%s\nwant\n%s", tt.args, out, tt.want)
			}
		})
	}
}

func TestScheduleNextErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // substrings of the error
	}{
		{"month 31", []string{"schedule", "next", "* * * * * 31 *", "--after", "2026-01-01T00:00:00Z"},
			[]string{"schedule:1:11: month value 31 out of range 1-12", "\n  * * * * * 31 *\n            ^"}},
		{"missing field", []string{"schedule", "next", "0 0 0 1", "--after", "2026-01-01T00:00:00Z"},
			[]string{"schedule:1:8: dayOfMonth field missing"}},
		{"second line", []string{"schedule", "next", "0 0 0 1 * * 2-6;\n\t0 0 0 x * * 1", "--after", "2026-01-01T00:00:00Z"},
			[]string{"schedule:2:8: hour field: unknown word \"x\"", "\n   0 0 0 x * * 1\n         ^"}},
		{"bad zone", []string{"schedule", "next", "* * * * * * *", "--tz", "Mars/Olympus_Mons"},
			[]string{`--tz "Mars/Olympus_Mons": unknown time zone`}},
		{"bad after", []string{"schedule", "next", "* * * * * * *", "--after", "tomorrow"},
			[]string{`--after "tomorrow": want an RFC 3339 time`}},
		{"bad count", []string{"schedule", "next", "* * * * * * *", "--count", "0"},
			[]string{"--count 0: must be at least 1"}},
		{"no schedule", []string{"schedule", "next"},
			[]string{"accepts 1 arg(s), received 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := execute(tt.args...)
			if err == nil {
				t.Fatalf("sluice %q succeeded, printing %q; want an error (and exit status 1)", tt.args, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("sluice %q error\n%s\nwant it to contain\n%s", tt.args, err, w)
				}
			}
		})
	}
	// The schedule error stays reachable for callers.
	_, err := execute("schedule", "next", "* * * * * 31 *")
	var perr *schedule.Error
	if !errors.As(err, &perr) || perr.Field != "month" {
		t.Errorf("error %v does not wrap a month *schedule.Error", err)
	}
}

func TestScheduleNextDefaultsToNow(t *testing.T) {
	before := time.Now()
	out, err := execute("schedule", "next", "* * * * * * *", "--tz", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	got, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if !got.After(before.Add(-time.Millisecond)) || got.After(time.Now().Add(time.Second)) {
		t.Errorf("next time %s is not just after now (%s)", got, before)
	}
}
