//go:build !linux && !darwin

package broker

import "errors"

// statfs is the diskUsage of the operating system: not measured here.
func statfs(dir string) (free, size int64, err error) {
	return 0, 0, errors.New("free disk space is not measured on this system")
}
