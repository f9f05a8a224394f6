package schedule

import (
	"testing"
	"time"
)

func BenchmarkParse(b *testing.B) {
	for _, src := range []string{
		"0 0 0,30 * * * *",
		"0 0 0 1 * * 2-6;0 0 0 2 * * 1,7",
	} {
		b.Run(src, func(b *testing.B) {
			for b.Loop() {
				if _, err := Parse(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNext(b *testing.B) {
	ny := loadLocation(b, "America/New_York")
	after := time.Date(2026, 5, 12, 10, 17, 23, 456e6, ny)
	for _, bm := range []struct{ name, src string }{
		{"half-hour", "0 0 0,30 * * * *"},
		{"every-ms", "* * * * * * *"},
		{"weekdays;weekends", "0 0 0 1 * * 2-6;0 0 0 2 * * 1,7"},
		{"feb-29", "0 0 0 0 29 2 *"},
		{"april-15-sunday", "* * * * 15 4 1"},
		{"friday-13th-last-ms", "l l l l 13 * 6"},
	} {
		s := MustParse(bm.src)
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				if s.Next(after).IsZero() {
					b.Fatal("no next time")
				}
			}
		})
	}
	b.Run("utc/half-hour", func(b *testing.B) {
		s := MustParse("0 0 0,30 * * * *")
		after := after.UTC()
		for b.Loop() {
			s.Next(after)
		}
	})
}
