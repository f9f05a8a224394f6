package stomp

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// ackMode is a subscription's STOMP ack header.
type ackMode uint8

const (
	ackAuto ackMode = iota
	ackClient
	ackClientIndividual
)

// subscription is one SUBSCRIBE: an engine session with one consumer.
type subscription struct {
	c           *conn
	id          string
	num         uint64
	ackMode     ackMode
	sess        *engine.Session
	cons        *engine.Consumer
	durableName string

	mu     sync.Mutex
	byMsg  map[string]uint64 // message-id → delivery tag, for 1.0/1.1 acks
	closed bool
}

// ackID is the value of the MESSAGE ack header (STOMP 1.2): the
// subscription's number and the delivery tag.
func (s *subscription) ackID(tag uint64) string {
	return strconv.FormatUint(s.num, 10) + "." + strconv.FormatUint(tag, 10)
}

// temporary maps a client's /temp-queue/NAME to the engine temporary
// destination this connection made for it, creating it on first use. A name
// that is already an engine temporary destination (a reply-to another
// client received) is used as it is.
func (c *conn) temporary(d message.Destination) (message.Destination, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if real, ok := c.temps[d]; ok {
		return real, nil
	}
	if strings.Contains(d.Name, ".") && isEngineTempName(d.Name) {
		return d, nil
	}
	var real message.Destination
	var err error
	if d.Kind == message.TempQueue {
		real, err = c.prodSess.CreateTemporaryQueue()
	} else {
		real, err = c.prodSess.CreateTemporaryTopic()
	}
	if err != nil {
		return message.Destination{}, err
	}
	c.temps[d] = real
	c.tempsRev[real] = d.Name
	return real, nil
}

// isEngineTempName reports whether name has the engine's temporary naming
// ("<connection>.<sequence>").
func isEngineTempName(name string) bool {
	a, b, ok := strings.Cut(name, ".")
	if !ok {
		return false
	}
	_, err1 := strconv.ParseUint(a, 10, 64)
	_, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil
}

// tempAlias returns the client's own name for one of its temporary
// destinations. Other connections see the engine name, which routes back.
func (c *conn) tempAlias(d message.Destination) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name, ok := c.tempsRev[d]
	return name, ok
}

