// Package buildinfo says which build of Sluice is running: its version,
// commit and date. Release builds set them at link time (see ldflags.go);
// a binary built without those flags (go run, go install, go build) falls
// back on what the Go toolchain recorded in it (runtime/debug.ReadBuildInfo:
// the module version, vcs.revision, vcs.time) and then on Release.
//
// Version is the one version the broker reports anywhere: `sluice version`,
// the STOMP server header, the AMQP open properties, JMS connection
// metadata and the admin API all show it.
package buildinfo

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
)

// Release is the release this source tree is, or leads up to. A binary
// built without a version at link time reports Release+"-dev".
const Release = "0.1.0"

// Info describes one build.
type Info struct {
	// Version is a semantic version without a leading "v": "0.1.0",
	// "0.1.0-3-gc8b1e17" (git describe past a tag), or "0.1.0-dev" and
	// "0.1.0-dev+c8b1e17" for builds from an untagged tree.
	Version string
	// Commit is the full revision the binary was built from, "" if unknown.
	Commit string
	// Modified says the work tree had changes that were not committed
	// (known only from the toolchain's vcs.modified).
	Modified bool
	// Date is when the binary was built (RFC 3339), or when its commit was
	// made if only the toolchain's vcs.time is known; "" if unknown.
	Date string
	// DateIsCommit says Date is the commit's time, not the build's.
	DateIsCommit bool
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

// linked holds the values set at link time.
type linked struct{ version, commit, date string }

// Get returns the running binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(linked{version: version, commit: commit, date: date}, bi)
}

// Version returns the running binary's version, Get().Version.
func Version() string { return Get().Version }

// pseudo matches the timestamp and revision of a Go pseudo-version
// ("v0.0.0-20260101120000-c8b1e17abcde"): the toolchain's stamp for an
// untagged commit, which is no release.
var pseudo = regexp.MustCompile(`\d{14}-[0-9a-f]{12}`)

// resolve prefers the values set at link time, then the toolchain's build
// information, then Release.
func resolve(ld linked, bi *debug.BuildInfo) Info {
	info := Info{Commit: ld.commit, Date: ld.date, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	var settings map[string]string
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		settings = make(map[string]string, len(bi.Settings))
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if p := settings["GOOS"] + "/" + settings["GOARCH"]; p != "/" {
			info.Platform = p
		}
	}
	switch {
	case ld.version != "":
		info.Version = normalize(ld.version)
	case bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" && !pseudo.MatchString(bi.Main.Version):
		info.Version = normalize(bi.Main.Version)
	default:
		info.Version = Release + "-dev"
	}
	if info.Commit == "" {
		info.Commit = settings["vcs.revision"]
		info.Modified = settings["vcs.modified"] == "true"
	}
	if info.Date == "" && settings["vcs.time"] != "" {
		info.Date, info.DateIsCommit = settings["vcs.time"], true
	}
	return info
}

// release matches a version that starts with its major and minor numbers.
var release = regexp.MustCompile(`^[0-9]+\.[0-9]+`)

// normalize drops the "v" of a tag ("v0.1.0" → "0.1.0") so that the
// version starts with its major and minor numbers, which JMS metadata
// reports. A version that does not, such as the bare abbreviated commit
// `git describe --always` gives in a tree without tags, becomes a
// development build of Release: "c8b1e17-dirty" → "0.1.0-dev+c8b1e17-dirty".
func normalize(v string) string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "v") && release.MatchString(v[1:]) {
		v = v[1:]
	}
	switch {
	case v == "":
		return Release + "-dev"
	case !release.MatchString(v):
		return Release + "-dev+" + v
	}
	return v
}

// String is the text of `sluice version`: the version on the first line,
// then the commit, the date and the toolchain.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sluice %s\n", i.Version)
	commit := i.Commit
	if commit == "" {
		commit = "unknown"
	} else if i.Modified {
		commit += " (modified)"
	}
	fmt.Fprintf(&b, "commit: %s\n", commit)
	switch {
	case i.Date == "":
		b.WriteString("built:  unknown\n")
	case i.DateIsCommit:
		fmt.Fprintf(&b, "built:  unknown (committed %s)\n", i.Date)
	default:
		fmt.Fprintf(&b, "built:  %s\n", i.Date)
	}
	fmt.Fprintf(&b, "go:     %s %s\n", i.GoVersion, i.Platform)
	return b.String()
}
