package conformance

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Admin is a broker's management API, as far as the suite uses it.
type Admin interface {
	// DeleteDestination deletes a queue or topic.
	DeleteDestination(ctx context.Context, d Dest) error
}

// SluiceAdmin is Sluice's admin HTTP API (internal/admin): DELETE
// /api/destinations/{kind}/{name}, with a bearer token or basic
// authentication when the broker asks for one.
type SluiceAdmin struct {
	base        string
	token       string
	user, pass  string
	client      *http.Client
	unavailable string
}

// NewSluiceAdmin returns the admin client for a Sluice admin listener at
// addr (host:port).
func NewSluiceAdmin(addr, token, user, pass string) *SluiceAdmin {
	return &SluiceAdmin{base: "http://" + addr, token: token, user: user, pass: pass,
		client: &http.Client{Timeout: 10 * time.Second}}
}

func (a *SluiceAdmin) do(ctx context.Context, method, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, nil)
	if err != nil {
		return 0, "", err
	}
	switch {
	case a.token != "":
		req.Header.Set("Authorization", "Bearer "+a.token)
	case a.user != "":
		req.SetBasicAuth(a.user, a.pass)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(body)), nil
}

// Probe checks that the API exists (GET /api/destinations answers 200); it
// returns why not otherwise.
func (a *SluiceAdmin) Probe(ctx context.Context) error {
	code, body, err := a.do(ctx, http.MethodGet, "/api/destinations")
	switch {
	case err != nil:
		return fmt.Errorf("admin API at %s not reachable: %v", a.base, err)
	case code == http.StatusNotFound:
		return fmt.Errorf("%s has no /api/destinations (this Sluice has no management API yet)", a.base)
	case code != http.StatusOK:
		return fmt.Errorf("GET %s/api/destinations: %d %s", a.base, code, oneLine(body, 200))
	}
	return nil
}

// DeleteDestination deletes d.
func (a *SluiceAdmin) DeleteDestination(ctx context.Context, d Dest) error {
	kind := "queue"
	if d.Kind.IsTopic() {
		kind = "topic"
	}
	code, body, err := a.do(ctx, http.MethodDelete, "/api/destinations/"+kind+"/"+url.PathEscape(d.Name))
	if err != nil {
		return err
	}
	if code != http.StatusOK && code != http.StatusNoContent {
		return &RefusedError{Op: "DELETE " + kind + " " + d.Name, Reason: fmt.Sprintf("%d %s", code, oneLine(body, 200))}
	}
	return nil
}
