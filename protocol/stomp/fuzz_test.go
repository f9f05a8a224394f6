package stomp_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/stomp"
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
