package config

import "testing"

// The quick starts' configuration (make examples runs them against it) is
// valid, has the policies they rely on, and no users: every quick start
// connects anonymously on loopback.
func TestQuickStartConfig(t *testing.T) {
	const file = "../../examples/config/quickstart.toml"
	cfg, err := Load(file)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if n := len(cfg.Security.Users) + len(cfg.Admin.Users) + len(cfg.Admin.Tokens); n != 0 {
		t.Errorf("%s has %d users or tokens; the quick starts connect anonymously", file, n)
	}
	want := map[string]bool{"quickstart.retry": false, "quickstart.nack": false, "quickstart.schedule": false}
	for _, d := range cfg.Destinations {
		if _, ok := want[d.Match]; ok {
			want[d.Match] = true
		}
	}
	for m, found := range want {
		if !found {
			t.Errorf("%s has no [[destination]] match = %q", file, m)
		}
	}
}
