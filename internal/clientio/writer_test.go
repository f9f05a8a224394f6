package clientio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func appendString(s string) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) { return append(b, s...), nil }
}

// Queued frames reach the socket in order; a frame whose encoding fails is
// not sent; after Fail nothing more is queued.
func TestWriterOrderAndFailure(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	w := New(client, 0, nil, 0)
	go w.Run()
	defer w.Stop()
	got := make(chan []byte, 1)
	go func() {
		var all []byte
		buf := make([]byte, 64)
		_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
		for len(all) < len("one;three;") {
			n, err := server.Read(buf)
			if err != nil {
				break
			}
			all = append(all, buf[:n]...)
		}
		got <- all
	}()
	if err := w.Queue(appendString("one;")); err != nil {
		t.Fatal(err)
	}
	bad := errors.New("too large")
	if err := w.Queue(func(b []byte) ([]byte, error) { return append(b, "two;"...), bad }); !errors.Is(err, bad) {
		t.Fatalf("a failing encoding returned %v", err)
	}
	if err := w.Queue(appendString("three;")); err != nil {
		t.Fatal(err)
	}
	if all := <-got; string(all) != "one;three;" {
		t.Fatalf("the socket got %q, want %q", all, "one;three;")
	}
	w.Fail(io.ErrClosedPipe)
	if err := w.Queue(appendString("four;")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Queue after Fail: %v", err)
	}
}

// QueueBounded waits while the limit is queued and goes on once the
// flusher took the bytes; a quiet connection gets idle frames.
func TestWriterBoundAndIdle(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	w := New(client, 100*time.Millisecond, func(b []byte) []byte { return append(b, '.') }, 8)
	// Not running yet: the first frame fills the limit, the second waits.
	if err := w.QueueBounded(appendString("12345678")); err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() { queued <- w.QueueBounded(appendString("9")) }()
	select {
	case err := <-queued:
		t.Fatalf("queued past the limit before the flusher ran: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	go w.Run()
	defer w.Stop()
	var all []byte
	buf := make([]byte, 64)
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	for !bytes.Contains(all, []byte("9")) || !bytes.Contains(all, []byte(".")) {
		n, err := server.Read(buf)
		if err != nil {
			t.Fatalf("read: %v (got %q)", err, all)
		}
		all = append(all, buf[:n]...)
	}
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(all, []byte("123456789")) {
		t.Fatalf("the socket got %q, want the frames in order, then idle frames", all)
	}
}
