package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Limits are the broker-wide resource limits of [limits]: when either is
// reached, producers are held by their protocol's flow control until there
// is room again (engine.Flow).
type Limits struct {
	// MemoryLimit bounds the broker's message memory: a size ("512MiB",
	// "2GB", bytes as digits) or a percentage of the machine's memory
	// ("40%": of MemTotal, or of the cgroup's memory.max when that is
	// lower). "0" means no limit.
	MemoryLimit string `toml:"memory_limit"`
	// DiskFreeLimit is the free space the data directory's file system
	// must keep: a size, or a percentage of the file system's size. "0"
	// means the disk is not watched.
	DiskFreeLimit string `toml:"disk_free_limit"`
}

// defaultLimits are the defaults of [limits]: 40% of the memory, as
// RabbitMQ's vm_memory_high_watermark, and 1 GiB of disk, room for the
// journal to commit what is already accepted and for the store to grow
// while the backlog drains (RabbitMQ's 50 MB is too little for a
// journal's segments).
func defaultLimits() Limits {
	return Limits{MemoryLimit: "40%", DiskFreeLimit: "1GiB"}
}

// sizeUnits are the suffixes ParseSize knows, longest first.
var sizeUnits = []struct {
	suffix string
	n      int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseSize parses a size in bytes: digits with an optional unit (B, KB,
// MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of 1024),
// e.g. "512MiB", "1.5GB", "1048576".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(num), u.n
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q: want a size such as \"512MiB\", \"2GB\" or a number of bytes", s)
	}
	b := v * float64(mult)
	if b > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return int64(b), nil
}

// parseLimit parses a size or a percentage ("40%"), returning the
// percentage as a fraction (then bytes is 0).
func parseLimit(s string) (bytes int64, fraction float64, err error) {
	if p, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v <= 0 || v > 100 {
			return 0, 0, fmt.Errorf("%q: want a percentage above 0 and at most 100", s)
		}
		return 0, v / 100, nil
	}
	b, err := ParseSize(s)
	return b, 0, err
}

// validateLimits checks the syntax of [limits].
func (l Limits) validate() []error {
	var errs []error
	if _, _, err := parseLimit(l.MemoryLimit); err != nil {
		errs = append(errs, fmt.Errorf("limits.memory_limit %w", err))
	}
	if _, _, err := parseLimit(l.DiskFreeLimit); err != nil {
		errs = append(errs, fmt.Errorf("limits.disk_free_limit %w", err))
	}
	return errs
}

// MemoryBytes resolves memory_limit to bytes; a percentage is of total,
// the machine's memory (MachineMemory). 0 means no limit.
func (l Limits) MemoryBytes(total func() (int64, error)) (int64, error) {
	b, frac, err := parseLimit(l.MemoryLimit)
	if err != nil {
		return 0, fmt.Errorf("limits.memory_limit %w", err)
	}
	if frac == 0 {
		return b, nil
	}
	t, err := total()
	if err != nil {
		return 0, fmt.Errorf("limits.memory_limit %q: %w", l.MemoryLimit, err)
	}
	return int64(float64(t) * frac), nil
}

// DiskFreeBytes resolves disk_free_limit to bytes; a percentage is of
// size, the file system's size. 0 means the disk is not watched.
func (l Limits) DiskFreeBytes(size int64) (int64, error) {
	b, frac, err := parseLimit(l.DiskFreeLimit)
	if err != nil {
		return 0, fmt.Errorf("limits.disk_free_limit %w", err)
	}
	if frac == 0 {
		return b, nil
	}
	return int64(float64(size) * frac), nil
}

// MachineMemory returns the memory this process may use: /proc/meminfo's
// MemTotal, or the cgroup v2 memory.max of the process's cgroup when that
// is lower (a container's limit).
func MachineMemory() (int64, error) {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("read the machine's memory: %w", err)
	}
	total, err := memTotal(raw)
	if err != nil {
		return 0, err
	}
	if limit, ok := cgroupMemoryMax(); ok && limit < total {
		total = limit
	}
	return total, nil
}

// memTotal reads MemTotal (kB) from the text of /proc/meminfo.
func memTotal(meminfo []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			break
		}
		return kb << 10, nil
	}
	return 0, errors.New("read the machine's memory: /proc/meminfo has no MemTotal")
}

// cgroupMemoryMax reads the cgroup v2 memory.max of this process's cgroup
// ("max" is no limit).
func cgroupMemoryMax() (int64, bool) {
	paths := []string{"/sys/fs/cgroup/memory.max"}
	if raw, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok && p != "/" && p != "" {
				paths = append([]string{"/sys/fs/cgroup" + p + "/memory.max"}, paths...)
			}
		}
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(raw))
		if v == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
