package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
)

// TestCheckConfigRefusesWhatServeRefuses: a configuration that serve
// refuses before binding is refused by --check-config too, with the same
// problem named; --check-config creates nothing.
func TestCheckConfigRefusesWhatServeRefuses(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	aFile := filepath.Join(dir, "not-a-directory")
	if err := os.WriteFile(aFile, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	const listeners = "[listeners]\nstomp = \"127.0.0.1:0\"\namqp = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n"
	tests := []struct {
		name string
		data string // the data directory
		text string // the rest of the file
		want string
	}{
		{"configured destination named with a control character", filepath.Join(dir, "d1"),
			"[[configured_destination]]\nkind = \"queue\"\nname = \"orders\\u0007\"\n",
			`destination name "orders\a" contains a control character`},
		{"configured destination name over 255 bytes", filepath.Join(dir, "d2"),
			"[[configured_destination]]\nkind = \"topic\"\nname = \"" + strings.Repeat("n", 256) + "\"\n",
			"destination name is longer than 255 bytes"},
		{"data is a file", aFile, "",
			"data " + aFile + ": " + aFile + " is not a directory"},
		{"data under a file", filepath.Join(aFile, "sluice-data"), "",
			"is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := fmt.Sprintf("data = %q\n", tt.data) + tt.text + listeners
			file := writeConfig(t, text)

			// What serve does: Start refuses it.
			cfg, err := config.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			b, err := broker.Start(context.Background(), cfg, nil)
			if err == nil {
				_ = b.Shutdown(context.Background())
				t.Fatal("broker.Start accepted the configuration: the test's premise is wrong")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("broker.Start: %v, want it to contain %q", err, tt.want)
			}
			if err := os.RemoveAll(filepath.Join(dir, "d1")); err != nil {
				t.Fatal(err)
			}
			_ = os.RemoveAll(filepath.Join(dir, "d2"))

			out, err := execute("serve", "--check-config", "--config", file)
			if err == nil {
				t.Fatalf("serve --check-config accepted what serve refuses (%q), printing %q", tt.want, out)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("serve --check-config: %v, want it to contain %q", err, tt.want)
			}
			if _, err := os.Stat(tt.data); tt.data != aFile && err == nil {
				t.Errorf("serve --check-config created the data directory %s", tt.data)
			}
		})
	}
}
