package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// --log-format json writes one JSON object a line with the level, the
// message and the attributes; text writes key=value; anything else is
// refused by --check-config before the broker starts.
func TestLogFormat(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("connection closed", "protocol", "stomp/1.2", "reason", "heartbeat timeout")
	log.Debug("not shown")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("json log line %q: %v", buf.String(), err)
	}
	if line["msg"] != "connection closed" || line["level"] != "INFO" || line["reason"] != "heartbeat timeout" || line["protocol"] != "stomp/1.2" {
		t.Errorf("json line = %v", line)
	}
	if strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("debug line written at info: %q", buf.String())
	}

	buf.Reset()
	log, _ = newLogger(&buf, "info", "text")
	log.Info("connection closed", "reason", "broker shutdown")
	if !strings.Contains(buf.String(), `msg="connection closed" reason="broker shutdown"`) {
		t.Errorf("text line = %q", buf.String())
	}

	clearEnv(t)
	if _, err := execute("serve", "--check-config", "--log-format", "xml"); err == nil || !strings.Contains(err.Error(), `log_format "xml": want text or json`) {
		t.Errorf("--log-format xml: %v", err)
	}
	if out, err := execute("serve", "--check-config", "--log-format", "json"); err != nil || !strings.Contains(out, "configuration ok") {
		t.Errorf("--log-format json: %q %v", out, err)
	}
	t.Setenv("SLUICE_LOG_FORMAT", "yaml")
	if _, err := execute("serve", "--check-config"); err == nil || !strings.Contains(err.Error(), `log_format "yaml"`) {
		t.Errorf("SLUICE_LOG_FORMAT=yaml: %v", err)
	}
}
