package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUnknownCommand: a word that is no subcommand, at the root or under any
// command group, fails with exit status 2 and a message naming it and the
// valid commands; other errors keep status 1 and a group alone prints help.
func TestUnknownCommand(t *testing.T) {
	tests := []struct {
		args       []string
		wantStatus int
		wantErr    []string // substrings of standard error
		wantOut    string   // a substring of standard output
	}{
		{args: []string{"admin", "frobnicate"}, wantStatus: 2,
			wantErr: []string{`unknown command "frobnicate" for "sluice admin"`, "import", "export", "destinations"}},
		{args: []string{"frobnicate"}, wantStatus: 2,
			wantErr: []string{`unknown command "frobnicate" for "sluice"`, "serve", "admin", "schedule"}},
		{args: []string{"schedule", "nxt", "* * * * * * *"}, wantStatus: 2,
			wantErr: []string{`unknown command "nxt" for "sluice schedule"`, "next"}},
		{args: []string{"selector", "chek", "a = 1"}, wantStatus: 2,
			wantErr: []string{`unknown command "chek" for "sluice selector"`, "check"}},
		{args: []string{"bench", "mqtt"}, wantStatus: 2,
			wantErr: []string{`unknown command "mqtt" for "sluice bench"`, "stomp", "amqp"}},
		{args: []string{"admin"}, wantStatus: 0, wantOut: "Available Commands"},
		{args: []string{"schedule", "next", "not a schedule"}, wantStatus: 1, wantErr: []string{"sluice:"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			status := run(tt.args, &out, &errOut)
			if status != tt.wantStatus {
				t.Fatalf("exit status %d, want %d\nstdout: %s\nstderr: %s", status, tt.wantStatus, out.String(), errOut.String())
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("standard error %q does not contain %q", errOut.String(), w)
				}
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("standard output %q does not contain %q", out.String(), tt.wantOut)
			}
		})
	}
}
