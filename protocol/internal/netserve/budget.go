package netserve

import "sync"

// DefaultOutputBuffer is the default byte cap of a connection's output
// buffer (Budget): what deliveries queued for the writer and not yet
// flushed to the socket may hold together.
const DefaultOutputBuffer = 4 << 20

// Budget bounds the bytes of the deliveries a connection has queued for
// its writer and not yet flushed. A delivery takes its size before it is
// queued and the writer gives it back once the batch holding it reached
// the socket: a peer that does not read fills the budget, the delivery
// goroutines wait, and the engine stops dispatching to the connection's
// consumers once their prefetch windows are full, so the messages wait in
// their queues, not in the connection. One delivery larger than the whole
// budget is let through when nothing else is queued, so that no message
// is too large to be delivered.
type Budget struct {
	limit int64

	mu   sync.Mutex
	used int64
	room chan struct{} // closed when bytes come back; nil until a taker waits
}

// NewBudget returns a budget of limit bytes; limit <= 0 means
// DefaultOutputBuffer.
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		limit = DefaultOutputBuffer
	}
	return &Budget{limit: limit}
}

// Take waits until n bytes fit (or nothing is queued) and takes them. It
// reports false, having taken nothing, when done closes first.
func (b *Budget) Take(n int64, done <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return true
		}
		if b.room == nil {
			b.room = make(chan struct{})
		}
		room := b.room
		b.mu.Unlock()
		select {
		case <-room:
		case <-done:
			return false
		}
	}
}

// Give returns n bytes that Take took.
func (b *Budget) Give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.room != nil {
		close(b.room)
		b.room = nil
	}
	b.mu.Unlock()
}

// Used returns the bytes taken and not yet given back.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Limit returns the budget's cap in bytes.
func (b *Budget) Limit() int64 { return b.limit }
