package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/engine/store/boltstore"
	"github.com/sluicemq/sluice/internal/config"
)

// clearEnv unsets every SLUICE_* variable serve reads, for the test's
// duration, so the caller's environment cannot change the results.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"SLUICE_DATA", "SLUICE_STOMP", "SLUICE_AMQP", "SLUICE_STOMPS", "SLUICE_AMQPS", "SLUICE_AMQP091", "SLUICE_ADMIN", "SLUICE_WEBSOCKET", "SLUICE_LOG_LEVEL", "SLUICE_LOG_FORMAT"} {
		t.Setenv(k, "") // ApplyEnv ignores empty variables
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "sluice.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

const goodConfig = `
log_level = "warn"

[listeners]
stomp = ""
amqp = "127.0.0.1:0"

[connection]
client_id_policy = "unrestricted"

[[destination]]
match = "orders.*"
kind = "queue"
redelivery_limit = 3
error_destination = "/queue/orders.DLQ"

[[destination]]
match = "reports"
time_to_deliver_override = "0 0 0,30 * * * *"
`

func TestServeCheckConfig(t *testing.T) {
	clearEnv(t)
	file := writeConfig(t, goodConfig)
	out, err := execute("serve", "--check-config", "--config", file)
	if err != nil {
		t.Fatalf("serve --check-config: %v", err)
	}
	if out != "configuration ok\n" {
		t.Errorf("serve --check-config printed %q, want %q", out, "configuration ok\n")
	}

	// No file at all: the defaults are valid.
	out, err = execute("serve", "--check-config")
	if err != nil || out != "configuration ok\n" {
		t.Errorf("serve --check-config with no file = %q, %v", out, err)
	}
}

// The example at the repository root is a valid configuration.
func TestServeCheckExampleConfig(t *testing.T) {
	clearEnv(t)
	out, err := execute("serve", "--check-config", "--config", "../../sluice.example.toml")
	if err != nil || out != "configuration ok\n" {
		t.Errorf("serve --check-config --config sluice.example.toml = %q, %v", out, err)
	}
}

