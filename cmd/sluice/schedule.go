package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	_ "time/tzdata" // --tz works on hosts without a zoneinfo database
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/grammar/schedule"
)

// timeLayout is RFC 3339 with milliseconds, the precision of schedules.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// newScheduleCommand is "sluice schedule": tools for the delivery schedule
// language of TimeToDeliverOverride.
func newScheduleCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Work with delivery schedules (scheduled TimeToDeliverOverride)",
		Long: "Work with delivery schedules: seven whitespace-separated fields\n" +
			"(millisecond second minute hour dayOfMonth month dayOfWeek), each * or a\n" +
			"comma list of values and ranges, several schedules joined with ';'.\n" +
			"See the documentation of package grammar/schedule.",
	}
	cmd.AddCommand(newScheduleNextCommand())
	return cmd
}

// newScheduleNextCommand is "sluice schedule next".
func newScheduleNextCommand() *cobra.Command {
	var (
		after string
		tz    string
		count int
	)
	cmd := &cobra.Command{
		Use:   "next '<schedule>'",
		Short: "Print the next times a schedule is due",
		Long: "Print the next times a schedule is due after --after (default: now),\n" +
			"one a line, as RFC 3339 with milliseconds in the --tz time zone\n" +
			"(default: the local zone). The schedule is read as wall-clock time in\n" +
			"that zone.",
		Example: "  sluice schedule next '0 0 0,30 * * * *' --after 2026-11-29T21:17:00.000+01:00 --tz Europe/Berlin --count 3",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScheduleNext(cmd.OutOrStdout(), args[0], after, tz, count, time.Now)
		},
	}
	f := cmd.Flags()
	f.StringVar(&after, "after", "", "start after this time, RFC 3339 (e.g. 2026-11-29T21:30:00.000+01:00); default now")
	f.StringVar(&tz, "tz", "", "IANA time zone to read the schedule in and print times in (e.g. Europe/Berlin); default local")
	f.IntVar(&count, "count", 1, "number of times to print")
	return cmd
}

// runScheduleNext prints the next count times src is due after the time
// afterText names (now() if empty), in zone tz (local if empty).
func runScheduleNext(w io.Writer, src, afterText, tz string, count int, now func() time.Time) error {
	if count < 1 {
		return fmt.Errorf("--count %d: must be at least 1", count)
	}
	loc := time.Local
	if tz != "" {
		var err error
		if loc, err = time.LoadLocation(tz); err != nil {
			return fmt.Errorf("--tz %q: unknown time zone: %w", tz, err)
		}
	}
	at := now()
	if afterText != "" {
		var err error
		if at, err = time.Parse(time.RFC3339Nano, afterText); err != nil {
			return fmt.Errorf("--after %q: want an RFC 3339 time such as 2026-11-29T21:30:00.000+01:00", afterText)
		}
	}
	s, err := schedule.Parse(src)
	if err != nil {
		var perr *schedule.Error
		if errors.As(err, &perr) {
			return fmt.Errorf("%w\n%s", err, pointAt(src, perr))
		}
		return err
	}
	at = at.In(loc)
	for range count {
		next := s.Next(at)
		if next.IsZero() {
			return fmt.Errorf("schedule %q: not due again within %d years after %s", src, schedule.HorizonYears, at.Format(timeLayout))
		}
		if _, err := fmt.Fprintln(w, next.Format(timeLayout)); err != nil {
			return err
		}
		at = next
	}
	return nil
}

// pointAt shows the line of src that holds the error with a caret under
// the error's column. Control characters show as spaces and invalid UTF-8
// as '?', one column each, as the column is counted.
func pointAt(src string, e *schedule.Error) string {
	lines := strings.Split(src, "\n")
	if e.Line < 1 || e.Line > len(lines) {
		return ""
	}
	var b strings.Builder
	line := lines[e.Line-1]
	for len(line) > 0 {
		r, size := utf8.DecodeRuneInString(line)
		switch {
		case r == utf8.RuneError && size == 1:
			r = '?'
		case unicode.IsControl(r):
			r = ' '
		}
		b.WriteRune(r)
		line = line[size:]
	}
	return "  " + b.String() + "\n  " + strings.Repeat(" ", max(e.Column-1, 0)) + "^"
}
