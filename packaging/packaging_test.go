// Package packaging holds the files that install Sluice: the systemd unit
// and its sysusers.d file, and the container image's configuration. Its
// tests check them, and the Dockerfile and .dockerignore at the root, for
// what an operator relies on: the unit's keys (and systemd-analyze verify
// where systemd is installed), the image's structure, and a container
// configuration that refuses to open the network until users exist.
package packaging

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/internal/admin"
	"github.com/sluicemq/sluice/internal/config"
)

// unit is a systemd unit file: section → key → values, in order (a key
// may repeat; an empty assignment is kept as "").
type unit map[string]map[string][]string

// parseUnit reads a unit file: [Section] headers, Key=Value lines, # and ;
// comments, no continuation lines (the unit has none).
func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		case strings.HasSuffix(line, "\\"):
			t.Fatalf("%s:%d: a continuation line, which this parser does not read", path, n)
		default:
			key, value, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.TrimSpace(key) == "" {
				t.Fatalf("%s:%d: not a key=value line in a section: %q", path, n, line)
			}
			key = strings.TrimSpace(key)
			u[section][key] = append(u[section][key], strings.TrimSpace(value))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSystemdUnit(t *testing.T) {
	u := parseUnit(t, "sluice.service")
	want := []struct{ section, key, value string }{
		{"Unit", "After", "network-online.target"},
		{"Unit", "Wants", "network-online.target"},
		{"Service", "Type", "notify"},
		{"Service", "ExecStart", "/usr/bin/sluice serve --config /etc/sluice/sluice.toml --data /var/lib/sluice"},
		{"Service", "ExecReload", "/bin/kill -HUP $MAINPID"},
		{"Service", "Restart", "on-failure"},
		{"Service", "User", "sluice"},
		{"Service", "Group", "sluice"},
		{"Service", "StateDirectory", "sluice"},
		{"Service", "LimitNOFILE", "65536"},
		{"Service", "NoNewPrivileges", "yes"},
		{"Service", "ProtectSystem", "strict"},
		{"Service", "ProtectHome", "yes"},
		{"Service", "PrivateTmp", "yes"},
		{"Service", "PrivateDevices", "yes"},
		{"Service", "ProtectKernelTunables", "yes"},
		{"Service", "ProtectKernelModules", "yes"},
		{"Service", "ProtectKernelLogs", "yes"},
		{"Service", "ProtectControlGroups", "yes"},
		{"Service", "RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"},
		{"Service", "RestrictNamespaces", "yes"},
		{"Service", "LockPersonality", "yes"},
		{"Service", "MemoryDenyWriteExecute", "yes"},
		{"Service", "SystemCallFilter", "@system-service"},
		{"Service", "CapabilityBoundingSet", ""}, // no capability at all
		{"Install", "WantedBy", "multi-user.target"},
	}
	for _, w := range want {
		if got := u[w.section][w.key]; !reflect.DeepEqual(got, []string{w.value}) {
			t.Errorf("[%s] %s = %q, want exactly %q", w.section, w.key, got, w.value)
		}
	}
	// The data directory is the one systemd makes for StateDirectory, and
	// the user is the one sluice.sysusers.conf creates.
	if exec := u["Service"]["ExecStart"]; len(exec) == 1 && !strings.Contains(exec[0], "--data /var/lib/"+u["Service"]["StateDirectory"][0]) {
		t.Errorf("ExecStart %q does not use the StateDirectory", exec[0])
	}
	sysusers, err := os.ReadFile("sluice.sysusers.conf")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^u sluice - "[^"]+" /var/lib/sluice /usr/sbin/nologin$`).Match(sysusers) {
		t.Errorf("sluice.sysusers.conf does not create the system user sluice:\n%s", sysusers)
	}
}

