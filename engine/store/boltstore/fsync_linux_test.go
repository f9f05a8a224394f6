//go:build linux

package boltstore

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkDiskSync measures the raw sync rate of the disk under the test's
// temporary directory: each op overwrites one 4 KiB page of a 256 KiB file
// and syncs it, as a bbolt commit does twice (data pages, then the meta
// page). A commit therefore costs at least two of these, which bounds the
// store's commits per second; group commit is what turns that into many
// more Updates per second.
func BenchmarkDiskSync(b *testing.B) {
	for _, tc := range []struct {
		name string
		sync func(*os.File) error
	}{
		{"fdatasync", func(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }},
		{"fsync", (*os.File).Sync},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "sync.test"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			page := make([]byte, 4096)
			const pages = 64
			for i := range pages {
				if _, err := f.WriteAt(page, int64(i)*4096); err != nil {
					b.Fatal(err)
				}
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				page[0] = byte(i)
				if _, err := f.WriteAt(page, int64(i%pages)*4096); err != nil {
					b.Fatal(err)
				}
				if err := tc.sync(f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "syncs/s")
		})
	}
}
