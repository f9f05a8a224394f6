//go:build interop

// AMQP 1.0 interop: the same pattern as stomp_test.go, for Sluice's AMQP
// server. Each test starts an in-process broker (internal/broker.Start, a
// temporary data directory, AMQP and STOMP on 127.0.0.1:0, admin off), runs
// a client script as a subprocess with the AMQP port as its first argument
// (and in SLUICE_AMQP_PORT; the STOMP port, for the cross-protocol
// scenario, is in SLUICE_STOMP_PORT), and asserts on its exit code and its
// "PASS <scenario>" line.
//
// The clients:
//   - Qpid Proton Python, Debian's python3-qpid-proton, run by
//     /usr/bin/python3 (SLUICE_INTEROP_PYTHON overrides, as for stomp.py).
//     Script: python/proton_py.py.
//   - rhea on Node (20 or later), pinned in package.json and
//     package-lock.json beside @stomp/stompjs; install with `npm ci` in this
//     directory. Script: js/rhea.mjs.
//
// Missing clients skip, or fail under CI / SLUICE_INTEROP_REQUIRE=1, as in
// stomp_test.go. (The package comment is in stomp_test.go.)
//
// The security scenario needs a broker with users and grants: its test
// starts the engine and the AMQP server directly with a security.Realm,
// and gives the script the user and password in SLUICE_AMQP_USER and
// SLUICE_AMQP_PASSWORD.

package interop

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
	"github.com/sluicemq/sluice/protocol/amqp"
)

// amqpDestinations give the queue the outcomes scenario rejects messages on
// an error destination (the [[destination]] error_destination setting),
// which the script reads to check where a rejected message went.
var amqpDestinations = []config.Destination{
	{Match: "py.outcomes", Kind: "queue", ErrorDestination: "/queue/py.outcomes.DLQ"},
	{Match: "pika.redelivery", Kind: "queue", RedeliveryLimit: &pikaRedeliveryLimit, ErrorDestination: "/queue/pika.redelivery.DLQ"},
}

// pikaRedeliveryLimit is the redelivery limit of pika's redelivery
// scenario (amqp091_test.go): two redeliveries, then the error destination.
var pikaRedeliveryLimit int32 = 2

// amqpSluice is an in-process broker with AMQP and STOMP listeners.
type amqpSluice struct {
	t         *testing.T
	logs      *syncBuffer
	b         *broker.Broker
	amqpPort  int
	stompPort int
	env       []string // more environment for the scripts
}

// startAMQPSluice starts a broker on a fresh temporary data directory, with
// the per-destination policies of amqpDestinations.
func startAMQPSluice(t *testing.T) *amqpSluice {
	t.Helper()
	s := &amqpSluice{t: t, logs: &syncBuffer{}}
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.LogLevel = "debug"
	cfg.Listeners = config.Listeners{STOMP: "127.0.0.1:0", AMQP: "127.0.0.1:0", Admin: ""}
	cfg.Destinations = append([]config.Destination(nil), amqpDestinations...)
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := broker.Start(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	s.b = b
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.b.Shutdown(ctx); err != nil {
			t.Errorf("broker shutdown: %v", err)
		}
		if t.Failed() {
			t.Logf("broker log:\n%s", s.logs.String())
		}
	})
	for name, port := range map[string]*int{"amqp": &s.amqpPort, "stomp": &s.stompPort} {
		addr, ok := b.Addr(name).(*net.TCPAddr)
		if !ok || addr.Port == 0 {
			t.Fatalf("%s listener address %v", name, b.Addr(name))
		}
		*port = addr.Port
	}
	if b.Addr("admin") != nil {
		t.Fatalf("admin listening on %v, want it disabled", b.Addr("admin"))
	}
	return s
}

// runAMQPScript runs a client scenario against s (the AMQP port as the
// first argument) and returns its output; the test fails unless it exits 0
// and prints "PASS scenario". It is runScript with both ports in the
// environment.
func runAMQPScript(t *testing.T, s *amqpSluice, scenario string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	args := append(argv[1:len(argv):len(argv)], strconv.Itoa(s.amqpPort), scenario)
	cmd := exec.CommandContext(ctx, argv[0], args...)
	cmd.Env = append(os.Environ(),
		"SLUICE_AMQP_PORT="+strconv.Itoa(s.amqpPort),
		"SLUICE_STOMP_PORT="+strconv.Itoa(s.stompPort),
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
		"NO_COLOR=1",
	)
	cmd.Env = append(cmd.Env, s.env...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start).Round(10 * time.Millisecond)
	output := out.String()
	name := filepath.Base(argv[len(argv)-1])
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s: no result within %s\n%s", name, scenario, scriptTimeout, output)
	case err != nil:
		t.Fatalf("%s %s: %v after %s\n%s", name, scenario, err, elapsed, output)
	case !regexp.MustCompile(`(?m)^PASS ` + regexp.QuoteMeta(scenario) + `\b`).MatchString(output):
		t.Fatalf("%s %s exited 0 without its PASS line\n%s", name, scenario, output)
	}
	t.Logf("%s %s passed in %s", name, scenario, elapsed)
	if os.Getenv("SLUICE_INTEROP_DEBUG") == "1" {
		t.Logf("output:\n%s", output)
	}
	return output
}

