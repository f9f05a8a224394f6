package netserve

import (
	"context"
	"net"
	"testing"
	"time"
)

type echoConn struct {
	nc   net.Conn
	done chan struct{}
}

func (c *echoConn) Run() {
	buf := make([]byte, 64)
	for {
		n, err := c.nc.Read(buf)
		if err != nil {
			close(c.done)
			return
		}
		_, _ = c.nc.Write(buf[:n])
	}
}

func (c *echoConn) Abort() { _ = c.nc.Close() }

func TestServeAndShutdown(t *testing.T) {
	var g Group[*echoConn]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- g.Serve(ln, func(nc net.Conn) *echoConn { return &echoConn{nc: nc, done: make(chan struct{})} })
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_, _ = nc.Write([]byte("ping"))
	buf := make([]byte, 4)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Read(buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q %v", buf, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if err == nil {
			t.Fatal("Serve returned nil after Shutdown")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Shutdown")
	}
	if _, err := nc.Read(buf); err == nil {
		t.Fatal("connection still open after Shutdown")
	}
	// After Shutdown, new connections are closed at once.
	a, b := net.Pipe()
	g.ServeConn(a, func(nc net.Conn) *echoConn { t.Fatal("served after Shutdown"); return nil })
	_ = b.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := b.Read(buf); err == nil {
		t.Fatal("pipe still open")
	}
}
