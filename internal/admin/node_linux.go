package admin

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// residentBytes reads the process's resident set size from
// /proc/self/statm (its second field, in pages).
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// openFiles counts /proc/self/fd and reads the RLIMIT_NOFILE soft limit.
func openFiles() (n, limit int64, ok bool) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, 0, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, 0, false
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	return int64(len(names)) - 1, int64(rl.Cur), true // less the directory being read
}

// diskSpace is the space available to the broker and the size of the file
// system holding dir.
func diskSpace(dir string) (free, total int64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	bs := uint64(st.Bsize)
	return int64(uint64(st.Bavail) * bs), int64(uint64(st.Blocks) * bs), true
}
