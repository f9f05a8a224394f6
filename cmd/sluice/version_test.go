package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/buildinfo"
)

// `sluice version` and `sluice --version` print the same lines: version,
// commit, build date, toolchain; the version is the broker's.
func TestVersionCommand(t *testing.T) {
	want := buildinfo.Get().String()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		out, err := execute(args...)
		if err != nil {
			t.Fatalf("sluice %s: %v", strings.Join(args, " "), err)
		}
		if out != want {
			t.Errorf("sluice %s printed\n%s\nwant\n%s", strings.Join(args, " "), out, want)
		}
	}
	out, _ := execute("version")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 || lines[0] != "sluice "+broker.Version || !strings.HasPrefix(lines[1], "commit: ") ||
		!strings.HasPrefix(lines[2], "built:  ") || !strings.HasPrefix(lines[3], "go:     "+runtime.Version()) {
		t.Errorf("sluice version printed %q, want version %s, commit, built and go lines", out, broker.Version)
	}
	if _, err := execute("version", "extra"); err == nil {
		t.Error("sluice version accepted an argument")
	}
}

// The release build (scripts/build.sh, as make dist and the Dockerfile run
// it) is a static executable that prints the version, commit and date it
// was given at link time.
func TestReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("scripts/build.sh is a POSIX shell script")
	}
	bin := filepath.Join(t.TempDir(), "sluice")
	build := exec.Command("sh", "../../scripts/build.sh", bin)
	build.Env = append(os.Environ(), "VERSION=v9.8.7-3-gfeedbee-dirty",
		"COMMIT=feedbeefeedbeefeedbeefeedbeefeedbeefeedb", "DATE=2030-01-02T03:04:05Z")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build.sh: %v\n%s", err, out)
	}
	want := "sluice 9.8.7-3-gfeedbee-dirty\n" +
		"commit: feedbeefeedbeefeedbeefeedbeefeedbeefeedb\n" +
		"built:  2030-01-02T03:04:05Z\n" +
		"go:     " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).CombinedOutput()
		if err != nil {
			t.Fatalf("sluice %s: %v\n%s", arg, err, out)
		}
		if string(out) != want {
			t.Errorf("sluice %s printed\n%s\nwant\n%s", arg, out, want)
		}
	}

	if runtime.GOOS != "linux" {
		return
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the release binary is dynamically linked (%v program header)", p.Type)
		}
	}
}
