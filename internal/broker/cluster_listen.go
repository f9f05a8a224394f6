package broker

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
)

// clientListeners are a cluster node's messaging listeners: stomp,
// stomps, amqp, amqps, amqp091 and websocket. With follower_clients =
// "redirect" they are bound for the node's life and a node that serves no
// clients answers theirs with a redirect (route); with "refuse" they are
// bound only while a term serves (openTerm, closeTerm), so that a client's
// connection is refused and a client with a list of addresses tries the
// next at once. Its lock is taken only by its methods; it is taken before
// Broker.mu (bind records the addresses).
type clientListeners struct {
	b *Broker
	c *clusterNode

	mu    sync.Mutex
	bound []io.Closer // the listeners and the websocket server, while bound
}

// start binds the listeners for the node's life, unless they follow the
// terms (follower_clients = "refuse").
func (cl *clientListeners) start() error {
	if cl.c.cfg.Refuses() {
		return nil
	}
	return cl.bind()
}

// termOpened binds the listeners when they follow the terms.
func (cl *clientListeners) termOpened() error {
	if !cl.c.cfg.Refuses() {
		return nil
	}
	return cl.bind()
}

// termClosed closes the listeners when they follow the terms: new clients
// are refused, and try the next node.
func (cl *clientListeners) termClosed() {
	if cl.c.cfg.Refuses() {
		cl.unbind()
	}
}

// bind binds every configured messaging listener and starts accepting, if
// they are not bound already. On an error none stays bound.
func (cl *clientListeners) bind() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.bound != nil {
		return nil
	}
	b, c, l := cl.b, cl.c, cl.b.cfg.Listeners
	var bound []io.Closer
	fail := func(err error) error {
		for _, x := range bound {
			_ = x.Close()
		}
		return err
	}
	for _, x := range []struct {
		name, addr string
		tlsName    string
		kind       protoKind
	}{
		{"stomp", l.STOMP, "", kindSTOMP}, {"stomps", l.STOMPS, "stomps", kindSTOMP},
		{"amqp", l.AMQP, "", kindAMQP}, {"amqps", l.AMQPS, "amqps", kindAMQP},
		{"amqp091", l.AMQP091, "", kindAMQP091},
	} {
		if x.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", x.addr)
		if err != nil {
			return fail(fmt.Errorf("%s listener %s: %w", x.name, x.addr, err))
		}
		bound = append(bound, ln)
		served := ln
		if x.tlsName != "" {
			served = tls.NewListener(ln, b.tls[x.tlsName].TLSConfig())
		}
		b.mu.Lock()
		b.addrs[x.name] = ln.Addr()
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			c.accept(served, x.kind, x.name)
		}()
		b.log.Info("listening", slog.String("protocol", x.name), slog.String("addr", ln.Addr().String()), slog.Bool("tls", x.tlsName != ""))
	}
	// STOMP over WebSocket: each upgraded connection is routed as a STOMP
	// one is, redirects naming the leader's WebSocket URL.
	if l.WebSocket != "" {
		srv, err := b.serveWebSocket(clusterConns{c: c, listener: "websocket"}, l.WebSocket)
		if err != nil {
			return fail(err)
		}
		bound = append(bound, srv)
	}
	cl.bound = bound
	return nil
}

// unbind closes the messaging listeners, if bound: their accept loops end,
// the connections they gave keep going (a term's clients end with it).
func (cl *clientListeners) unbind() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for _, x := range cl.bound {
		_ = x.Close()
	}
	if cl.bound != nil {
		cl.b.log.Info("client listeners closed")
	}
	cl.bound = nil
}
