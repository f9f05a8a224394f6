package broker

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/internal/admin"
	"github.com/sluicemq/sluice/internal/config"
)

// The admin listener binds a non-loopback address only with credentials,
// and fails before the store is touched.
func TestStartRefusesExposedAdminWithoutCredentials(t *testing.T) {
	dir := t.TempDir() + "/data"
	cfg := testConfig(dir)
	cfg.Listeners.Admin = "0.0.0.0:0"
	_, err := Start(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("Start = %v, want a refusal", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused start created the data directory: %v", err)
	}

	cfg.Admin.Tokens = []string{"sha256:nothex"}
	if _, err := Start(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "admin") {
		t.Fatalf("Start with a malformed token = %v", err)
	}
}

func TestStartWithAdminCredentials(t *testing.T) {
	token, hash, err := admin.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.Listeners.Admin = "0.0.0.0:0"
	cfg.Admin = config.Admin{Tokens: []string{hash}}
	b := start(t, cfg)
	defer shutdown(t, b)
	url := fmt.Sprintf("http://127.0.0.1:%d/api/destinations", b.Addr("admin").(*net.TCPAddr).Port)
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", res.StatusCode)
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("with the token: %d", res.StatusCode)
	}
}

// An [admin] user is an administrator of the realm: it may change things
// on a listener that other machines reach, a wrong password is refused,
// and both show in sluice_auth_attempts_total, next to the denied-action
// series at zero.
func TestAdminUsersAreRealmAdministrators(t *testing.T) {
	hash, err := admin.HashPassword("pw")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.Listeners.Admin = "0.0.0.0:0"
	cfg.Admin = config.Admin{Users: []config.AdminUser{{Name: "ops", PasswordHash: hash}}}
	b := start(t, cfg)
	defer shutdown(t, b)
	base := fmt.Sprintf("http://127.0.0.1:%d", b.Addr("admin").(*net.TCPAddr).Port)
	do := func(method, path, password string, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.SetBasicAuth("ops", password)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	if code, body := do("POST", "/api/destinations", "pw", `{"kind":"queue","name":"orders"}`); code != http.StatusCreated {
		t.Fatalf("create as ops: %d %s", code, body)
	}
	if code, body := do("GET", "/api/whoami", "pw", ""); code != http.StatusOK || !strings.Contains(body, `"role":"admin"`) {
		t.Fatalf("whoami as ops: %d %s", code, body)
	}
	if code, _ := do("GET", "/api/destinations", "wrong", ""); code != http.StatusUnauthorized {
		t.Fatalf("a wrong password: %d", code)
	}
	_, metrics := do("GET", "/metrics", "pw", "")
	for _, want := range []string{
		`sluice_auth_attempts_total{protocol="admin",result="success"} 3`, // create, whoami, this scrape
		`sluice_auth_attempts_total{protocol="admin",result="failure"} 1`,
		`sluice_auth_attempts_total{protocol="stomp",result="failure"} 0`,
		`sluice_authorization_denied_total{action="send",protocol="stomp"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(metrics, "sluice_auth"))
		}
	}
}
