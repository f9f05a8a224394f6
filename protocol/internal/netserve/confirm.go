package netserve

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Waiter is what a Confirmer waits for: *engine.Confirmation is one (a
// nil *engine.Confirmation is ready and waits for nothing).
type Waiter interface {
	// Ready reports whether Wait would return at once.
	Ready() bool
	// Wait waits for the outcome; with ctx done it returns ctx's error
	// and follows the outcome to its end in the background.
	Wait(ctx context.Context) error
}

// ConfirmHandler is a protocol's side of a Confirmer. Its methods run on
// the confirmer goroutine only, one at a time.
type ConfirmHandler[T any] interface {
	// Confirmed answers item, whose Waiter's Wait returned err (nil: the
	// engine vouches for it). It may hold the answer back to coalesce it
	// with the next ones, until Flush.
	Confirmed(item T, err error)
	// Flush sends what Confirmed held back. The confirmer calls it before
	// it blocks: when its queue is empty, and before it waits for a
	// Waiter that is not ready yet.
	Flush()
}

// Confirmer answers a connection's pipelined requests in their order once
// the engine vouches for each: the reader queues each request with its
// Waiter (Later) and goes on reading; the confirmer goroutine waits for
// each Waiter in turn and hands the item, with the outcome, to the
// protocol's ConfirmHandler. Items without anything to wait for (a nil
// *engine.Confirmation) may be queued too, so that answers keep the order
// of their requests while earlier ones are pending.
//
// The queue is bounded: Later blocks while it is full, which holds up the
// reader and so the client. The goroutine starts with the first Later and
// ends with the connection (done); what is still queued then is not
// answered, and its Waiters are followed to their end in the background
// (a message whose write fails is still taken off its queue).
//
// The handler coalesces answers: it may keep a run of consecutive
// successes and send one answer for all of them on Flush. STOMP answers
// each item at once (a RECEIPT, or an ERROR); AMQP 1.0 settles a run of
// one link's consecutive delivery ids with one disposition; AMQP 0-9-1
// publisher confirms fit the same way: the item is the channel and
// delivery tag, Confirmed extends the channel's run of acked tags (a
// failure flushes the run, then answers basic.nack for its tag), and
// Flush sends one basic.ack with multiple set for the run's last tag.
//
// WaitQueued waits for everything queued so far (a DISCONNECT's receipt,
// a close). Items and Waiters pass through the queue by value: queueing
// and answering allocate nothing per item.
//
// Later, Start and WaitQueued are for the connection's reader; Pending may
// be called from any goroutine.
type Confirmer[T any] struct {
	started atomic.Bool
	mu      sync.Mutex // guards the start only
	queue   chan confirmEntry[T]
	done    <-chan struct{}
	h       ConfirmHandler[T]
	pending atomic.Int64 // queued and not yet handled
}

// confirmEntry is a queued item; marker, when not nil, is a WaitQueued
// call's channel, closed once the entries before it are handled.
type confirmEntry[T any] struct {
	w      Waiter
	item   T
	marker chan struct{}
}

// Start sets the confirmer up for a connection that ends when done closes:
// up to size items queue, and h answers them. Only the first call counts;
// later ones return at once. The goroutine starts with the first Later.
func (q *Confirmer[T]) Start(done <-chan struct{}, size int, h ConfirmHandler[T]) {
	if q.started.Load() {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started.Load() {
		return
	}
	q.queue = make(chan confirmEntry[T], size)
	q.done, q.h = done, h
	q.started.Store(true)
	go q.loop()
}

// Later queues item, to be answered once w's Wait returns, after the
// items queued before it. It blocks while the queue is full, and reports
// false (item not queued) when the connection ends first. Start must have
// been called.
func (q *Confirmer[T]) Later(w Waiter, item T) bool {
	return q.enqueue(confirmEntry[T]{w: w, item: item})
}

func (q *Confirmer[T]) enqueue(e confirmEntry[T]) bool {
	select {
	case <-q.done:
		return false // ended: the select below might still find room
	default:
	}
	q.pending.Add(1)
	select {
	case q.queue <- e:
		return true
	case <-q.done:
		q.pending.Add(-1)
		return false
	}
}

// Pending is the number of items queued and not yet answered. While it is
// above zero, a protocol that answers a request at once would overtake
// the answers of earlier requests: it queues the request instead.
func (q *Confirmer[T]) Pending() int64 {
	return q.pending.Load()
}

// WaitQueued waits until every item queued so far has been answered, and
// reports whether that happened; it gives up when the connection ends or
// after d.
func (q *Confirmer[T]) WaitQueued(d time.Duration) bool {
	if q.pending.Load() == 0 {
		return true
	}
	marker := make(chan struct{})
	if !q.enqueue(confirmEntry[T]{marker: marker}) {
		return false
	}
	return WaitBounded(marker, q.done, d)
}

// loop answers the queued items in order until the connection ends.
func (q *Confirmer[T]) loop() {
	ctx, cancel := UntilClosed(q.done)
	defer cancel()
	held := false // Confirmed was called since the last Flush
	flush := func() {
		if held {
			q.h.Flush()
			held = false
		}
	}
	for {
		var e confirmEntry[T]
		select {
		case e = <-q.queue:
		default:
			flush()
			select {
			case e = <-q.queue:
			case <-q.done:
				q.abandon(ctx)
				return
			}
		}
		if e.marker != nil {
			flush()
			close(e.marker)
			q.pending.Add(-1)
			continue
		}
		var err error
		if e.w != nil {
			if !e.w.Ready() {
				flush()
			}
			err = e.w.Wait(ctx)
		}
		if ctx.Err() != nil {
			// The connection ended meanwhile: nothing more is answered.
			q.abandon(ctx)
			return
		}
		q.h.Confirmed(e.item, err)
		held = true
		q.pending.Add(-1)
	}
}

// abandon follows what is still queued to its end in the background once
// the connection has ended (ctx is done).
func (q *Confirmer[T]) abandon(ctx context.Context) {
	for {
		select {
		case e := <-q.queue:
			if e.w != nil {
				_ = e.w.Wait(ctx)
			}
		default:
			return
		}
	}
}
