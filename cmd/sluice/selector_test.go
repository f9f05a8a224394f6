package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/grammar/selector"
)

// runSelectorCmd runs `sluice selector` with args and stdin and returns
// what it printed.
func runSelectorCmd(stdin string, args ...string) (string, error) {
	cmd := newSelectorCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

const orderMessage = `{
  "headers": {"JMSPriority": 6, "JMSType": "order", "JMSRedelivered": false,
              "JMSDeliveryMode": "PERSISTENT", "JMSCorrelationID": null},
  "properties": {
    "salary":   {"type": "int", "value": 70000},
    "dept":     {"type": "string", "value": "eng"},
    "version":  {"type": "float", "value": 3.1},
    "fired":    {"type": "boolean", "value": true},
    "small":    {"type": "byte", "value": -128},
    "big":      {"type": "long", "value": 9223372036854775807},
    "ratio":    {"type": "double", "value": 0.5},
    "count":    {"type": "short", "value": 12}
  },
  "body": {"type": "xml", "text": "<order><item><name>Drill</name></item><item><name>Mitre Saw</name></item></order>"}
}`

// TestSelectorCheck runs `sluice selector check` without a message.
func TestSelectorCheck(t *testing.T) {
	tests := []struct {
		name string
		sel  string
		want string
	}{
		{"plain", "salary > 64000 and dept in ('eng','qa')", "ok\n"},
		{"target", "Wilma IS NOT NULL", "ok: indexed subscriber target \"Wilma\" (selects messages that have the property Wilma)\n"},
		{"header is no target", "JMSType IS NOT NULL", "ok\n"},
		{"empty", "  ", "ok: empty selector, selects every message\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runSelectorCmd("", "check", tt.sel)
			if err != nil {
				t.Fatalf("check %q: %v", tt.sel, err)
			}
			if out != tt.want {
				t.Errorf("check %q printed %q, want %q", tt.sel, out, tt.want)
			}
		})
	}
}

// TestSelectorCheckError checks the error and its source-line display.
func TestSelectorCheckError(t *testing.T) {
	_, err := runSelectorCmd("", "check", "(a = 1 AND\n\tb")
	if err == nil {
		t.Fatal("no error")
	}
	var se *selector.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %T is not a *selector.Error", err)
	}
	want := "selector:2:3: expected \")\" but found end of input\n  \tb\n  \t ^"
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	if _, err := runSelectorCmd("", "check"); err == nil {
		t.Error("check without a selector succeeded")
	}
}

// TestSelectorCheckMessage evaluates selectors against JSON messages.
func TestSelectorCheckMessage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "msg.json")
	if err := os.WriteFile(file, []byte(orderMessage), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sel  string
		want string
	}{
		{"salary > 64000 and dept in ('eng','qa')", "true"},
		{"JMSPriority >= 6 AND JMSType = 'order' AND NOT JMSRedelivered", "true"},
		{"JMSDeliveryMode = 'PERSISTENT'", "true"},
		{"JMSCorrelationID IS NULL", "true"},
		{"version > 3.0 AND version < 3.1", "true"}, // float 3.1 rounds to 3.0999999
		{"fired AND small = -128 AND big > 0 AND ratio = 0.5 AND count = 12", "true"},
		{"dept = 'qa'", "false"},
		{"missing = 1", "unknown"},
		{"JMS_BEA_SELECT('xpath', '/order/item[2]/name/text()') = 'Mitre Saw'", "true"},
	}
	for _, tt := range tests {
		out, err := runSelectorCmd("", "check", tt.sel, "--message", file)
		if err != nil {
			t.Fatalf("check %q: %v", tt.sel, err)
		}
		if out != tt.want+"\n" {
			t.Errorf("check %q printed %q, want %q", tt.sel, out, tt.want)
		}
	}
	out, err := runSelectorCmd(`{"properties": {"x": {"type": "int", "value": 1}}}`, "check", "x = 1", "--message", "-")
	if err != nil || out != "true\n" {
		t.Errorf("message on stdin: %q, %v", out, err)
	}
}

// TestSelectorCheckBadMessage checks the JSON validation.
func TestSelectorCheckBadMessage(t *testing.T) {
	tests := []struct {
		json string
		want string
	}{
		{`{`, "bad JSON"},
		{`{"extra": 1}`, "unknown field"},
		{`{} {}`, "more than one value"},
		{`{"headers": {"JMSDestination": "q"}}`, "not a selectable header"},
		{`{"headers": {"JMSPriority": 10}}`, "not in 0-9"},
		{`{"headers": {"JMSPriority": "high"}}`, "want an integer"},
		{`{"headers": {"JMSDeliveryMode": "FAST"}}`, "PERSISTENT"},
		{`{"headers": {"JMSType": 3}}`, "want a string"},
		{`{"headers": {"JMSRedelivered": "yes"}}`, "true or false"},
		{`{"properties": {"p": {"type": "byte", "value": 128}}}`, "does not fit in 8 bits"},
		{`{"properties": {"p": {"type": "int", "value": 1.5}}}`, "not an integer"},
		{`{"properties": {"p": {"type": "float", "value": 1e40}}}`, "out of range"},
		{`{"properties": {"p": {"type": "decimal", "value": 1}}}`, `type "decimal"`},
		{`{"properties": {"p": {"type": "string"}}}`, "no value"},
		{`{"properties": {"p": {"type": "string", "value": 1}}}`, "JSON string"},
		{`{"properties": {"p": {"type": "boolean", "value": 1}}}`, "true or false"},
		{`{"body": {"type": "bytes", "text": "x"}}`, `body type "bytes"`},
	}
	for _, tt := range tests {
		_, err := runSelectorCmd(tt.json, "check", "p = 1", "--message", "-")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("message %s: error %v, want it to mention %q", tt.json, err, tt.want)
		}
	}
	if _, err := runSelectorCmd("", "check", "p = 1", "--message", filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("missing message file accepted")
	}
}

// TestSelectorRegistered checks that the root command has the subcommand.
func TestSelectorRegistered(t *testing.T) {
	for _, c := range newRootCommand().Commands() {
		if c.Name() == "selector" {
			return
		}
	}
	t.Error("sluice has no selector subcommand")
}