// systemd-analyze verify, where systemd is installed: the unit in a
// scratch root holding stand-ins for the two programs it runs and the
// host's system units, with the man page its Documentation= names.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (apt-get install systemd): only the unit's keys are checked")
	}
	units := "/usr/lib/systemd/system"
	if _, err := os.Stat(filepath.Join(units, "multi-user.target")); err != nil {
		t.Skipf("no system units in %s to verify against", units)
	}
	root := t.TempDir()
	for _, prog := range []string{"usr/bin/sluice", "bin/kill"} {
		path := filepath.Join(root, prog)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "usr/lib/systemd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", units, filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", units, err, out)
	}
	etc := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	unitText, err := os.ReadFile("sluice.service")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "sluice.service"), unitText, 0o644); err != nil {
		t.Fatal(err)
	}

	args := []string{"verify", "--root=" + root}
	env := os.Environ()
	if _, err := exec.LookPath("man"); err == nil {
		// Documentation=man:sluice-serve(1): the generated page, found
		// through MANPATH.
		man1 := filepath.Join(t.TempDir(), "man1")
		if err := os.MkdirAll(man1, 0o755); err != nil {
			t.Fatal(err)
		}
		page, err := os.ReadFile("../man/sluice-serve.1")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(man1, "sluice-serve.1"), page, 0o644); err != nil {
			t.Fatal(err)
		}
		env = append(env, "MANPATH="+filepath.Dir(man1))
	} else {
		args = append(args, "--man=no")
	}
	cmd := exec.Command(analyze, append(args, "/etc/systemd/system/sluice.service")...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case, e.g. FROM
	args string
}

// parseDockerfile splits a Dockerfile into instructions.
func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		if cmd != strings.ToUpper(cmd) {
			t.Errorf("%s:%d: instruction %s is not upper case", path, start, cmd)
		}
		out = append(out, instruction{start, strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Errorf("%s: ends in a continuation line", path)
	}
	return out
}

