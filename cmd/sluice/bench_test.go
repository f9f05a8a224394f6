package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/internal/loadgen"
)

// runSluice runs the command tree with args and returns stdout.
func runSluice(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	if errOut.Len() > 0 {
		t.Logf("stderr: %s", errOut.String())
	}
	return out.String(), err
}

func TestBenchSTOMPInProcessJSON(t *testing.T) {
	out, err := runSluice(t, "bench", "stomp", "--scenario", "queue", "--count", "2000", "--json", "--label", "sluice",
		"--data", t.TempDir())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep loadgen.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !rep.OK || rep.Sent != 2000 || rep.Received != 2000 || rep.Label != "sluice" || rep.Options.Scenario != loadgen.ScenarioQueue {
		t.Fatalf("report %+v", rep)
	}
}

func TestBenchAMQPLeanClient(t *testing.T) {
	for _, scenario := range []string{"queue", "persistent"} {
		out, err := runSluice(t, "bench", "amqp", "--client", "lean", "--scenario", scenario, "--count", "500", "--json",
			"--data", t.TempDir())
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var rep loadgen.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !rep.OK || rep.Sent != 500 || rep.Received != 500 || rep.Missing != 0 || rep.Duplicates != 0 ||
			rep.Protocol != "amqp/lean" || string(rep.Options.Scenario) != scenario {
			t.Fatalf("report %+v", rep)
		}
	}
}

func TestBenchBacklog(t *testing.T) {
	pid := strconv.Itoa(os.Getpid()) // the in-process broker
	for _, tc := range []struct {
		name   string
		args   []string
		window int
	}{
		{"stomp lean", []string{"stomp", "--client", "lean"}, 64},
		{"stomp go-stomp window 8", []string{"stomp", "--receipt-window", "8"}, 8},
		{"amqp lean", []string{"amqp", "--client", "lean"}, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench"}, tc.args...)
			args = append(args, "--scenario", "backlog", "--count", "600", "--ack", "client-individual", "--consumers", "2",
				"--broker-pid", pid, "--json", "--data", t.TempDir())
			out, err := runSluice(t, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var rep loadgen.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !rep.OK || rep.Sent != 600 || rep.Received != 600 || rep.Missing != 0 || rep.Duplicates != 0 ||
				rep.Options.Scenario != loadgen.ScenarioBacklog || rep.Options.ReceiptWindow != tc.window || rep.Backlog == nil {
				t.Fatalf("report %+v", rep)
			}
			if b := rep.Backlog; b.FillRate <= 0 || b.DrainRate <= 0 || b.RSSAfterFill <= 0 {
				t.Fatalf("backlog %+v", b)
			}
		})
	}
	out, err := runSluice(t, "bench", "stomp", "--scenario", "backlog", "--count", "100", "--ack", "client-individual")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"backlog: queue", "fill  ", "100 confirmed in", "drain  ", "100 received in", "result      OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchSTOMPFanoutTextAndSummarize(t *testing.T) {
	dir := t.TempDir()
	out, err := runSluice(t, "bench", "stomp", "--scenario", "fanout", "--count", "200", "--consumers", "5")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"fanout: topic", "5 consumer(s)", "1000 of 1000 deliveries", "result      OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Two "brokers" (both the in-process Sluice, labelled apart) for the
	// summary.
	var all bytes.Buffer
	for _, label := range []string{"sluice", "other", "sluice", "other"} {
		js, err := runSluice(t, "bench", "stomp", "--scenario", "persistent", "--count", "50", "--json", "--label", label)
		if err != nil {
			t.Fatalf("%v\n%s", err, js)
		}
		all.WriteString(js)
	}
	file := filepath.Join(dir, "reports.json")
	if err := os.WriteFile(file, all.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := runSluice(t, "bench", "summarize", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, sum)
	}
	for _, want := range []string{"persistent", "sluice", "other", "persistent stomp: sluice / other (better peer) = ", "bar ≥ 1.5×"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

func TestBenchFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "stomp", "--addr", "127.0.0.1:1", "--cpuprofile", "x"}, "in-process"},
		{[]string{"bench", "stomp", "--scenario", "persistent", "--persistent=false"}, "persistent scenario"},
		{[]string{"bench", "stomp", "--scenario", "sideways"}, "scenario"},
		{[]string{"bench", "stomp", "--scenario", "backlog", "--receipts=false"}, "backlog scenario"},
		{[]string{"bench", "stomp", "--scenario", "backlog", "--duration", "1s", "--count", "0"}, "message count"},
		{[]string{"bench", "stomp", "--ack", "maybe"}, "ack mode"},
		{[]string{"bench", "amqp", "--addr", "127.0.0.1:1", "--address-style", "odd"}, "address-style"},
		{[]string{"bench", "amqp", "--addr", "127.0.0.1:1", "--client", "odd"}, "--client"},
		{[]string{"bench", "summarize", "/nonexistent/reports.json"}, "no such file"},
	} {
		_, err := runSluice(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestBenchAgainstUnreachableBroker(t *testing.T) {
	_, err := runSluice(t, "bench", "stomp", "--addr", "127.0.0.1:1", "--count", "10")
	if err == nil || !strings.Contains(err.Error(), "consumer 0") {
		t.Fatalf("error %v", err)
	}
}
