package config

import (
	"strings"
	"testing"
)

// log_format is text or json, from the file or SLUICE_LOG_FORMAT; anything
// else is refused, naming the choices.
func TestLogFormat(t *testing.T) {
	for _, tt := range []struct {
		file, env string
		want      string
		err       string
	}{
		{"", "", "text", ""},
		{`log_format = "json"`, "", "json", ""},
		{`log_format = "json"`, "text", "text", ""},
		{"", "json", "json", ""},
		{`log_format = "logfmt"`, "", "", `log_format "logfmt": want text or json`},
	} {
		t.Run(tt.file+"/"+tt.env, func(t *testing.T) {
			cfg, err := Load(writeFile(t, tt.file+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			cfg.ApplyEnv(func(k string) string {
				if k == "SLUICE_LOG_FORMAT" {
					return tt.env
				}
				return ""
			})
			err = cfg.Validate()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Validate() = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || cfg.LogFormat != tt.want {
				t.Fatalf("log_format %q (%v), want %q", cfg.LogFormat, err, tt.want)
			}
		})
	}
}
