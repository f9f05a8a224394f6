package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/internal/loadgen"
)

// TestBenchAMQP091Clients runs "sluice bench amqp091" against the
// in-process broker with each client and scenario, and checks the counts
// in the JSON report.
func TestBenchAMQP091Clients(t *testing.T) {
	for _, tc := range []struct {
		client, scenario string
		extra            []string
		deliveries       int64
	}{
		{"lean", "queue", nil, 500},
		{"lean", "persistent", []string{"--receipt-window", "64", "--ack", "client-individual", "--prefetch", "100"}, 500},
		{"lean", "fanout", []string{"--consumers", "5"}, 2500},
		{"lean", "backlog", []string{"--ack", "client", "--ack-every", "10", "--prefetch", "100"}, 500},
		{"amqp091-go", "queue", nil, 500},
	} {
		t.Run(tc.client+"/"+tc.scenario, func(t *testing.T) {
			args := append([]string{"bench", "amqp091", "--client", tc.client, "--scenario", tc.scenario, "--count", "500", "--json",
				"--data", t.TempDir()}, tc.extra...)
			out, err := runSluice(t, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var rep loadgen.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			wantProto := "amqp091"
			if tc.client == "lean" {
				wantProto = "amqp091/lean"
			}
			if !rep.OK || rep.Sent != 500 || rep.Received != tc.deliveries || rep.Missing != 0 || rep.Duplicates != 0 ||
				rep.Protocol != wantProto || string(rep.Options.Scenario) != tc.scenario {
				t.Fatalf("report %+v", rep)
			}
		})
	}
}

func TestBenchAMQP091UnknownClient(t *testing.T) {
	_, err := runSluice(t, "bench", "amqp091", "--client", "pika", "--count", "10")
	if err == nil || !strings.Contains(err.Error(), `--client "pika"`) {
		t.Fatalf("err %v, want the unknown client named", err)
	}
}
