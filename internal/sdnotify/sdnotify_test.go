package sdnotify

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listen opens a unixgram socket at name, as systemd does for a service.
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// read returns the next datagram on conn.
func read(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("reading the notification: %v", err)
	}
	return string(buf[:n])
}

func TestNotify(t *testing.T) {
	tests := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"file system socket", func(t *testing.T) string { return filepath.Join(t.TempDir(), "notify") }},
		{"abstract socket", func(t *testing.T) string {
			return fmt.Sprintf("@sluice-sdnotify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path(t)
			conn := listen(t, path)
			for _, state := range []string{Ready, Stopping} {
				sent, err := Notify(path, state)
				if err != nil || !sent {
					t.Fatalf("Notify(%q, %q) = %v, %v; want true, nil", path, state, sent, err)
				}
				if got := read(t, conn); got != state {
					t.Errorf("systemd read %q, want %q", got, state)
				}
			}
		})
	}
}

func TestNotifyWithoutSystemd(t *testing.T) {
	if sent, err := Notify("", Ready); sent || err != nil {
		t.Errorf(`Notify("", Ready) = %v, %v; want false, nil`, sent, err)
	}
}

func TestNotifyNoListener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone")
	sent, err := Notify(path, Ready)
	if sent || err == nil || !strings.Contains(err.Error(), "READY=1") {
		t.Errorf("Notify to a socket nobody listens on = %v, %v; want false and an error naming the state", sent, err)
	}
}
