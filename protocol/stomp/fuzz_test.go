package stomp_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/stomp"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// FuzzServerConn feeds arbitrary bytes, after a valid CONNECT, through a
// server connection into the engine: whatever arrives, the server must not
// panic, must end the connection or keep serving, and must still serve a
// well-behaved client afterwards.
func FuzzServerConn(f *testing.F) {
	seeds := []string{
		"SEND\ndestination:/queue/a\n\nhello\x00",
		"SEND\ndestination:/queue/a\npersistent:true\npriority:9\nreceipt:1\n\nx\x00",
		"SUBSCRIBE\nid:1\ndestination:/queue/a\nack:client\nselector:a > 1\n\n\x00SEND\ndestination:/queue/a\na:2\n\n\x00",
		"BEGIN\ntransaction:t\n\n\x00SEND\ndestination:/topic/t\ntransaction:t\n\n\x00COMMIT\ntransaction:t\n\n\x00",
		"SUBSCRIBE\nid:1\ndestination:/queue/b\nbrowser:true\n\n\x00",
		"ACK\nid:1.1\n\n\x00",
		"NACK\nid:x\n\n\x00",
		"SUBSCRIBE\nid:1\ndestination:/temp-queue/r\n\n\x00SEND\ndestination:/queue/a\nreply-to:/temp-queue/r\n\n\x00",
		"UNSUBSCRIBE\nid:9\n\n\x00",
		"SEND\ndestination:/queue/a\ncontent-length:5\n\nab\x00cd\x00",
		"\n\n\r\n",
		"DISCONNECT\nreceipt:9\n\n\x00",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		f.Fatal(err)
	}
	defer eng.Close()
	srv := stomp.NewServer(eng, stomp.Options{ConnectTimeout: time.Second})
	defer srv.Shutdown(context.Background())
	f.Fuzz(func(t *testing.T, input []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() { srv.ServeConn(server); close(done) }()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_ = client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, _ = client.Write([]byte("CONNECT\naccept-version:1.0,1.1,1.2\nheart-beat:0,0\n\n\x00"))
		_, _ = client.Write(input)
		_ = client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("server connection did not end after the client closed")
		}
	})
}

// FuzzConnectCredentials sends a CONNECT with arbitrary login, passcode
// and further header bytes to a server with security on (no anonymous
// role). Whatever arrives, the server answers CONNECTED or ERROR within a
// bound, never panics, ends the connection once the client has gone, and
// lets a client in only with a user's right password.
func FuzzConnectCredentials(f *testing.F) {
	seeds := []struct{ login, passcode, extra string }{
		{"alice", alicePW, ""},
		{"alice", "wrong", ""},
		{"mallory", alicePW, ""},
		{"", "", ""},
		{"", alicePW, "login:alice"},
		{"alice", alicePW, "login:bob\npasscode:" + bobPW},
		{"bob", bobPW + "\r", ""},
		{"al\\cice", alicePW, ""},
		{"alice\npasscode:" + alicePW, "x", ""},
		{"alice", alicePW + "\x00SEND\ndestination:/queue/orders.a\n\n", ""},
		{"alice", strings.Repeat("p", 100), ""},
		{"bob", bobPW, "content-length:3"},
		{"bob", bobPW, "heart-beat:x"},
		{"bob", bobPW, "accept-version:9.9"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.login), []byte(s.passcode), []byte(s.extra))
	}
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		f.Fatal(err)
	}
	defer eng.Close()
	srv := stomp.NewServer(eng, stomp.Options{ConnectTimeout: time.Second, Realm: newRealm(f, realmOptions(f))})
	defer srv.Shutdown(context.Background())
	f.Fuzz(func(t *testing.T, login, passcode, extra []byte) {
		client, server := net.Pipe()
		defer client.Close()
		done := make(chan struct{})
		go func() { srv.ServeConn(server); close(done) }()
		connect := "CONNECT\naccept-version:1.0,1.1,1.2\nheart-beat:0,0\nlogin:" + string(login) +
			"\npasscode:" + string(passcode) + "\n" + string(extra) + "\n\n\x00"
		go func() {
			_ = client.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.WriteString(client, connect)
		}()
		_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
		f, err := frame.NewReader(client, frame.Limits{}).ReadFrame()
		if err != nil {
			t.Fatalf("no CONNECTED or ERROR: %v", err)
		}
		switch f.Command {
		case frame.CmdConnected:
			conns := eng.Connections()
			if len(conns) != 1 {
				t.Fatalf("CONNECTED with %d engine connections", len(conns))
			}
			pw := map[string]string{"alice": alicePW, "bob": bobPW}[conns[0].User]
			if pw == "" || !strings.Contains(connect, ":"+pw) {
				t.Fatalf("CONNECTED as %q without the user's password", conns[0].User)
			}
		case frame.CmdError:
		default:
			t.Fatalf("got %s, want CONNECTED or ERROR", f.Command)
		}
		_ = client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("server connection did not end after the client closed")
		}
	})
}
