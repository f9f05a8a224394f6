// Package schedule is the cron-like delivery schedule language of WebLogic
// JMS: the scheduled form of a destination's TimeToDeliverOverride, and the
// equivalent of the weblogic.jms.extensions.Schedule class. The broker
// parses a schedule once with Parse and asks (*Schedule).Next for the
// delivery time of each message; the sluice command's "schedule next"
// subcommand prints the times a schedule gives. The package knows nothing
// else of Sluice.
//
// # Syntax
//
// A schedule is seven fields separated by whitespace (spaces, tabs,
// newlines, carriage returns, form feeds; leading and trailing whitespace is
// ignored):
//
//	millisecond second minute hour dayOfMonth month dayOfWeek
//
// Each field is * (every value) or a comma-separated list of items, and an
// item is a value or an inclusive range a-b. No whitespace is allowed inside
// a field: "1, 2" is two fields. Values are non-negative decimal integers
// (leading zeros allowed) in the field's range:
//
//	millisecond 0-999
//	second      0-59
//	minute      0-59
//	hour        0-23
//	dayOfMonth  1-31
//	month       1-12 (1 = January)
//	dayOfWeek   1-7  (1 = Sunday, 7 = Saturday; 0 is also Sunday)
//
// or l or last, in any case, which stand for the greatest value of the
// field: 999, 59, 59, 23, the last day of the month, 12 (December) and 7
// (Saturday). Several schedules may be joined with ';' (whitespace around it
// is allowed); the soonest next time of any of them wins. EBNF returns the
// grammar; docs/grammar/schedule.ebnf is generated from it.
//
// # Interpretations
//
// The WebLogic documentation leaves some points open or gets them wrong.
// This package decides them as follows.
//
// Milliseconds are rounded down to "the nearest 50th of a second", whose
// values the documentation lists as 0, 19, 39, 59, ..., 979 and 999: 0 and
// then every 20th millisecond from 19. Each millisecond value written is
// rounded down to the greatest of those values not above it: 0-18 become 0,
// 19-38 become 19, 39-58 become 39, ..., 999 stays 999. A single value
// matches exactly the rounded millisecond; a range matches every
// millisecond from its rounded start to its rounded end, so 0-40 matches
// 0-39 and 50-999 matches 39-999, as documented. * matches every
// millisecond 0-999.
//
// A day-of-month beyond the end of a month stands for the month's last day:
// 31 is always the last day, 30 is February 28 or 29, and 29 is February 28
// outside leap years (so 0 0 0 0 29 2 * is due every year). Each value of a
// range is clamped alone: 29-31 in a February of 28 days is the 28th only.
// The calendar is the proleptic Gregorian one.
//
// dayOfMonth and dayOfWeek must both match, unlike Unix cron where either
// may: the documentation's "second Tuesday of the month" (days 8-14 on a
// given weekday) and "April 15th on a Sunday" examples need both.
//
// A range whose start is after its end, such as 22-2, is an error; write
// 22-23,0-2. Ranges do not wrap around.
//
// Errata in the documentation's Table 6-1, as this package reads them:
// "* * * * 8-14 * 2" is captioned "the second Tuesday", but with 1 =
// Sunday the value 2 is Monday: it is the second Monday (the second Tuesday
// is 3). "* * * 13-16 * * 0" uses 0 for Sunday, which is accepted as an
// alias of 1. "* * * * * 31 *" is captioned "the last day of the month" but
// puts 31 in the month field, which is an error naming the month field; the
// last day of the month is "* * * * 31 * *".
//
// # Time zones and daylight saving
//
// A schedule is read as wall-clock time in a time zone: Next uses the
// Location of the time it is given, and returns a time in that Location.
// Every wall-clock time the schedule matches is due once; a time that
// occurs once is due then. Around daylight-saving transitions this package
// does what WebLogic's Schedule does, which resolves the schedule's fields
// with a lenient java.util.GregorianCalendar:
//
//   - Gap: when clocks are put forward, the skipped wall times do not
//     occur; each is read in the offset in force before the change, so it
//     is due the gap's length later than it says. In New York on 8 March
//     2026 clocks go from 02:00 EST to 03:00 EDT, so "0 0 50 2 * * *" is
//     due at 03:50 EDT (02:50 EST) that day, and "0 0 0 2 * * *" at 03:00
//     EDT. A skipped time can therefore be due after later wall times:
//     "0 0 50 2 * * *;0 0 10 3 * * *" asked after 01:50 EST is due at 03:10
//     EDT, then at 03:50 EDT. Two wall times that name the same instant
//     (02:10 and 03:10 that day) are due once.
//   - Overlap: when clocks are put back, the repeated wall times are due at
//     their first occurrence only. In New York on 1 November 2026 clocks go
//     from 02:00 EDT back to 01:00 EST, so "0 0 30 1 * * *" is due at 01:30
//     EDT and not again at 01:30 EST. During the repeated interval the
//     clock shows times that have already been due, so nothing is due then
//     until the clock passes the latest time it showed before the change:
//     even "* * * * * * *" is next due at 02:00 EST when asked at 01:59:59.999
//     EDT.
//
// # Next times
//
// Next returns the earliest due instant strictly after the given one, with
// millisecond precision. It searches calendar fields from the largest down,
// skipping whole years, months, days, hours, minutes and seconds that cannot
// match, so a call takes about a microsecond or less, sparse schedules
// included. Its search ends after HorizonYears (100) calendar years, when
// it returns the zero time. This does not happen for real schedules: the
// successive due dates of every schedule Parse accepts are at most 12
// years apart (the longest wait is for a date on a given weekday across a
// century year that is not a leap year).
//
// The methods of WebLogic's Schedule class map onto this package as
// follows:
//
//	nextScheduledTime(s, calendar)        Parse(s), then Next(t)
//	nextScheduledTime(s)                  Parse(s), then Next(time.Now())
//	nextScheduledTimeInMillis(s, ms)      NextMillis(s, ms, loc)
//	nextScheduledTimeInMillisRelative(s, ms)
//	                                      NextMillisRelative(s, ms, loc)
//	nextScheduledTimeInMillisRelative(s)  NextMillisRelative(s, time.Now().UnixMilli(), loc)
//
// where WebLogic uses the JVM's default time zone, these functions take one
// (time.Local if nil).
//
// # Errors
//
// Parse reports every malformed schedule as an *Error that names the field
// (millisecond ... dayOfWeek), the byte offset, the line and column, and
// what is wrong, for example
//
//	schedule:1:11: month value 31 out of range 1-12
package schedule
