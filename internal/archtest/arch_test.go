// Package archtest holds the architecture test: it checks that dependencies
// point one way, cmd → internal → protocol → engine → grammar, with go list.
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sluicemq/sluice"

// list returns, for each package under pattern, its transitive
// dependencies (field "Deps") or its direct imports ("Imports").
func list(t *testing.T, pattern, field string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .`+field+` " "}}`, pattern).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, ds, _ := strings.Cut(line, ":")
		m[pkg] = strings.Fields(ds)
	}
	return m
}

func TestDependenciesPointOneWay(t *testing.T) {
	rules := []struct {
		pattern   string
		field     string // Deps: anywhere below; Imports: directly
		forbidden []string
	}{
		{module + "/grammar/...", "Deps", []string{module + "/"}},
		{module + "/engine/...", "Deps", []string{module + "/protocol", module + "/internal", module + "/cmd", module + "/conformance", module + "/gen"}},
		// The engine serves no HTTP and exports no metrics itself (the XML
		// selector library links net/http in, so only direct imports count).
		{module + "/engine/...", "Imports", []string{"net/http", "github.com/prometheus"}},
		{module + "/protocol/...", "Deps", []string{module + "/internal", module + "/cmd", module + "/conformance", module + "/gen"}},
		{module + "/internal/...", "Deps", []string{module + "/cmd", module + "/gen"}},
		// The quick starts use only their client library: nothing of Sluice.
		{module + "/examples/...", "Deps", []string{module + "/"}},
	}
	for _, r := range rules {
		for pkg, ds := range list(t, r.pattern, r.field) {
			for _, d := range ds {
				for _, f := range r.forbidden {
					if strings.HasPrefix(d, f) && !strings.HasPrefix(d, strings.TrimSuffix(r.pattern, "...")) {
						t.Errorf("%s depends on %s", pkg, d)
					}
				}
			}
		}
	}
	// The STOMP codec stands alone: it imports nothing of the project.
	for pkg, ds := range list(t, module+"/protocol/stomp/frame", "Deps") {
		for _, d := range ds {
			if strings.HasPrefix(d, module+"/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
	// The tools' AMQP 1.0 client speaks the wire through the codec only,
	// and the clients' shared writer (internal/clientio, which imports
	// nothing of the project): nothing of the broker, so it drives a
	// broker from outside.
	codec := map[string]bool{module + "/protocol/amqp/types": true, module + "/protocol/amqp/frames": true,
		module + "/internal/clientio": true}
	for pkg, ds := range list(t, module+"/internal/clientio", "Deps") {
		for _, d := range ds {
			if strings.HasPrefix(d, module+"/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
	for pkg, ds := range list(t, module+"/internal/amqp1client/...", "Deps") {
		for _, d := range ds {
			if strings.HasPrefix(d, module+"/") && !codec[d] {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}
