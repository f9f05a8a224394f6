package boltstore

import "golang.org/x/sys/unix"

// dropMapped tells the kernel that the process no longer needs the pages
// of the shared file mapping at addr: they leave its resident set and stay
// in the page cache.
func dropMapped(addr uintptr, size int64) {
	if addr == 0 || size <= 0 {
		return
	}
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, addr, uintptr(size), unix.MADV_DONTNEED)
}