// TestProtonPy runs each Qpid Proton Python scenario against its own broker.
func TestProtonPy(t *testing.T) {
	py := pythonWith(t, "proton", "'.'.join(map(str, proton.VERSION))", "Qpid Proton Python", "python3-qpid-proton")
	script := filepath.Join("python", "proton_py.py")
	for _, scenario := range []string{
		"properties", // application properties keep their AMQP types (int, long, float, double, boolean, string, …); bodies
		"headers",    // header and properties sections: durable, priority, ttl, message-id, correlation-id, subject, reply-to
		"selector",   // topic with JMS selector filters (symbol and ulong descriptor); invalid selector: amqp:invalid-field
		"outcomes",   // released / modified(delivery-failed) / rejected: delivery-count, error destination
		"durable",    // durable subscription by container-id + link name, kept across detach, deleted by a closed detach
		"tempqueue",  // dynamic source for request/reply over the anonymous relay; deleted with its link
		"delay",      // x-opt-delivery-delay holds a message back; x-opt-delivery-time on delivery
		"cross",      // raw STOMP SEND received over AMQP with mapped fields, and AMQP typed properties to STOMP
	} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			s := startAMQPSluice(t)
			runAMQPScript(t, s, scenario, py, script)
		})
	}
}

// TestRhea runs each rhea scenario against its own broker.
func TestRhea(t *testing.T) {
	nd := nodeWith(t, "rhea")
	script := filepath.Join("js", "rhea.mjs")
	for _, scenario := range []string{
		"properties", // send/receive with application properties and bodies
		"credit",     // credit window 0 + flow, manual accept/release, auto-accept window, settle modes
		"selector",   // rhea.filter.selector on a topic; an invalid one refused with amqp:invalid-field
		"drain",      // receiver.drain + flow answered by a drained flow ('receiver_drained')
	} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			s := startAMQPSluice(t)
			runAMQPScript(t, s, scenario, nd, script)
		})
	}
}

// The user of the security scenario.
const (
	secureUser     = "interop-app"
	securePassword = "interop-secret"
)

// startSecureAMQP starts an engine and an AMQP server on 127.0.0.1:0 with a
// realm: secureUser may send to, consume from and create queues
// py.sec.ok.* and js.sec.ok.*, and nothing else; no anonymous access.
func startSecureAMQP(t *testing.T) (*amqpSluice, *engine.Broker) {
	t.Helper()
	s := &amqpSluice{t: t, logs: &syncBuffer{}, env: []string{"SLUICE_AMQP_USER=" + secureUser, "SLUICE_AMQP_PASSWORD=" + securePassword}}
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hash, err := bcrypt.GenerateFromPassword([]byte(securePassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	realm, err := security.New(security.Options{
		Users: []security.User{{Name: secureUser, PasswordHash: string(hash), Roles: []string{"app"}}},
		Grants: []security.Grant{
			{Role: "app", Kind: "queue", Match: "py.sec.ok.*", Actions: []string{"send", "consume", "create"}},
			{Role: "app", Kind: "queue", Match: "js.sec.ok.*", Actions: []string{"send", "consume", "create"}},
		},
		Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := amqp.NewServer(eng, amqp.Options{Realm: realm, Logger: log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = eng.Close()
		if t.Failed() {
			t.Logf("broker log:\n%s", s.logs.String())
		}
	})
	s.amqpPort = ln.Addr().(*net.TCPAddr).Port
	return s, eng
}

// TestAMQPSecurity runs the security scenario of Qpid Proton Python and of
// rhea against a broker with a realm: PLAIN login, a wrong password
// refused, a denied queue refused with amqp:unauthorized-access on the link
// while the connection carries on, and nothing stored on the denied queue.
func TestAMQPSecurity(t *testing.T) {
	clients := []struct {
		name, prefix string
		argv         func(t *testing.T) []string
	}{
		{"proton-python", "py", func(t *testing.T) []string {
			py := pythonWith(t, "proton", "'.'.join(map(str, proton.VERSION))", "Qpid Proton Python", "python3-qpid-proton")
			return []string{py, filepath.Join("python", "proton_py.py")}
		}},
		{"rhea", "js", func(t *testing.T) []string {
			return []string{nodeWith(t, "rhea"), filepath.Join("js", "rhea.mjs")}
		}},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			argv := c.argv(t)
			s, eng := startSecureAMQP(t)
			runAMQPScript(t, s, "security", argv...)
			denied := message.Destination{Kind: message.Queue, Name: c.prefix + ".sec.denied"}
			if _, err := eng.DestinationInfo(denied); err == nil {
				t.Fatalf("queue %s exists after refused sends", denied.Name)
			}
		})
	}
}
