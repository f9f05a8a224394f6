package main

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/config"
	"github.com/sluicemq/sluice/internal/sdnotify"
)

// Under systemd (Type=notify), serve says READY=1 once every listener is
// bound, so the admin listener answers at once, and STOPPING=1 when it
// begins to shut down.
func TestServeNotifiesSystemd(t *testing.T) {
	clearEnv(t)
	socket := filepath.Join(t.TempDir(), "notify")
	systemd, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer systemd.Close()
	t.Setenv("NOTIFY_SOCKET", socket)

	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.LogLevel = "error"
	cfg.Listeners = config.Listeners{STOMP: "127.0.0.1:0", AMQP: "127.0.0.1:0", Admin: freeAddr(t)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg) }()

	read := func() string {
		t.Helper()
		buf := make([]byte, 4096)
		systemd.SetReadDeadline(time.Now().Add(15 * time.Second))
		n, err := systemd.Read(buf)
		if err != nil {
			select {
			case err := <-done:
				t.Fatalf("serve returned %v before notifying", err)
			default:
			}
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	if got := read(); got != sdnotify.Ready {
		t.Fatalf("first notification %q, want %q", got, sdnotify.Ready)
	}
	resp, err := http.Get("http://" + cfg.Listeners.Admin + "/readyz")
	if err != nil {
		t.Fatalf("admin listener after READY=1: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz after READY=1: %s", resp.Status)
	}

	cancel()
	if got := read(); got != sdnotify.Stopping {
		t.Errorf("notification at shutdown %q, want %q", got, sdnotify.Stopping)
	}
	if err := waitDone(t, done); err != nil {
		t.Errorf("serve after cancel = %v", err)
	}
}

// A $NOTIFY_SOCKET nobody listens on does not stop the broker.
func TestServeNotifySocketGone(t *testing.T) {
	clearEnv(t)
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "gone"))
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.LogLevel = "error"
	cfg.Listeners = config.Listeners{Admin: freeAddr(t)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg) }()
	waitReady(t, cfg.Listeners.Admin, done)
	cancel()
	if err := waitDone(t, done); err != nil {
		t.Errorf("serve after cancel = %v", err)
	}
}
