package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
)

// runConformance runs `sluice conformance args...` and returns its output.
func runConformance(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"conformance"}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func startConformanceBroker(t *testing.T) string {
	t.Helper()
	cfg, err := config.Load("../../conformance/profiles/sluice.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	cfg.Listeners = config.Listeners{STOMP: "127.0.0.1:0"}
	b, err := broker.Start(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	return b.Addr("stomp").String()
}

func TestConformanceListAndShowConfig(t *testing.T) {
	out, _, err := runConformance(t, "--list", "--only", "selector/*")
	if err != nil || !strings.Contains(out, "selector/string-equals") || strings.Contains(out, "basic/fifo") {
		t.Fatalf("--list: %v\n%s", err, out)
	}
	out, _, err = runConformance(t, "--show-config")
	if err != nil || !strings.Contains(out, "[[destination]]") || !strings.Contains(out, "conf.rlimit.*") {
		t.Fatalf("--show-config: %v\n%s", err, out)
	}
	out, _, err = runConformance(t, "--show-config", "--profile", "activemq")
	if err != nil || !strings.Contains(out, "not supported:") || !strings.Contains(out, "ActiveMQ.DLQ") {
		t.Fatalf("--show-config --profile activemq: %v\n%s", err, out)
	}
	if _, _, err := runConformance(t, "--profile", "nope", "--stomp", "x:1"); err == nil {
		t.Fatal("an unknown profile is accepted")
	}
	if _, _, err := runConformance(t); err == nil || !strings.Contains(err.Error(), "--stomp") {
		t.Fatalf("no address: %v", err)
	}
}

// TestConformanceAgainstSluice runs a few scenarios against an in-process
// Sluice over STOMP, with an AMQP address nothing answers: the AMQP cells
// are reported unavailable, not failed, and the reports are written.
func TestConformanceAgainstSluice(t *testing.T) {
	stomp := startConformanceBroker(t)
	dir := t.TempDir()
	html, js, md := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md")
	out, errOut, err := runConformance(t, "--stomp", stomp, "--amqp", closedAddr(t), "--only", "basic/*",
		"--report", html, "--json", js, "--markdown", md)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "basic/fifo") || !strings.Contains(out, "stomp:") || !strings.Contains(out, "unavailable") {
		t.Fatalf("matrix:\n%s", out)
	}
	if !strings.Contains(errOut, "AMQP listener not available") {
		t.Fatalf("no note about the AMQP listener:\n%s", errOut)
	}
	var rep struct {
		Rows []struct {
			ID      string
			Results map[string]struct{ Status string }
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Rows) == 0 {
		t.Fatalf("JSON report: %v, %d rows", err, len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.Results["stomp"].Status != "pass" || r.Results["amqp"].Status != "unavailable" {
			t.Errorf("%s: %v", r.ID, r.Results)
		}
	}
	for _, f := range []string{html, md} {
		if b, err := os.ReadFile(f); err != nil || !bytes.Contains(b, []byte("basic/fifo")) {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// blackHole is a STOMP server that accepts everything and delivers
// nothing: every scenario that expects a message fails against it.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				rd, w := frame.NewReader(nc), frame.NewWriter(nc)
				for {
					f, err := rd.Read()
					if err != nil {
						return
					}
					if f == nil {
						continue
					}
					if f.Command == frame.CONNECT || f.Command == frame.STOMP {
						_ = w.Write(frame.New(frame.CONNECTED, frame.Version, "1.2"))
					} else if r, ok := f.Header.Contains(frame.Receipt); ok {
						_ = w.Write(frame.New(frame.RECEIPT, frame.ReceiptId, r))
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestConformanceFailureExitsNonZero runs a scenario against a broker that
// loses every message.
func TestConformanceFailureExitsNonZero(t *testing.T) {
	out, _, err := runConformance(t, "--stomp", blackHole(t), "--only", "basic/non-persistent", "--timeout", "20s")
	if err == nil || !strings.Contains(err.Error(), "1 failing cells") || !strings.Contains(out, "FAIL") {
		t.Fatalf("err %v\n%s", err, out)
	}
}

func TestConformanceNothingAnswers(t *testing.T) {
	_, _, err := runConformance(t, "--stomp", closedAddr(t), "--only", "basic/fifo")
	if err == nil || !strings.Contains(err.Error(), "STOMP listener not available") {
		t.Fatalf("err %v", err)
	}
}