func (c *conn) handleSubscribe(f *frame.Frame) error {
	ds, ok := f.Get(hDestination)
	if !ok {
		return refuse("SUBSCRIBE without a destination header")
	}
	id, ok := f.Get(hID)
	if !ok || id == "" {
		if c.version >= frame.V11 {
			return refuse("SUBSCRIBE without an id header (required since STOMP 1.1)")
		}
		id = ds
	}
	dest, err := c.parseDestination(ds)
	if err != nil {
		return refuse("%v", err)
	}
	c.mu.Lock()
	_, dup := c.subs[id]
	n := len(c.subs)
	c.mu.Unlock()
	if dup {
		return refuse("subscription id %q is already in use on this connection", id)
	}
	if n >= c.srv.opts.MaxSubscriptions {
		return refuse("too many subscriptions on this connection (limit %d)", c.srv.opts.MaxSubscriptions)
	}
	mode := ackAuto
	switch v, _ := f.Get(hAck); v {
	case "", "auto":
	case "client":
		mode = ackClient
	case "client-individual":
		mode = ackClientIndividual
	default:
		return refuse("ack mode %q: want auto, client or client-individual", v)
	}
	prefetch := int64(c.srv.opts.DefaultPrefetch)
	for _, h := range []string{hAMQPrefetch, hPrefetchCount} {
		if v, ok, err := parseIntHeader(f, h, 1, int64(c.srv.opts.MaxPrefetch)); err != nil {
			return refuse("%v (the limit is %d unacknowledged messages per subscription)", err, c.srv.opts.MaxPrefetch)
		} else if ok {
			prefetch = v
		}
	}
	if b, _, err := parseBoolHeader(f, hBrowser); err != nil {
		return refuse("%v", err)
	} else if b {
		sel, _ := f.Get(hSelector)
		return c.browse(id, dest, sel)
	}
	opts := engine.ConsumerOptions{Prefetch: int(prefetch)}
	opts.Selector, _ = f.Get(hSelector)
	for _, h := range []string{hNoLocal, hAMQNoLocal} {
		if b, ok, err := parseBoolHeader(f, h); err != nil {
			return refuse("%v", err)
		} else if ok {
			opts.NoLocal = b
		}
	}
	for _, h := range []string{hAMQSubName, hDurableSubName, hDurableSubName2} {
		if v, ok := f.Get(h); ok && v != "" {
			opts.SubscriptionName, opts.Durable = v, true
		}
	}
	if v, ok := f.Get(hSubName); ok && v != "" {
		opts.SubscriptionName = v
		if d, ok, err := parseBoolHeader(f, hDurable); err != nil {
			return refuse("%v", err)
		} else {
			opts.Durable = ok && d
		}
	}
	if b, _, err := parseBoolHeader(f, hShared); err != nil {
		return refuse("%v", err)
	} else if b {
		opts.Shared = true
		if opts.SubscriptionName == "" {
			return refuse("a shared subscription needs %s", hSubName)
		}
	}
	if (opts.Durable || opts.Shared) && !dest.Kind.IsTopic() {
		return refuse("durable and shared subscriptions need a /topic/ destination, not %s", ds)
	}
	// ack:auto: a MESSAGE is acknowledged once it reached the socket (see
	// writeLoop), and so is its credit given back: what the broker keeps
	// for a client that does not read is the window, not what producers
	// send.
	engMode := engine.IndividualAcknowledge
	opts.CreditMode = engine.CreditOnAck
	switch mode {
	case ackClient:
		engMode = engine.ClientAcknowledge
		opts.CreditMode = engine.CreditOnAck
	case ackClientIndividual:
		opts.CreditMode = engine.CreditOnAck
	}
	if mode == ackAuto {
		// Delivered frames wait in the writer queue; a small window keeps
		// the broker from buffering for a slow client.
		opts.Prefetch = int(min(prefetch, autoPrefetch))
	}
	sess, err := c.eng.CreateSession(engMode)
	if err != nil {
		return err
	}
	if v, ok, err := parseIntHeader(f, hRedeliveryDelay, 0, 1<<40); err != nil {
		_ = sess.Close()
		return refuse("%v", err)
	} else if ok {
		sess.SetRedeliveryDelay(time.Duration(v) * time.Millisecond)
	}
	cons, err := sess.CreateConsumer(dest, opts)
	if err != nil {
		_ = sess.Close()
		return err
	}
	c.mu.Lock()
	c.subSeq++
	sub := &subscription{c: c, id: id, num: c.subSeq, ackMode: mode, sess: sess, cons: cons, durableName: opts.SubscriptionName}
	if c.version < frame.V12 && mode != ackAuto {
		sub.byMsg = map[string]uint64{}
	}
	c.subs[id] = sub
	c.mu.Unlock()
	sess.SetExceptionListener(func(err error) {
		c.fail(refuse("subscription %s ended: %v", id, err), nil)
	})
	// Answer the receipt before the first MESSAGE can be queued, so a
	// client sees RECEIPT, then the subscription's messages; and after
	// the receipts of earlier frames still waiting for a confirmation.
	if _, ok := f.Get(frame.HeaderReceipt); ok {
		c.waitConfirms()
	}
	c.receipt(f)
	f.Del(frame.HeaderReceipt)
	if err := cons.SetListener(sub.deliver); err != nil {
		return err
	}
	return nil
}

// autoPrefetch bounds the window of an ack:auto subscription: the
// messages dispatched to it and not yet written to its socket.
const autoPrefetch = 64

// frameSize estimates the bytes f takes in the output buffer.
func frameSize(f *frame.Frame) int64 {
	n := len(f.Body) + 16
	for _, h := range f.Headers {
		n += len(h.Name) + len(h.Value) + 2
	}
	return int64(n)
}

