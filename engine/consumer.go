package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/grammar/selector"
)

// CreditMode says when a consumer's prefetch window opens again.
type CreditMode uint8

// Credit modes.
const (
	// CreditOnConsume (the JMS default) counts messages dispatched but not yet
	// taken by Receive or the listener: the "messages maximum" pipeline.
	CreditOnConsume CreditMode = iota
	// CreditOnAck counts messages dispatched and not yet settled, as STOMP's
	// client acknowledgement modes need (the unacknowledged window).
	CreditOnAck
	// CreditManual gives credit only through Consumer.Flow, as AMQP link
	// credit does.
	CreditManual
)

// DefaultPrefetch is the prefetch window when ConsumerOptions leaves it 0.
const DefaultPrefetch = 1000

// ConsumerOptions configure a consumer.
type ConsumerOptions struct {
	// Selector is a JMS message selector; empty selects every message.
	Selector string
	// NoLocal drops topic messages published by this consumer's own
	// connection.
	NoLocal bool
	// Prefetch is the pipeline size ("messages maximum"); 0 means
	// DefaultPrefetch. Ignored with CreditManual.
	Prefetch int
	// CreditMode says when the window reopens.
	CreditMode CreditMode
	// SubscriptionName names a durable or shared topic subscription.
	SubscriptionName string
	// Durable makes the topic subscription durable (SubscriptionName required).
	Durable bool
	// Shared makes the topic subscription shared between consumers (JMS 2.0).
	Shared bool
}

// Consumer receives messages from a queue or a topic subscription.
type Consumer struct {
	sess   *Session
	q      *queue
	dest   message.Destination
	sel    *selector.Selector
	mode   CreditMode
	window int
	sub    *subscription

	credit  int              // guarded by q.mu
	scratch message.Delivery // selector input, guarded by q.mu
	// pageSeen is, per priority, the sequence number up to which the
	// queue's paged records were searched for this consumer's selector
	// (see page.go); guarded by q.mu.
	pageSeen [10]uint64

	bufMu  sync.Mutex
	buf    []*ref
	signal chan struct{}

	local []*ref // taken from buf; owned by the receiving goroutine
	owed  int    // credit to give back (CreditOnConsume), receiving goroutine
	// unmarked: local's delivery attempts are not all recorded yet
	// (receiving goroutine); markFailing: the last try to record them
	// failed.
	unmarked, markFailing bool

	recvMu   sync.Mutex // held by Receive while it owns local
	closed   atomic.Bool
	done     chan struct{}
	listener atomic.Bool
	lwg      sync.WaitGroup
	// lmu orders a listener's start (lwg.Add) before close's lwg.Wait:
	// SetListener checks closed and adds under it, close passes through it
	// after setting closed. Taken alone.
	lmu sync.Mutex
}

// Destination returns the destination the consumer was created on.
func (c *Consumer) Destination() message.Destination { return c.dest }

// Selector returns the consumer's selector, or "" when it has none.
func (c *Consumer) Selector() string {
	if c.sel == nil {
		return ""
	}
	return c.sel.String()
}

// eligible reports whether c can take another ref now; called under q.mu.
func (c *Consumer) eligible() bool {
	return c.credit > 0 && !c.closed.Load() && c.sess.conn.started.Load()
}

// accepts reports whether c's selector matches r; called under q.mu.
func (c *Consumer) accepts(r *ref) bool {
	if c.sel == nil {
		return true
	}
	c.scratch = message.Delivery{Msg: r.msg, DeliveryCount: r.count + 1, Redelivered: r.count > 0}
	return c.sel.Matches(message.SelectorView{D: &c.scratch})
}

