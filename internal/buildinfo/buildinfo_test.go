package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func(version string, kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/sluicemq/sluice", Version: version}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	rev := "c8b1e17f00c0ffee00c8b1e17f00c0ffee000000"
	tests := []struct {
		name string
		ld   linked
		bi   *debug.BuildInfo
		want Info
	}{
		{"release build", linked{"v0.2.0", rev, "2026-12-01T10:00:00Z"}, vcs("(devel)"),
			Info{Version: "0.2.0", Commit: rev, Date: "2026-12-01T10:00:00Z"}},
		{"git describe past a tag", linked{"v0.2.0-3-gc8b1e17-dirty", rev, "2026-12-01T10:00:00Z"}, nil,
			Info{Version: "0.2.0-3-gc8b1e17-dirty", Commit: rev, Date: "2026-12-01T10:00:00Z"}},
		{"git describe without tags", linked{"c8b1e17-dirty", rev, ""}, nil,
			Info{Version: Release + "-dev+c8b1e17-dirty", Commit: rev}},
		{"git describe without tags, a commit starting with a digit", linked{"43a7e81", rev, ""}, nil,
			Info{Version: Release + "-dev+43a7e81", Commit: rev}},
		{"a tag without its v", linked{"1.2.3", rev, ""}, nil, Info{Version: "1.2.3", Commit: rev}},
		{"link-time values win over the toolchain's", linked{"0.3.0", "abc", "2027-01-01T00:00:00Z"},
			vcs("v0.1.0", "vcs.revision", rev, "vcs.time", "2026-01-01T00:00:00Z", "vcs.modified", "true"),
			Info{Version: "0.3.0", Commit: "abc", Date: "2027-01-01T00:00:00Z"}},
		{"go install of a tag", linked{}, vcs("v0.2.1"),
			Info{Version: "0.2.1"}},
		{"go build in a clone", linked{},
			vcs("v0.0.0-20261201222115-c8b1e17f00c0+dirty", "vcs.revision", rev, "vcs.time", "2026-12-01T22:21:15Z", "vcs.modified", "true"),
			Info{Version: Release + "-dev", Commit: rev, Modified: true, Date: "2026-12-01T22:21:15Z", DateIsCommit: true}},
		{"go build past a tag", linked{}, vcs("v0.2.1-0.20261201222115-c8b1e17f00c0", "vcs.revision", rev),
			Info{Version: Release + "-dev", Commit: rev}},
		{"go run", linked{}, vcs("(devel)"), Info{Version: Release + "-dev"}},
		{"no build information", linked{}, nil, Info{Version: Release + "-dev"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve(tt.ld, tt.bi)
			got.GoVersion, got.Platform = "", ""
			if got != tt.want {
				t.Errorf("resolve = %+v\nwant      %+v", got, tt.want)
			}
		})
	}
}

func TestResolveToolchain(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.0", Settings: []debug.BuildSetting{{Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "arm64"}}}
	if got := resolve(linked{}, bi); got.GoVersion != "go1.99.0" || got.Platform != "darwin/arm64" {
		t.Errorf("toolchain %q, platform %q; want go1.99.0, darwin/arm64", got.GoVersion, got.Platform)
	}
	if got := resolve(linked{}, nil); got.GoVersion != runtime.Version() || got.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("without build information: toolchain %q, platform %q", got.GoVersion, got.Platform)
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		info Info
		want string
	}{
		{"release", Info{Version: "0.2.0", Commit: "c8b1e17", Date: "2026-12-01T10:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			"sluice 0.2.0\ncommit: c8b1e17\nbuilt:  2026-12-01T10:00:00Z\ngo:     go1.26.8 linux/amd64\n"},
		{"from the toolchain", Info{Version: "0.1.0-dev", Commit: "c8b1e17", Modified: true, Date: "2026-12-01T22:21:15Z", DateIsCommit: true, GoVersion: "go1.26.8", Platform: "linux/arm64"},
			"sluice 0.1.0-dev\ncommit: c8b1e17 (modified)\nbuilt:  unknown (committed 2026-12-01T22:21:15Z)\ngo:     go1.26.8 linux/arm64\n"},
		{"nothing known", Info{Version: "0.1.0-dev", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			"sluice 0.1.0-dev\ncommit: unknown\nbuilt:  unknown\ngo:     go1.26.8 linux/amd64\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.info.String(); got != tt.want {
				t.Errorf("String() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// The version of a test binary, which is built without link-time values,
// is a development build of Release.
func TestVersion(t *testing.T) {
	if v := Version(); !strings.HasPrefix(v, Release) {
		t.Errorf("Version() = %q, want it to start with %q", v, Release)
	}
}
