//go:build !linux

package boltstore

// dropMapped does nothing where MADV_DONTNEED is not known to keep a
// shared file mapping's contents.
func dropMapped(addr uintptr, size int64) {}
