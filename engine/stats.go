package engine

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Broker-wide counters. A destination's own counters (DestinationInfo) go
// with it when it is deleted, and a topic's are the sums over the
// subscriptions it has now; these never go back, whatever is deleted, so
// that a rate computed from two readings is the broker's traffic. They
// are atomics bumped where the per-queue counters are, or once per batch.

// CloseReason says why a connection ended: the "connection closed" log
// line carries it as reason, and Totals counts closed connections by it.
type CloseReason uint8

// Close reasons. Connection.Close is ClosedByClient; the protocol
// front-ends pass the others to CloseWithReason.
const (
	// ClosedByClient: the client closed it (STOMP DISCONNECT, AMQP close,
	// an in-process client's Close).
	ClosedByClient CloseReason = iota
	// ClosedNetworkError: the network connection failed or the client
	// dropped it without closing first.
	ClosedNetworkError
	// ClosedHeartbeatTimeout: nothing came from the client within its
	// heart-beat (STOMP) or idle time-out (AMQP).
	ClosedHeartbeatTimeout
	// ClosedByAdministrator: Broker.CloseConnection (the admin API).
	ClosedByAdministrator
	// ClosedShutdown: the broker is shutting down.
	ClosedShutdown
	// ClosedError: the broker ended the connection with an error (a STOMP
	// ERROR frame, an AMQP close carrying an error): a malformed frame, a
	// refused operation the protocol answers by closing.
	ClosedError
	numCloseReasons
)

// String is the reason as the log line says it.
func (r CloseReason) String() string {
	switch r {
	case ClosedNetworkError:
		return "network error"
	case ClosedHeartbeatTimeout:
		return "heartbeat timeout"
	case ClosedByAdministrator:
		return "closed by administrator"
	case ClosedShutdown:
		return "broker shutdown"
	case ClosedError:
		return "error"
	}
	return "client disconnect"
}

// Label is the reason as a metric label: client, network_error,
// heartbeat_timeout, administrator, shutdown, error.
func (r CloseReason) Label() string {
	switch r {
	case ClosedNetworkError:
		return "network_error"
	case ClosedHeartbeatTimeout:
		return "heartbeat_timeout"
	case ClosedByAdministrator:
		return "administrator"
	case ClosedShutdown:
		return "shutdown"
	case ClosedError:
		return "error"
	}
	return "client"
}

// CloseReasons lists every reason, for metrics that show each at zero.
func CloseReasons() []CloseReason {
	out := make([]CloseReason, numCloseReasons)
	for i := range out {
		out[i] = CloseReason(i)
	}
	return out
}

// Totals are the broker-wide counters since the broker started.
type Totals struct {
	// Enqueued counts messages added to queues and subscriptions (a topic
	// message counts once per subscription that takes it), Delivered the
	// deliveries to consumers (redeliveries included), Acknowledged the
	// messages consumers acknowledged, Redelivered those that came back
	// for another delivery.
	Enqueued, Delivered, Acknowledged, Redelivered uint64
	// Confirmed counts sends confirmed to their producer (SendToAsync, the
	// protocols' pipelined sends: durable or consumed, or at once when
	// there is nothing to wait for); ConfirmFailed those whose write
	// failed. Transacted sends are confirmed by their commit and not
	// counted here.
	Confirmed, ConfirmFailed uint64
	// Connections counts connections by protocol: "stomp", "amqp", "admin"
	// (the admin API's test messages), "" for in-process clients.
	Connections map[string]ConnectionTotals
}

// ConnectionTotals count one protocol's connections.
type ConnectionTotals struct {
	Opened uint64
	// Closed counts closed connections by CloseReason.
	Closed [numCloseReasons]uint64
}

// totals is the Broker's counters.
type totals struct {
	enqueued, delivered, acked, redelivered atomic.Uint64
	confirmed, confirmFailed                atomic.Uint64

	mu    sync.Mutex
	conns map[string]*ConnectionTotals
}

// protocolFamily is a connection's protocol without its version:
// "stomp/1.2" is "stomp".
func protocolFamily(p string) string {
	p, _, _ = strings.Cut(p, "/")
	return p
}

func (t *totals) opened(protocol string) {
	t.mu.Lock()
	t.conn(protocol).Opened++
	t.mu.Unlock()
}

func (t *totals) closed(protocol string, r CloseReason) {
	if r >= numCloseReasons {
		r = ClosedByClient
	}
	t.mu.Lock()
	t.conn(protocol).Closed[r]++
	t.mu.Unlock()
}

// conn returns protocol's counters; call with t.mu.
func (t *totals) conn(protocol string) *ConnectionTotals {
	p := protocolFamily(protocol)
	if t.conns == nil {
		t.conns = map[string]*ConnectionTotals{}
	}
	c := t.conns[p]
	if c == nil {
		c = &ConnectionTotals{}
		t.conns[p] = c
	}
	return c
}

// uncountEnqueued takes back n enqueues counted by a queue.add that only
// put messages back (a failed administrator's move, recovery).
func (t *totals) uncountEnqueued(n int) {
	t.enqueued.Add(^uint64(n - 1))
}

// Totals returns the broker-wide counters.
func (b *Broker) Totals() Totals {
	t := &b.totals
	out := Totals{
		Enqueued: t.enqueued.Load(), Delivered: t.delivered.Load(), Acknowledged: t.acked.Load(),
		Redelivered: t.redelivered.Load(), Confirmed: t.confirmed.Load(), ConfirmFailed: t.confirmFailed.Load(),
		Connections: map[string]ConnectionTotals{},
	}
	t.mu.Lock()
	for p, c := range t.conns {
		out.Connections[p] = *c
	}
	t.mu.Unlock()
	return out
}
