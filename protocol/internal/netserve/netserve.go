// Package netserve is the part of a protocol server that is not protocol:
// the accept loop, the set of open connections, an orderly shutdown, the
// reader and writer loops of a connection (RunLoops), its coalescing
// writer (Writer) and the confirmer that answers pipelined requests in
// order (Confirmer). protocol/stomp and protocol/amqp each embed one Group.
package netserve

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Conn is one served connection.
type Conn interface {
	comparable
	// Run serves the connection until it ends.
	Run()
	// Abort ends the connection from the server side (shutdown); Run then
	// returns.
	Abort()
}

// Group accepts connections and tracks those it serves. The zero value is
// ready to use.
type Group[C Conn] struct {
	mu     sync.Mutex
	lns    map[net.Listener]struct{}
	conns  map[C]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Serve accepts connections on ln, serving each with newConn(nc).Run on a
// goroutine of its own, until Shutdown; it returns net.ErrClosed then.
// Temporary accept errors back off up to a second.
func (g *Group[C]) Serve(ln net.Listener, newConn func(net.Conn) C) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		_ = ln.Close()
		return net.ErrClosed
	}
	if g.lns == nil {
		g.lns = map[net.Listener]struct{}{}
	}
	g.lns[ln] = struct{}{}
	g.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		go g.ServeConn(nc, newConn)
	}
}

// ServeConn serves one already-accepted connection until it ends; after
// Shutdown it closes nc instead.
func (g *Group[C]) ServeConn(nc net.Conn, newConn func(net.Conn) C) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		_ = nc.Close()
		return
	}
	c := newConn(nc)
	if g.conns == nil {
		g.conns = map[C]struct{}{}
	}
	g.conns[c] = struct{}{}
	g.wg.Add(1)
	g.mu.Unlock()
	defer g.wg.Done()
	c.Run()
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
}

// Shutdown closes the listeners, aborts every connection and waits until
// they have ended or ctx ends.
func (g *Group[C]) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	for ln := range g.lns {
		_ = ln.Close()
	}
	conns := make([]C, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		c.Abort()
	}
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