func TestServeCheckConfigErrors(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		name, text string
		args       []string
		want       []string
	}{
		{"TLS listener without a certificate", "", []string{"--stomps", "127.0.0.1:61614", "--amqps", "127.0.0.1:5671"},
			[]string{"listeners.stomps serves TLS but has no cert_file", "listeners.amqps serves TLS but has no key_file"}},
		{"missing certificate file", "[tls]\ncert_file = \"tls/nope.crt\"\nkey_file = \"tls/nope.key\"\n", []string{"--amqps", "127.0.0.1:5671"},
			[]string{"listeners.amqps TLS: cert_file: open ", "tls/nope.crt: no such file or directory"}},
		{"unknown key", "[listeners]\nstomp = \"\"\nhttp = \"127.0.0.1:80\"\n", nil,
			[]string{"read config", "unknown keys: listeners.http"}},
		{"TOML syntax", "log_level = \n", nil, []string{"read config"}},
		{"invalid values", `
log_level = "loud"
[connection]
priority = 11
[[destination]]
match = "a"
expiration_policy = "redirect"
[[destination]]
match = "b"
time_to_deliver_override = "0 0 0,30 * * *"
`, nil, []string{
			`log_level "loud"`,
			"connection.priority 11: want 0-9",
			`destination[0] (match "a"): expiration_policy redirect needs error_destination`,
			`destination[1] (match "b"): time_to_deliver_override: schedule:1:15: dayOfWeek field missing`,
		}},
		{"bad flag value", "", []string{"--admin", "localhost"}, []string{"listeners.admin", "missing port"}},
		{"admin listener on the network without credentials", "", []string{"--admin", "0.0.0.0:8161"},
			[]string{"listeners.admin 0.0.0.0:8161 is not a loopback address and no admin credentials"}},
		{"network listener without users", "", []string{"--stomp", "0.0.0.0:61613"},
			[]string{"listeners.stomp 0.0.0.0:61613 is not a loopback address", "allow_insecure_network"}},
		{"websocket on the network without users", "", []string{"--websocket", "0.0.0.0:15674"},
			[]string{"listeners.websocket 0.0.0.0:15674 is not a loopback address", "allow_insecure_network"}},
		{"websocket flag value", "", []string{"--websocket", "15674"}, []string{"listeners.websocket", "missing port"}},
		{"contradictory grant", `
[[security.users]]
name = "a"
password_hash = "$2a$04$g3QoGNgfC1dmCAh6pnf64uQ8yuRShCvpBJBMZbDfS25AR68Ybkc7m"
roles = ["ops"]
[[security.grants]]
role = "ops"
match = "*"
actions = ["admin", "send"]
`, nil, []string{":6: security.grants[0]: admin and monitor apply to the whole broker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeConfig(t, tt.text)
			out, err := execute(append([]string{"serve", "--check-config", "--config", file}, tt.args...)...)
			if err == nil {
				t.Fatalf("serve --check-config succeeded, printing %q", out)
			}
			if strings.Contains(out, "configuration ok") {
				t.Errorf("serve --check-config printed %q for a bad configuration", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}

	_, err := execute("serve", "--check-config", "--config", filepath.Join(t.TempDir(), "missing.toml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("missing file: error %v, want one naming the file and wrapping os.ErrNotExist", err)
	}
	if _, err := execute("serve", "extra-arg"); err == nil {
		t.Error("serve accepted a positional argument")
	}
}

// TestMainProcess is not a test: child processes (TestServeBadConfigExit,
// TestConformanceRestartCommand's brokers) run main here with the arguments
// they are given.
func TestMainProcess(t *testing.T) {
	args := os.Getenv("SLUICE_TEST_MAIN_ARGS")
	if args == "" {
		t.Skip("runs only as the child of TestServeBadConfigExit")
	}
	os.Args = append([]string{"sluice"}, strings.Split(args, "\n")...)
	main()
}

// The real binary prints a bad configuration's error on standard error,
// prefixed "sluice:", and exits with status 1.
func TestServeBadConfigExit(t *testing.T) {
	file := writeConfig(t, "[connection]\nprefech = 10\n")
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainProcess$")
	cmd.Env = append(os.Environ(),
		"SLUICE_TEST_MAIN_ARGS="+strings.Join([]string{"serve", "--check-config", "--config", file}, "\n"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit = %v, want status 1 (stdout %q, stderr %q)", err, stdout.String(), stderr.String())
	}
	want := "sluice: read config " + file + ": unknown keys: connection.prefech\n"
	if stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
	if strings.Contains(stdout.String(), "configuration ok") {
		t.Errorf("stdout = %q", stdout.String())
	}
}

// Settings are applied as defaults < file < SLUICE_* environment < flags;
// log_level shows it, since --check-config validates it.
func TestServePrecedence(t *testing.T) {
	clearEnv(t)
	badFile := writeConfig(t, "log_level = \"from-file\"\n")
	goodFile := writeConfig(t, "log_level = \"debug\"\n")

	check := func(env string, args ...string) error {
		t.Helper()
		t.Setenv("SLUICE_LOG_LEVEL", env)
		_, err := execute(append([]string{"serve", "--check-config"}, args...)...)
		return err
	}
	if err := check("", "--config", badFile); err == nil || !strings.Contains(err.Error(), `"from-file"`) {
		t.Errorf("file over defaults: %v", err)
	}
	if err := check("info", "--config", badFile); err != nil {
		t.Errorf("environment over file: %v", err)
	}
	if err := check("from-env", "--config", goodFile); err == nil || !strings.Contains(err.Error(), `"from-env"`) {
		t.Errorf("environment over file: %v", err)
	}
	if err := check("from-env", "--config", badFile, "--log-level", "error"); err != nil {
		t.Errorf("flag over environment and file: %v", err)
	}
	if err := check("", "--log-level", "from-flag"); err == nil || !strings.Contains(err.Error(), `"from-flag"`) {
		t.Errorf("flag over defaults: %v", err)
	}
	// A flag left at its default does not undo the file or the environment.
	if err := check("", "--config", badFile, "--data", "x"); err == nil {
		t.Error("an unrelated flag overrode log_level from the file")
	}
}

// The flags' documented defaults are config.Default's.
func TestServeFlagDefaults(t *testing.T) {
	def := config.Default()
	want := map[string]string{
		"data":         def.Data,
		"stomp":        def.Listeners.STOMP,
		"amqp":         def.Listeners.AMQP,
		"stomps":       def.Listeners.STOMPS,
		"amqps":        def.Listeners.AMQPS,
		"amqp091":      def.Listeners.AMQP091,
		"admin":        def.Listeners.Admin,
		"websocket":    def.Listeners.WebSocket,
		"log-level":    def.LogLevel,
		"log-format":   def.LogFormat,
		"config":       "",
		"check-config": "false",
	}
	flags := newServeCommand().Flags()
	for name, v := range want {
		f := flags.Lookup(name)
		if f == nil {
			t.Errorf("no --%s flag", name)
			continue
		}
		if f.DefValue != v {
			t.Errorf("--%s defaults to %q, config.Default has %q", name, f.DefValue, v)
		}
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// waitReady polls the admin /readyz of addr until it answers 200 or done
// is closed.
func waitReady(t *testing.T, addr string, done <-chan error) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("serve returned before it was ready: %v", err)
		default:
		}
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("http://%s/readyz never answered 200", addr)
}

// waitDone waits for serve to return after its context is cancelled.
func waitDone(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not return after its context was cancelled")
		return nil
	}
}

// serve runs the broker until its context is cancelled, then shuts down
// cleanly and releases the data directory.
func TestServeRunsUntilCancelled(t *testing.T) {
	clearEnv(t)
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.LogLevel = "error"
	cfg.Listeners = config.Listeners{Admin: freeAddr(t)}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg) }()
	waitReady(t, cfg.Listeners.Admin, done)

	// A second broker on the same data directory is refused.
	other := cfg
	other.Listeners = config.Listeners{}
	err := serve(ctx, other)
	if !errors.Is(err, boltstore.ErrInUse) || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second serve on %s = %v, want an in-use error", cfg.Data, err)
	}

	cancel()
	if err := waitDone(t, done); err != nil {
		t.Fatalf("serve after cancel = %v, want nil", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Data, "sluice.db")); err != nil {
		t.Errorf("store file: %v", err)
	}

	// The directory is free again.
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { done2 <- serve(ctx2, cfg) }()
	waitReady(t, cfg.Listeners.Admin, done2)
	cancel2()
	if err := waitDone(t, done2); err != nil {
		t.Fatalf("second run: serve after cancel = %v", err)
	}
}

// The whole command, flags included: `sluice serve --config F --data D
// --admin A` serves the admin listener on A until the context ends.
func TestServeCommand(t *testing.T) {
	clearEnv(t)
	file := writeConfig(t, "log_level = \"error\"\n[listeners]\nstomp = \"\"\namqp = \"\"\nadmin = \"\"\nwebsocket = \"\"\n")
	data := filepath.Join(t.TempDir(), "data")
	admin := freeAddr(t)

	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "--config", file, "--data", data, "--admin", admin})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	waitReady(t, admin, done)
	if _, err := os.Stat(filepath.Join(data, "sluice.db")); err != nil {
		t.Errorf("--data: store file: %v", err)
	}
	cancel()
	if err := waitDone(t, done); err != nil {
		t.Fatalf("sluice serve after cancel = %v (output %q)", err, out.String())
	}
}

func TestServeBadLogLevel(t *testing.T) {
	cfg := config.Default()
	cfg.LogLevel = "loud"
	if err := serve(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "log level") {
		t.Errorf("serve with log level loud = %v", err)
	}
}

// `sluice serve --amqp091 A` serves AMQP 0-9-1 clients on A, with the
// AMQP 1.0 port off.
func TestServeAMQP091Flag(t *testing.T) {
	clearEnv(t)
	file := writeConfig(t, "log_level = \"error\"\n[listeners]\nstomp = \"\"\namqp = \"\"\nwebsocket = \"\"\n")
	admin, addr := freeAddr(t), freeAddr(t)
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "--config", file, "--data", t.TempDir(), "--admin", admin, "--amqp091", addr})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	waitReady(t, admin, done)
	c, err := amqp091.Dial("amqp://guest:guest@" + addr + "/")
	if err != nil {
		t.Fatalf("AMQP 0-9-1 client on --amqp091 %s: %v", addr, err)
	}
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("flag.q", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	cancel()
	if err := waitDone(t, done); err != nil {
		t.Fatalf("sluice serve after cancel = %v (output %q)", err, out.String())
	}
}
