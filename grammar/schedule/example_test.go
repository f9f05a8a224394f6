package schedule_test

import (
	"fmt"
	"time"

	"github.com/sluicemq/sluice/grammar/schedule"
)

func ExampleParse() {
	s, err := schedule.Parse("0 0 0 1 * * 2-6;0 0 0 2 * * 1,7")
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2026, 5, 15, 12, 0, 0, 0, time.UTC) // a Friday
	for range 3 {
		at = s.Next(at)
		fmt.Println(at.Format("Mon 2006-01-02 15:04"))
	}
	// Output:
	// Sat 2026-05-16 02:00
	// Sun 2026-05-17 02:00
	// Mon 2026-05-18 01:00
}

func ExampleParse_error() {
	_, err := schedule.Parse("* * * * * 31 *")
	fmt.Println(err)
	if e, ok := err.(*schedule.Error); ok {
		fmt.Println(e.Field, e.Offset)
	}
	// Output:
	// schedule:1:11: month value 31 out of range 1-12
	// month 10
}

func ExampleNextMillisRelative() {
	after := time.Date(2026, 5, 12, 10, 17, 0, 0, time.UTC).UnixMilli()
	delay, err := schedule.NextMillisRelative("0 0 0,30 * * * *", after, time.UTC)
	fmt.Println(time.Duration(delay)*time.Millisecond, err)
	// Output: 13m0s <nil>
}