// The Dockerfile, checked for what hadolint would flag and for what the
// image promises: a builder stage on a Go at least as new as go.mod's that
// runs the release build, then a runtime stage from scratch with only the
// builder's files, a numeric non-root user, the data volume, the ports,
// and exec-form ENTRYPOINT and CMD that read /etc/sluice/sluice.toml.
func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t, "../Dockerfile")
	var froms []int
	for i, in := range ins {
		switch in.cmd {
		case "FROM":
			froms = append(froms, i)
		case "ADD":
			t.Errorf("Dockerfile:%d: ADD; COPY is enough", in.line)
		case "MAINTAINER":
			t.Errorf("Dockerfile:%d: MAINTAINER is deprecated", in.line)
		case "WORKDIR":
			if !strings.HasPrefix(in.args, "/") {
				t.Errorf("Dockerfile:%d: WORKDIR %s is relative", in.line, in.args)
			}
		case "RUN":
			if regexp.MustCompile(`(^|&&|;)\s*cd\s`).MatchString(in.args) {
				t.Errorf("Dockerfile:%d: cd in RUN; use WORKDIR", in.line)
			}
		}
	}
	if len(froms) != 2 {
		t.Fatalf("Dockerfile has %d stages, want 2 (builder, runtime)", len(froms))
	}
	build, runtime := ins[froms[0]:froms[1]], ins[froms[1]:]

	// The builder.
	goImage := ""
	for _, in := range ins[:froms[0]] {
		if in.cmd == "ARG" && strings.HasPrefix(in.args, "GO_IMAGE=") {
			goImage = strings.TrimPrefix(in.args, "GO_IMAGE=")
		}
	}
	if build[0].args != "${GO_IMAGE} AS build" {
		t.Errorf("first stage is FROM %s, want FROM ${GO_IMAGE} AS build", build[0].args)
	}
	m := regexp.MustCompile(`^docker\.io/library/golang:(\d+)\.(\d+)(\.\d+)?(-[a-z0-9]+)?$`).FindStringSubmatch(goImage)
	if m == nil {
		t.Fatalf("GO_IMAGE defaults to %q, want a fully qualified, pinned docker.io/library/golang:MAJOR.MINOR image", goImage)
	}
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindSubmatch(mod)
	if goLine == nil {
		t.Fatal("go.mod has no go line")
	}
	if atoi(t, m[1]) != atoi(t, string(goLine[1])) || atoi(t, m[2]) < atoi(t, string(goLine[2])) {
		t.Errorf("builder image %s is older than go.mod's go %s.%s", goImage, goLine[1], goLine[2])
	}
	releaseBuild := false
	for _, in := range build {
		if in.cmd == "RUN" && strings.Contains(in.args, "sh scripts/build.sh /rootfs/usr/bin/sluice") {
			releaseBuild = true
		}
	}
	if !releaseBuild {
		t.Error("the builder does not run scripts/build.sh (the release build) into /rootfs/usr/bin/sluice")
	}

	// The runtime.
	if runtime[0].args != "scratch" && !strings.HasPrefix(runtime[0].args, "gcr.io/distroless/static") {
		t.Errorf("runtime stage is FROM %s, want scratch or distroless static", runtime[0].args)
	}
	last := map[string]string{}
	for _, in := range runtime[1:] {
		last[in.cmd] = in.args
		if in.cmd == "COPY" && !strings.HasPrefix(in.args, "--from=build ") {
			t.Errorf("Dockerfile:%d: the runtime stage copies %q from the context, not the builder", in.line, in.args)
		}
		if in.cmd == "RUN" {
			t.Errorf("Dockerfile:%d: RUN in the runtime stage, which has no shell", in.line)
		}
	}
	if last["USER"] != "65532:65532" {
		t.Errorf("USER %q, want the numeric non-root 65532:65532", last["USER"])
	}
	if last["VOLUME"] != "/var/lib/sluice" {
		t.Errorf("VOLUME %q, want /var/lib/sluice", last["VOLUME"])
	}
	if got := strings.Fields(last["EXPOSE"]); !reflect.DeepEqual(got, []string{"61613", "61614", "5672", "5671", "8161", "15674"}) {
		t.Errorf("EXPOSE %q, want 61613 61614 5672 5671 8161 15674", got)
	}
	for key, want := range map[string][]string{
		"ENTRYPOINT": {"/usr/bin/sluice"},
		"CMD":        {"serve", "--config", "/etc/sluice/sluice.toml"},
	} {
		var got []string
		if err := json.Unmarshal([]byte(last[key]), &got); err != nil {
			t.Errorf("%s %s is not in exec (JSON) form: %v", key, last[key], err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %q, want %q", key, got, want)
		}
	}
	dockerfile, _ := os.ReadFile("../Dockerfile")
	if !strings.Contains(string(dockerfile), "cp packaging/container.toml /rootfs/etc/sluice/sluice.toml") {
		t.Error("the image does not ship packaging/container.toml as /etc/sluice/sluice.toml")
	}
	if !strings.Contains(string(dockerfile), "chown -R 65532:65532 /rootfs/var/lib/sluice") {
		t.Error("the data directory is not owned by the image's user")
	}

	ignore, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".git", "dist/", "bin/", "sluice-data/"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(p) + `$`).Match(ignore) {
			t.Errorf(".dockerignore does not leave out %s", p)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The image's configuration binds every address of the container, keeps
// its data in the volume, and is refused until users exist: the messaging
// listeners by Validate, the admin listener when it is bound. With
// allow_insecure_network (the documented trial) the messaging listeners
// are allowed.
func TestContainerConfig(t *testing.T) {
	cfg, err := config.Load("container.toml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data != "/var/lib/sluice" {
		t.Errorf("data = %q, want the image's volume /var/lib/sluice", cfg.Data)
	}
	want := config.Listeners{STOMP: "0.0.0.0:61613", AMQP: "0.0.0.0:5672", Admin: "0.0.0.0:8161", WebSocket: "0.0.0.0:15674", WebSocketAllowedOrigins: []string{}}
	if !reflect.DeepEqual(cfg.Listeners, want) {
		t.Errorf("listeners = %+v, want %+v", cfg.Listeners, want)
	}
	err = cfg.Validate()
	for _, l := range []string{"listeners.stomp 0.0.0.0:61613", "listeners.amqp 0.0.0.0:5672", "listeners.websocket 0.0.0.0:15674"} {
		if err == nil || !strings.Contains(err.Error(), l+" is not a loopback address and no users are configured") {
			t.Errorf("Validate = %v, want %s refused for want of users", err, l)
		}
	}
	if err := admin.CheckListen(cfg.Listeners.Admin, nil); err == nil || !strings.Contains(err.Error(), "no admin credentials") {
		t.Errorf("admin listener %s without credentials: %v, want a refusal", cfg.Listeners.Admin, err)
	}

	// The trial of docs/install.md: the risk accepted, and an admin token.
	trial := cfg
	trial.Security.AllowInsecureNetwork = true
	_, tokenHash, err := admin.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	trial.Admin.Tokens = []string{tokenHash}
	if err := trial.Validate(); err != nil {
		t.Errorf("with allow_insecure_network = true and a token: %v", err)
	}
}