// push hands r to c; called under q.mu.
func (c *Consumer) push(r *ref) {
	c.credit--
	c.bufMu.Lock()
	c.buf = append(c.buf, r)
	c.bufMu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// settled is told that one of c's refs was settled or requeued; under q.mu.
func (c *Consumer) settled(n int) {
	if c.mode == CreditOnAck {
		c.credit += n
	}
}

// Flow adds n to the consumer's credit (CreditManual) and dispatches.
func (c *Consumer) Flow(n int) {
	c.q.addCredit(c, n, true)
}

// Drain dispatches what is available within the current credit, then takes
// the remaining credit back and returns how much that was (AMQP drain).
func (c *Consumer) Drain() int {
	c.q.kick()
	return c.q.takeCredit(c)
}

// Credit returns the consumer's current credit.
func (c *Consumer) Credit() int {
	return c.q.creditOf(c)
}

// next returns the next ref for delivery, waiting until one arrives, ctx
// ends, the consumer closes, or stopping closes (errStopped). It records the
// delivery attempt in the store first for persistent refs, batching every
// ref already buffered.
func (c *Consumer) next(ctx context.Context, stopping <-chan struct{}) (*ref, error) {
	for {
		if len(c.local) == 0 {
			c.bufMu.Lock()
			c.local, c.buf = c.buf, c.local[:0]
			c.bufMu.Unlock()
			c.unmarked = len(c.local) > 0
		}
		if c.unmarked && len(c.local) > 0 {
			// A message is not delivered before its delivery attempt is
			// in the store: delivered unrecorded, it would come back
			// after a restart (or from a cluster's next leader) as a
			// first delivery, not flagged redelivered. A write that
			// fails is tried again until it succeeds or the consumer
			// closes (which returns the messages to the queue).
			if err := c.markAttempts(ctx); err != nil {
				if !c.markFailing {
					c.q.b.log.Error("record delivery attempts: delivery waits until they are recorded",
						slog.String("destination", c.q.dest.String()), slog.Any("err", err))
				}
				c.markFailing = true
				select {
				case <-time.After(markRetry):
				case <-c.done:
					return nil, errorf(CodeConsumerClosed, "consumer closed")
				case <-stopping:
					return nil, errStopped
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				continue
			}
			c.unmarked, c.markFailing = false, false
		}
		if len(c.local) > 0 {
			r := c.local[0]
			c.local[0] = nil
			c.local = c.local[1:]
			if c.mode == CreditOnConsume {
				c.owed++
				if c.owed >= c.window/4+1 || len(c.local) == 0 {
					c.giveBack()
				}
			}
			return r, nil
		}
		if c.closed.Load() {
			return nil, errorf(CodeConsumerClosed, "consumer closed")
		}
		select {
		case <-c.signal:
		case <-c.done:
		case <-stopping:
			return nil, errStopped
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *Consumer) giveBack() {
	n := c.owed
	c.owed = 0
	c.q.addCredit(c, n, true)
}

// markRetry is how long a consumer whose delivery attempts could not be
// recorded waits before trying again.
const markRetry = 100 * time.Millisecond

// markAttempts writes the coming delivery attempt of each persistent ref in
// c.local to the store in one update, so that a crash after delivery
// neither loses the count nor hides that the message was delivered.
func (c *Consumer) markAttempts(ctx context.Context) error {
	b := c.q.b
	if b.store == nil {
		return nil
	}
	var ops []opBuf
	for _, r := range c.local {
		if r.rec != nil && !r.rec.transient && r.marked < r.count+1 {
			if b.markEarly(r, r.count+1) {
				r.marked = r.count + 1
				continue
			}
			ops = append(ops, opBuf{r: r, n: r.count + 1})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if err := b.writeMarks(ctx, c.q.bucket, ops); err != nil {
		return err
	}
	for _, o := range ops {
		o.r.marked = o.n
	}
	return nil
}

// Receive waits for the next message, until ctx ends. A stopped connection
// delivers nothing: Receive waits for Start. In AUTO_ACKNOWLEDGE and
// DUPS_OK_ACKNOWLEDGE sessions the message is acknowledged before Receive
// returns; otherwise the Delivery's Tag acknowledges it later.
func (c *Consumer) Receive(ctx context.Context) (message.Delivery, error) {
	if c.closed.Load() {
		// WebLogic JMS "Managing Your Applications", "What Happens when a
		// Destination is Deleted": "Attempts by an application to do anything
		// but close() a closed consumer will result in an
		// IllegalStateException." A Receive already waiting when the consumer
		// closes returns CodeConsumerClosed instead: JMS's null.
		return message.Delivery{}, errorf(CodeIllegalState, "consumer is closed")
	}
	if c.listener.Load() {
		return message.Delivery{}, errorf(CodeIllegalState, "consumer has a message listener")
	}
	r, err := c.await(ctx)
	if err != nil {
		if c.closed.Load() {
			return message.Delivery{}, errorf(CodeConsumerClosed, "consumer closed")
		}
		return message.Delivery{}, err
	}
	d := c.sess.delivered(c, r, true)
	c.sess.conn.endDelivery()
	return d, nil
}

// await waits for the connection to be started and the next ref, counted
// as a delivery in progress: the caller ends it with endDelivery. Stop
// does not wait for an await that has no message: it goes back to waiting
// for Start.
func (c *Consumer) await(ctx context.Context) (*ref, error) {
	conn := c.sess.conn
	for {
		stopping, err := conn.beginDelivery(ctx, c.done)
		if err != nil {
			return nil, err
		}
		c.recvMu.Lock()
		r, err := c.next(ctx, stopping)
		c.recvMu.Unlock()
		if err == nil {
			return r, nil
		}
		conn.endDelivery()
		if !errors.Is(err, errStopped) {
			return nil, err
		}
	}
}

// ReceiveTimeout is Receive with a timeout; it returns ok=false when no
// message came in time (JMS receive(timeout) returning null).
func (c *Consumer) ReceiveTimeout(timeout time.Duration) (message.Delivery, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d, err := c.Receive(ctx)
	if err == context.DeadlineExceeded {
		return d, false, nil
	}
	if err != nil {
		return d, false, err
	}
	return d, true, nil
}

// SetListener delivers every message to fn on a goroutine of the consumer,
// one at a time per session, while the connection is started. In AUTO and
// DUPS_OK sessions a message is acknowledged when fn returns.
func (c *Consumer) SetListener(fn func(message.Delivery)) error {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	if c.closed.Load() {
		return errorf(CodeIllegalState, "consumer is closed")
	}
	if !c.listener.CompareAndSwap(false, true) {
		return errorf(CodeIllegalState, "consumer already has a message listener")
	}
	c.lwg.Add(1)
	go c.listen(fn)
	return nil
}

func (c *Consumer) listen(fn func(message.Delivery)) {
	defer c.lwg.Done()
	conn := c.sess.conn
	for {
		r, err := c.await(conn.b.ctx)
		if err != nil {
			return
		}
		c.sess.listenMu.Lock()
		d := c.sess.delivered(c, r, false)
		fn(d)
		c.sess.afterListener(d)
		c.sess.listenMu.Unlock()
		conn.endDelivery()
	}
}

// reclaim takes back the refs dispatched to c that the application has not
// taken yet (its prefetch pipeline), restores their credit and returns them to
// the queue uncounted, so that after a recover or rollback the queue
// redelivers in the original order (WebLogic JMS "Managing Your Applications",
// "Ordered Redelivery of Messages"). Refs held by a Receive running on another
// goroutine stay.
func (c *Consumer) reclaim() {
	if c.closed.Load() {
		return
	}
	var back []*ref
	if c.recvMu.TryLock() {
		back = append(back, c.local...)
		clear(c.local)
		c.local = c.local[:0]
		c.bufMu.Lock()
		back = append(back, c.buf...)
		clear(c.buf)
		c.buf = c.buf[:0]
		c.bufMu.Unlock()
		c.recvMu.Unlock()
	} else {
		c.bufMu.Lock()
		back = append(back, c.buf...)
		clear(c.buf)
		c.buf = c.buf[:0]
		c.bufMu.Unlock()
	}
	if len(back) == 0 {
		return
	}
	if c.mode != CreditOnAck {
		// requeue gives credit back only for CreditOnAck (settled).
		c.q.addCredit(c, len(back), false)
	}
	c.q.b.requeue(context.Background(), back, false, 0)
}

// Close closes the consumer: messages dispatched to it but never taken go
// back to the queue at once and uncounted; messages delivered and not yet
// acknowledged stay with the session (acknowledged, recovered or rolled back
// later, or returned when the session closes).
func (c *Consumer) Close() error {
	return c.close(nil)
}

func (c *Consumer) close(reason error) error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(c.done)
	c.q.removeConsumer(c)
	// A SetListener that saw the consumer open has added to lwg once lmu
	// is free; later ones see it closed.
	c.lmu.Lock()
	listening := c.listener.Load()
	c.lmu.Unlock()
	if listening {
		c.lwg.Wait()
	}
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	c.bufMu.Lock()
	back := append(c.local, c.buf...)
	c.local, c.buf = nil, nil
	c.bufMu.Unlock()
	if len(back) > 0 {
		c.q.b.requeue(context.Background(), back, false, 0)
	}
	c.sess.removeConsumer(c)
	if c.sub != nil {
		c.q.b.detachSubscription(c.sub, c)
	}
	if reason != nil {
		c.sess.notify(reason)
	}
	return nil
}
