package config

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"0", 0, false},
		{"1048576", 1 << 20, false},
		{"512MiB", 512 << 20, false},
		{"2GB", 2e9, false},
		{"1.5GiB", 3 << 29, false},
		{" 64 KiB ", 64 << 10, false},
		{"10B", 10, false},
		{"-1", 0, true},
		{"lots", 0, true},
		{"12XB", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, bad %v", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestLimitsResolve(t *testing.T) {
	machine := func() (int64, error) { return 8 << 30, nil }
	tests := []struct {
		mem, disk         string
		wantMem, wantDisk int64
	}{
		{"40%", "1GiB", 8 << 30 * 2 / 5, 1 << 30},
		{"512MiB", "5%", 512 << 20, 5 << 30},
		{"0", "0", 0, 0},
	}
	for _, tt := range tests {
		l := Limits{MemoryLimit: tt.mem, DiskFreeLimit: tt.disk}
		if errs := l.validate(); len(errs) > 0 {
			t.Fatalf("%+v: %v", l, errs)
		}
		mem, err := l.MemoryBytes(machine)
		if err != nil || mem != tt.wantMem {
			t.Errorf("%+v: memory %d, %v; want %d", l, mem, err, tt.wantMem)
		}
		disk, err := l.DiskFreeBytes(100 << 30)
		if err != nil || disk != tt.wantDisk {
			t.Errorf("%+v: disk %d, %v; want %d", l, disk, err, tt.wantDisk)
		}
	}
	noMachine := func() (int64, error) { return 0, errors.New("no /proc") }
	if _, err := (Limits{MemoryLimit: "40%"}).MemoryBytes(noMachine); err == nil || !strings.Contains(err.Error(), "limits.memory_limit") {
		t.Fatalf("error %v", err)
	}
}

// Bad values are reported with their key; a number where a string is
// needed, with its line.
func TestLimitsErrors(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"[limits]\nmemory_limit = \"150%\"\ndisk_free_limit = \"much\"\n",
			[]string{`limits.memory_limit "150%": want a percentage`, `limits.disk_free_limit "much": want a size`}},
		{"[limits]\nmemory_limit = 0\n", []string{`2: limits.memory_limit: quote it: "0"`}},
	}
	for _, tt := range tests {
		cfg, err := Load(writeFile(t, tt.file))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil {
			t.Fatalf("%q: no error", tt.file)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", tt.file, err, w)
			}
		}
	}
}

func TestMemTotal(t *testing.T) {
	got, err := memTotal([]byte("MemTotal:       24683520 kB\nMemFree:        23837236 kB\n"))
	if err != nil || got != 24683520<<10 {
		t.Fatalf("memTotal = %d, %v", got, err)
	}
	if _, err := memTotal([]byte("MemFree: 1 kB\n")); err == nil {
		t.Fatal("no error without MemTotal")
	}
	if n, err := MachineMemory(); err == nil && n <= 0 {
		t.Fatalf("MachineMemory() = %d", n)
	}
}
