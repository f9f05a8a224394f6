//go:build !linux

package admin

// residentBytes, openFiles and diskSpace are known on Linux only; the
// node page shows null elsewhere.
func residentBytes() (int64, bool) { return 0, false }

func openFiles() (n, limit int64, ok bool) { return 0, 0, false }

func diskSpace(string) (free, total int64, ok bool) { return 0, 0, false }
