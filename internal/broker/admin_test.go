package broker

import (
	"context"
	"fmt"
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