// deliver is the engine listener of a subscription: it queues the MESSAGE
// frame for the writer, waiting while the writer is behind (its queue is
// full, or the connection's output budget is).
func (s *subscription) deliver(d message.Delivery) {
	f := s.c.messageFrame(s, d)
	it := outItem{f: f, size: frameSize(f)}
	if !s.c.budget.Take(it.size, s.c.done) {
		return // the connection ends: the session gives the message back
	}
	if s.ackMode == ackAuto {
		it.sub, it.tag = s, d.Tag
	} else if s.byMsg != nil {
		s.mu.Lock()
		s.byMsg[d.Msg.ID] = d.Tag
		s.mu.Unlock()
	}
	if !s.c.send(it) {
		s.c.budget.Give(it.size)
	}
}

func (c *conn) handleUnsubscribe(ctx context.Context, f *frame.Frame) error {
	id, ok := f.Get(hID)
	if !ok || id == "" {
		if c.version >= frame.V11 {
			return refuse("UNSUBSCRIBE without an id header")
		}
		id, _ = f.Get(hDestination)
	}
	name := ""
	for _, h := range []string{hAMQSubName, hDurableSubName, hDurableSubName2, hSubName} {
		if v, ok := f.Get(h); ok && v != "" {
			name = v
		}
	}
	c.mu.Lock()
	sub := c.subs[id]
	delete(c.subs, id)
	c.mu.Unlock()
	if sub == nil && name == "" {
		return refuse("UNSUBSCRIBE of unknown subscription %q", id)
	}
	if sub != nil {
		if sub.ackMode == ackAuto {
			// MESSAGE frames already queued are acknowledged once
			// written: let that happen before the session takes back
			// what is unacknowledged, or the client would get them twice.
			_ = sub.cons.Close()
			c.flushWrites()
		}
		_ = sub.sess.Close()
	}
	if name != "" {
		// ActiveMQ clients delete a durable subscription this way, with or
		// without an open subscriber on this connection.
		return c.prodSess.Unsubscribe(ctx, name)
	}
	return nil
}

// findDelivery resolves the subscription and tag an ACK or NACK names.
func (c *conn) findDelivery(f *frame.Frame) (*subscription, uint64, error) {
	if c.version >= frame.V12 {
		id, ok := f.Get(hID)
		if !ok {
			return nil, 0, refuse("%s without an id header", f.Command)
		}
		a, b, ok := strings.Cut(id, ".")
		num, err1 := strconv.ParseUint(a, 10, 64)
		tag, err2 := strconv.ParseUint(b, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, 0, refuse("%s id %q was not sent by this server", f.Command, id)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, s := range c.subs {
			if s.num == num {
				return s, tag, nil
			}
		}
		return nil, 0, refuse("%s id %q names no open subscription", f.Command, id)
	}
	msgID, ok := f.Get(hMessageID)
	if !ok {
		return nil, 0, refuse("%s without a message-id header", f.Command)
	}
	subID, hasSub := f.Get(hSubscription)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		if hasSub && s.id != subID {
			continue
		}
		if s.byMsg == nil {
			continue
		}
		s.mu.Lock()
		tag, ok := s.byMsg[msgID]
		if ok {
			delete(s.byMsg, msgID)
		}
		s.mu.Unlock()
		if ok {
			return s, tag, nil
		}
	}
	return nil, 0, refuse("%s of message %q, which is not awaiting acknowledgement", f.Command, msgID)
}

