package loadgen

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times. It is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// ProcessCPU returns the CPU seconds (user + system, the process's own
// threads) that process pid has used, from /proc/PID/stat.
func ProcessCPU(pid int) (float64, error) {
	if pid <= 0 {
		return 0, errors.New("no pid")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStat(string(b))
}

// parseStat reads utime and stime (fields 14 and 15) of a /proc/PID/stat
// line. The command name (field 2) is in parentheses and may hold spaces
// and parentheses, so fields are counted from the last ')'.
func parseStat(s string) (float64, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat line: %d fields", len(f)+2)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc stat times %q %q", f[11], f[12])
	}
	return float64(ut+st) / clockTicks, nil
}

// ProcessRSS returns the resident set size in bytes of process pid, from
// the VmRSS line of /proc/PID/status.
func ProcessRSS(pid int) (int64, error) {
	if pid <= 0 {
		return 0, errors.New("no pid")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	return parseVmRSS(string(b))
}

// parseVmRSS reads the "VmRSS:   1234 kB" line of a /proc/PID/status.
func parseVmRSS(s string) (int64, error) {
	for line := range strings.SplitSeq(s, "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("malformed VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed VmRSS line %q: %w", line, err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmRSS line (a kernel thread or a zombie?)")
}

// brokerRSS is ProcessRSS of pid, or 0 with the error noted in rep.
func brokerRSS(pid int, rep *Report) int64 {
	n, err := ProcessRSS(pid)
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("broker RSS of pid %d: %v", pid, err))
		return 0
	}
	return n
}