func (c *conn) handleAck(ctx context.Context, f *frame.Frame) error {
	sub, tag, err := c.findDelivery(f)
	if err != nil {
		return err
	}
	if sub.ackMode == ackAuto {
		return refuse("%s on subscription %q, whose ack mode is auto", f.Command, sub.id)
	}
	// The session's redelivery delay can change at any time (WebLogic's
	// setRedeliveryDelay): on SUBSCRIBE, ACK or NACK.
	if v, ok, err := parseIntHeader(f, hRedeliveryDelay, 0, 1<<40); err != nil {
		return refuse("%v", err)
	} else if ok {
		sub.sess.SetRedeliveryDelay(time.Duration(v) * time.Millisecond)
	}
	if f.Command == frame.CmdAck {
		if txID, ok := f.Get(hTransaction); ok {
			st := c.txns[txID]
			if st == nil {
				return refuse("ACK names transaction %q, which is not open", txID)
			}
			return sub.sess.AcknowledgeIn(st.tx, tag)
		}
		return c.acknowledge(sub, tag, f)
	}
	outcome := engine.Failed
	if requeue, ok, err := parseBoolHeader(f, hRequeue); err != nil {
		return refuse("%v", err)
	} else if ok && !requeue {
		outcome = engine.Rejected
	}
	conf, err := sub.sess.SettleConfirm(tag, outcome)
	if err != nil {
		return err
	}
	return c.answerLater(conf, f)
}

// acknowledge acknowledges a delivery for an ACK outside a transaction
// without holding up the reader while the store writes it: the
// acknowledgement takes effect at once and its delete is committed with
// other writes. A receipt is answered once the delete is durable, by the
// confirmer when earlier frames still wait or more frames are already
// read (it returns errPending then), in order with the connection's other
// receipts; a failed write gives an ERROR naming the receipt. Without a
// receipt only a write that failed at once is reported.
func (c *conn) acknowledge(sub *subscription, tag uint64, f *frame.Frame) error {
	conf, err := sub.sess.AcknowledgeConfirm(tag)
	if err != nil {
		return err
	}
	return c.answerLater(conf, f)
}

// answerLater answers an ACK or NACK frame f whose store write conf
// confirms (nil: nothing to write): with a receipt, once the write is
// durable, by the confirmer when earlier frames still wait or more frames
// are already read (it returns errPending then), in order with the
// connection's other receipts; a failed write gives an ERROR naming the
// receipt. Without a receipt nobody waits: only a write that failed at
// once is reported.
func (c *conn) answerLater(conf *engine.Confirmation, f *frame.Frame) error {
	if _, ok := f.Get(frame.HeaderReceipt); !ok {
		if conf.Ready() {
			return conf.Wait(c.ctx)
		}
		return nil
	}
	if !conf.Ready() && (c.confirms.Pending() > 0 || c.rd.Buffered() > 0) {
		c.later(pendingConfirm{f: f, conf: conf})
		return errPending
	}
	return conf.Wait(c.ctx)
}

// browse sends the queue's messages without consuming them, then a MESSAGE
// with "browser: end".
func (c *conn) browse(id string, dest message.Destination, sel string) error {
	if dest.Kind.IsTopic() {
		return refuse("topics cannot be browsed: %s", dest)
	}
	br, err := c.prodSess.CreateBrowser(dest, sel)
	if err != nil {
		return err
	}
	e, err := br.Enumeration()
	if err != nil {
		br.Close()
		return err
	}
	sub := &subscription{c: c, id: id, ackMode: ackAuto}
	go func() {
		defer br.Close()
		for i := 0; i < 1<<30 && e.HasMoreElements(); i++ {
			d, err := e.NextElement()
			if err != nil {
				break
			}
			f := c.messageFrame(sub, d)
			f.Set(hBrowser, "true")
			it := outItem{f: f, size: frameSize(f)}
			if !c.budget.Take(it.size, c.done) {
				return
			}
			if !c.send(it) {
				c.budget.Give(it.size)
				return
			}
		}
		end := &frame.Frame{Command: frame.CmdMessage}
		end.Add(hSubscription, id)
		end.Add(hMessageID, fmt.Sprintf("browser-end-%s", id))
		end.Add(hDestination, c.renderDestination(dest))
		end.Add(hBrowser, "end")
		c.send(outItem{f: end})
	}()
	return nil
}
