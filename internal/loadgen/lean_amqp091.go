package loadgen

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/internal/amqp1client"
	"github.com/sluicemq/sluice/internal/clientio"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// The lean AMQP 0-9-1 client: frames through Sluice's own 0-9-1 codec
// (protocol/amqp091/spec), one connection and one channel (1) per producer
// or consumer, one reader goroutine per connection and the connection's
// flusher, which writes whatever frames piled up while it last wrote (a
// window of publishes, or a run of acks, goes out in one write). A publish
// is encoded straight into the flusher's buffer and a delivery is decoded
// from the FrameReader's buffer into structs the reader keeps, its
// benchmark headers scanned in place, so neither side allocates per
// message. amqp091-go costs more CPU per message than the brokers it
// measures on a small machine; select this client with
// AMQP091Config.Client = "lean". It behaves as the amqp091-go driver does
// (see AMQP091): PLAIN, a queue declared by producers and consumers, an
// exclusive auto-delete queue per subscriber bound to the exchange,
// confirm.select with a window of unconfirmed publishes, basic.qos,
// basic.consume with no-ack or acks (each, or multiple every AckEvery),
// heartbeats every half of the negotiated interval when nothing else was
// written, and connection.close at the end.

const (
	// lean091FrameMax is the largest frame-max this side accepts.
	lean091FrameMax = 131072
	// lean091Heartbeat is the heartbeat interval this side asks for (as
	// the amqp091-go driver does).
	lean091Heartbeat = 10
	// lean091WriteLimit is how many bytes of publishes may wait for the
	// flusher before Send waits for it.
	lean091WriteLimit = 256 << 10
	// lean091Channel is the one channel of a connection.
	lean091Channel = 1
	// lean091ContentType is the content-type of every publish.
	lean091ContentType = "application/octet-stream"
)

// lean091Conn is a connection with its one channel open.
//
// The reader (setup, then one goroutine) owns fr; queueMethod and publish
// are for any goroutine.
type lean091Conn struct {
	nc        net.Conn
	fr        *spec.FrameReader
	frameMax  uint32
	heartbeat time.Duration

	w *clientio.Writer // the coalescing writer, from the end of the handshake
}

// lean091RefusedError is the broker closing the connection or channel.
type lean091RefusedError struct {
	What string // "connection" or "channel"
	spec.ConnectionClose
}

func (e *lean091RefusedError) Error() string {
	return fmt.Sprintf("broker closed the %s: %d %s (class %d, method %d)", e.What, e.ReplyCode, e.ReplyText, e.FailingClassID, e.FailingMethodID)
}

// leanDial connects, authenticates with PLAIN, tunes, opens the virtual
// host and channel 1, each step bounded by ctx (and 10 seconds).
func (a *AMQP091) leanDial(ctx context.Context) (*lean091Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", a.cfg.Addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &lean091Conn{nc: nc, fr: spec.NewFrameReader(nc, spec.FrameMinSize)}
	_ = nc.SetDeadline(amqp1client.Deadline(ctx))
	if err := c.handshake(a.cfg); err != nil {
		_ = nc.Close()
		return nil, err
	}
	// A producer waits while lean091WriteLimit bytes wait for the socket;
	// heart-beats go out when half the negotiated interval was quiet.
	c.w = clientio.New(nc, c.heartbeat, spec.AppendHeartbeat, lean091WriteLimit)
	go c.w.Run()
	if err := c.call(&spec.ChannelOpen{}, &spec.ChannelOpenOk{}); err != nil {
		c.close()
		return nil, fmt.Errorf("channel.open: %w", err)
	}
	return c, nil
}

// handshake runs the connection's negotiation, writing straight to the
// socket (the flusher is not running yet).
func (c *lean091Conn) handshake(cfg AMQP091Config) error {
	if _, err := c.nc.Write([]byte(spec.ProtocolHeader)); err != nil {
		return fmt.Errorf("protocol header: %w", err)
	}
	var start spec.ConnectionStart
	if err := c.expect(0, &start); err != nil {
		return fmt.Errorf("connection.start: %w", err)
	}
	if !bytes.Contains(append(append([]byte(" "), start.Mechanisms...), ' '), []byte(" PLAIN ")) {
		return fmt.Errorf("connection.start: the broker offers %q, not PLAIN", start.Mechanisms)
	}
	b := spec.AppendMethodFrame(nil, 0, &spec.ConnectionStartOk{
		ClientProperties: spec.Table{
			"product":  "sluice bench (lean 0-9-1 client)",
			"platform": "Go",
			"capabilities": spec.Table{
				"publisher_confirms": true, "basic.nack": true, "consumer_cancel_notify": true,
				"connection.blocked": true, "authentication_failure_close": true,
			},
		},
		Mechanism: "PLAIN",
		Response:  []byte("\x00" + cfg.User + "\x00" + cfg.Password),
		Locale:    "en_US",
	})
	if _, err := c.nc.Write(b); err != nil {
		return fmt.Errorf("connection.start-ok: %w", err)
	}
	var tune spec.ConnectionTune
	if err := c.expect(0, &tune); err != nil {
		return fmt.Errorf("connection.tune: %w", err)
	}
	// Each side's limit, 0 meaning none: the smaller one that is set.
	pick := func(ours, theirs uint32) uint32 {
		if theirs == 0 || (ours != 0 && ours < theirs) {
			return ours
		}
		return theirs
	}
	c.frameMax = max(pick(lean091FrameMax, tune.FrameMax), spec.FrameMinSize)
	hb := pick(lean091Heartbeat, uint32(tune.Heartbeat))
	c.heartbeat = time.Duration(hb) * time.Second
	c.fr.SetMaxFrame(c.frameMax)
	b = spec.AppendMethodFrame(b[:0], 0, &spec.ConnectionTuneOk{ChannelMax: uint16(pick(lean091Channel, uint32(tune.ChannelMax))), FrameMax: c.frameMax, Heartbeat: uint16(hb)})
	b = spec.AppendMethodFrame(b, 0, &spec.ConnectionOpen{VirtualHost: cfg.VirtualHost})
	if _, err := c.nc.Write(b); err != nil {
		return fmt.Errorf("connection.tune-ok: %w", err)
	}
	if err := c.expect(0, &spec.ConnectionOpenOk{}); err != nil {
		return fmt.Errorf("connection.open %s: %w", cfg.VirtualHost, err)
	}
	return nil
}

// expect reads frames until the method reply arrives on channel ch and
// decodes it; a connection.close, or a channel.close of channel 1, is a
// *lean091RefusedError. It is for setup, before the reader goroutine runs.
func (c *lean091Conn) expect(ch uint16, reply spec.Method) error {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return err
		}
		if f.Type != spec.FrameMethod {
			continue
		}
		cls, mth, err := spec.MethodIDs(f.Payload)
		if err != nil {
			return err
		}
		if rerr := c.refusal(f, cls, mth); rerr != nil {
			return rerr
		}
		if f.Channel == ch && cls == reply.ClassID() && mth == reply.MethodID() {
			return reply.Decode(f.Payload[4:])
		}
	}
}

// refusal returns the broker's connection.close (answered with close-ok)
// or channel.close as an error, or nil for any other method.
func (c *lean091Conn) refusal(f spec.Frame, cls, mth uint16) error {
	var what string
	var cl spec.ConnectionClose
	switch {
	case cls == spec.ClassConnection && mth == spec.MethodConnectionClose:
		what = "connection"
		if err := cl.Decode(f.Payload[4:]); err != nil {
			return err
		}
		_ = c.queueMethod(0, &spec.ConnectionCloseOk{})
	case cls == spec.ClassChannel && mth == spec.MethodChannelClose:
		what = "channel"
		var ch spec.ChannelClose
		if err := ch.Decode(f.Payload[4:]); err != nil {
			return err
		}
		cl = spec.ConnectionClose(ch)
	default:
		return nil
	}
	return &lean091RefusedError{What: what, ConnectionClose: cl}
}

// call sends req on channel 1 and reads until its reply; for setup.
func (c *lean091Conn) call(req, reply spec.Method) error {
	if err := c.queueMethod(lean091Channel, req); err != nil {
		return err
	}
	return c.expect(lean091Channel, reply)
}

// queueMethod queues a method frame for the writer; m is encoded before
// it returns.
func (c *lean091Conn) queueMethod(ch uint16, m spec.Method) error {
	return c.w.Queue(func(b []byte) ([]byte, error) {
		return spec.AppendMethodFrame(b, ch, m), nil
	})
}

// publish queues a basic.publish, its content header (the benchmark
// headers of m, delivery-mode mode) and the body frames, waiting while
// lean091WriteLimit bytes wait for the socket.
func (c *lean091Conn) publish(pub *spec.BasicPublish, m *Msg, mode uint8, body []byte) error {
	chunk := int(c.frameMax) - 8
	return c.w.QueueBounded(func(b []byte) ([]byte, error) {
		b = spec.AppendMethodFrame(b, lean091Channel, pub)
		b = appendLean091Header(b, m, mode, len(body))
		for rest := body; len(rest) > 0; {
			n := min(len(rest), chunk)
			b = spec.AppendFrame(b, spec.FrameBody, lean091Channel, rest[:n])
			rest = rest[n:]
		}
		return b, nil
	})
}

// appendLean091Header appends a content header frame on channel 1: basic
// class, the body size, content-type, the headers table of the benchmark
// headers (the sequence as "producer.seq", the send time as a long-long
// integer) and delivery-mode. It writes the table itself, so that a
// publish allocates nothing (a spec.Table would box every value).
func appendLean091Header(b []byte, m *Msg, mode uint8, size int) []byte {
	b = append(b, spec.FrameHeader, 0, lean091Channel)
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, spec.ClassBasic)
	b = append(b, 0, 0) // weight
	b = binary.BigEndian.AppendUint64(b, uint64(size))
	b = binary.BigEndian.AppendUint16(b, spec.FlagContentType|spec.FlagHeaders|spec.FlagDeliveryMode)
	b = append(b, byte(len(lean091ContentType)))
	b = append(b, lean091ContentType...)
	tab := len(b)
	b = append(b, 0, 0, 0, 0)
	b = appendLean091Key(b, hdrRun, 'S')
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.Run)))
	b = append(b, m.Run...)
	b = appendLean091Key(b, hdrSeq, 'S')
	seq := len(b)
	b = append(b, 0, 0, 0, 0)
	b = strconv.AppendInt(b, int64(m.Producer), 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, m.Seq, 10)
	binary.BigEndian.PutUint32(b[seq:], uint32(len(b)-seq-4))
	b = appendLean091Key(b, hdrTS, 'l')
	b = binary.BigEndian.AppendUint64(b, uint64(m.Sent))
	if m.Probe {
		b = appendLean091Key(b, hdrProbe, 'S')
		b = append(b, 0, 0, 0, 1, '1')
	}
	binary.BigEndian.PutUint32(b[tab:], uint32(len(b)-tab-4))
	b = append(b, mode)
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return append(b, spec.FrameEnd)
}

func appendLean091Key(b []byte, key string, typ byte) []byte {
	b = append(b, byte(len(key)))
	b = append(b, key...)
	return append(b, typ)
}

// shutdown queues connection.close, waits up to d for readerDone (closed
// by the reading loop once it read close-ok, or the connection failed),
// then tears the connection down and waits for readerDone.
func (c *lean091Conn) shutdown(readerDone <-chan struct{}, d time.Duration) error {
	var err error
	if qerr := c.queueMethod(0, &spec.ConnectionClose{ReplyCode: spec.ReplySuccess, ReplyText: "bench done"}); qerr == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-readerDone:
		case <-t.C:
			err = fmt.Errorf("connection.close not answered within %v", d)
		}
	}
	c.close()
	<-readerDone
	return err
}

// close tears the connection down at once.
func (c *lean091Conn) close() {
	if c.w != nil {
		c.w.Fail(fmt.Errorf("queue: %w", net.ErrClosed))
		c.w.Stop()
	}
	_ = c.nc.Close()
}

// isMethod reports whether a method frame's ids are cls and mth.
func isMethod(payload []byte, cls, mth uint16) bool {
	c, m, err := spec.MethodIDs(payload)
	return err == nil && c == cls && m == mth
}

// newLeanProducer opens a producer's connection; for a queue it declares
// the queue, and with receipts it selects confirm mode.
func (a *AMQP091) newLeanProducer(ctx context.Context, o *Options) (Producer, error) {
	c, err := a.leanDial(ctx)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (Producer, error) {
		c.close()
		return nil, err
	}
	p := &lean091Producer{c: c, o: o, mode: 1, notify: make(chan struct{}, 1), readDone: make(chan struct{})}
	p.pub = spec.BasicPublish{RoutingKey: o.Destination}
	if o.Persistent {
		p.mode = 2
	}
	if o.Topic {
		p.pub.Exchange = a.cfg.Exchange
		p.sync = &spec.ExchangeDeclare{Exchange: a.cfg.Exchange, Type: "topic", Passive: true, Durable: true}
		p.syncOK = [2]uint16{spec.ClassExchange, spec.MethodExchangeDeclareOk}
	} else {
		if err := c.call(&spec.QueueDeclare{Queue: o.Destination, Durable: o.Persistent}, &spec.QueueDeclareOk{}); err != nil {
			return fail(fmt.Errorf("queue.declare %s: %w", o.Destination, err))
		}
		p.sync = &spec.QueueDeclare{Queue: o.Destination, Passive: true, Durable: o.Persistent}
		p.syncOK = [2]uint16{spec.ClassQueue, spec.MethodQueueDeclareOk}
	}
	if o.Receipts {
		if err := c.call(&spec.ConfirmSelect{}, &spec.ConfirmSelectOk{}); err != nil {
			return fail(fmt.Errorf("confirm.select: %w", err))
		}
		p.pending = make([]bool, max(o.ReceiptWindow, 1))
		p.next, p.low = 1, 1
	}
	_ = c.nc.SetDeadline(time.Time{})
	go p.read()
	return p, nil
}

type lean091Producer struct {
	c    *lean091Conn
	o    *Options
	mode uint8 // delivery-mode
	pub  spec.BasicPublish
	// sync is Flush's round trip without receipts (a passive declare), and
	// syncOK its answer's ids.
	sync   spec.Method
	syncOK [2]uint16

	mu sync.Mutex
	// With receipts: the delivery tag of the next publish, the lowest
	// unconfirmed one, and a ring (pending[tag%len]) of which tags in
	// [low, next) are unconfirmed; next-low never exceeds the window.
	next, low uint64
	pending   []bool
	// Round trips sent and answered.
	syncSent, syncDone int
	err                error
	notify             chan struct{} // the reader changed the state above

	closing  atomic.Bool
	readDone chan struct{}
}

func (p *lean091Producer) wakeUp() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

func (p *lean091Producer) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.wakeUp()
}

// confirm settles tag (and, with multiple, every tag before it).
func (p *lean091Producer) confirm(tag uint64, multiple bool, nack bool) {
	p.mu.Lock()
	w := uint64(len(p.pending))
	if w > 0 {
		if multiple {
			for ; p.low <= tag && p.low < p.next; p.low++ {
				p.pending[p.low%w] = false
			}
		} else if tag >= p.low && tag < p.next {
			p.pending[tag%w] = false
		}
		for p.low < p.next && !p.pending[p.low%w] {
			p.low++
		}
	}
	if nack && p.err == nil {
		p.err = fmt.Errorf("publish %d not confirmed: basic.nack", tag)
	}
	p.mu.Unlock()
	p.wakeUp()
}

// read handles the broker's confirms, round-trip answers and closes.
func (p *lean091Producer) read() {
	defer close(p.readDone)
	var ack spec.BasicAck
	var nack spec.BasicNack
	for {
		f, err := p.c.fr.ReadFrame()
		if err != nil {
			if !p.closing.Load() {
				p.fail(fmt.Errorf("AMQP 0-9-1 connection lost: %w", err))
			}
			return
		}
		if f.Type != spec.FrameMethod {
			continue // heartbeats
		}
		cls, mth, err := spec.MethodIDs(f.Payload)
		if err != nil {
			p.fail(err)
			return
		}
		switch {
		case cls == spec.ClassBasic && mth == spec.MethodBasicAck:
			if err := ack.Decode(f.Payload[4:]); err != nil {
				p.fail(err)
				return
			}
			p.confirm(ack.DeliveryTag, ack.Multiple, false)
		case cls == spec.ClassBasic && mth == spec.MethodBasicNack:
			if err := nack.Decode(f.Payload[4:]); err != nil {
				p.fail(err)
				return
			}
			p.confirm(nack.DeliveryTag, nack.Multiple, true)
		case cls == p.syncOK[0] && mth == p.syncOK[1]:
			p.mu.Lock()
			p.syncDone++
			p.mu.Unlock()
			p.wakeUp()
		case cls == spec.ClassConnection && mth == spec.MethodConnectionCloseOk:
			return
		default:
			if rerr := p.c.refusal(f, cls, mth); rerr != nil {
				p.fail(rerr)
				if cls == spec.ClassConnection {
					return
				}
			}
		}
	}
}

// wait returns with mu held once ready holds, or an error without it.
func (p *lean091Producer) wait(ctx context.Context, ready func() bool) error {
	for {
		p.mu.Lock()
		if p.err != nil {
			err := p.err
			p.mu.Unlock()
			return err
		}
		if ready() {
			return nil
		}
		p.mu.Unlock()
		select {
		case <-p.notify:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *lean091Producer) roomInWindow() bool { return p.next-p.low < uint64(len(p.pending)) }
func (p *lean091Producer) noError() bool      { return true }

func (p *lean091Producer) Send(ctx context.Context, m Msg, body []byte) error {
	if w := uint64(len(p.pending)); w > 0 {
		if err := p.wait(ctx, p.roomInWindow); err != nil {
			return err
		}
		p.pending[p.next%w] = true
		p.next++
	} else if err := p.wait(ctx, p.noError); err != nil {
		return err
	}
	p.mu.Unlock()
	if err := p.c.publish(&p.pub, &m, p.mode, body); err != nil {
		p.fail(err)
		return err
	}
	if m.Confirm || m.Probe {
		return p.Flush(ctx)
	}
	return nil
}

// Flush waits until the broker has every publish: with receipts until
// each is confirmed; without, for the answer to a passive declare sent
// after them on the channel.
func (p *lean091Producer) Flush(ctx context.Context) error {
	if len(p.pending) > 0 {
		if err := p.wait(ctx, func() bool { return p.low == p.next }); err != nil {
			return err
		}
		p.mu.Unlock()
		return nil
	}
	p.mu.Lock()
	p.syncSent++
	want := p.syncSent
	p.mu.Unlock()
	if err := p.c.queueMethod(lean091Channel, p.sync); err != nil {
		p.fail(err)
		return err
	}
	if err := p.wait(ctx, func() bool { return p.syncDone >= want }); err != nil {
		return fmt.Errorf("round trip after the publishes: %w", err)
	}
	p.mu.Unlock()
	return nil
}

func (p *lean091Producer) Close() error {
	p.closing.Store(true)
	return p.c.shutdown(p.readDone, 5*time.Second)
}

// newLeanConsumer opens a consumer's connection, declares (and for a
// topic, binds) its queue and starts consuming.
func (a *AMQP091) newLeanConsumer(ctx context.Context, o *Options, idx int, h Handler) (Consumer, error) {
	c, err := a.leanDial(ctx)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (Consumer, error) {
		c.close()
		return nil, err
	}
	queue := o.Destination
	if o.Topic {
		var ok spec.QueueDeclareOk
		if err := c.call(&spec.QueueDeclare{Exclusive: true, AutoDelete: true}, &ok); err != nil {
			return fail(fmt.Errorf("queue.declare (subscriber %d): %w", idx, err))
		}
		queue = ok.Queue
		if err := c.call(&spec.QueueBind{Queue: queue, Exchange: a.cfg.Exchange, RoutingKey: o.Destination}, &spec.QueueBindOk{}); err != nil {
			return fail(fmt.Errorf("queue.bind %s to %s: %w", queue, a.cfg.Exchange, err))
		}
	} else if err := c.call(&spec.QueueDeclare{Queue: queue, Durable: o.Persistent}, &spec.QueueDeclareOk{}); err != nil {
		return fail(fmt.Errorf("queue.declare %s: %w", queue, err))
	}
	if o.Prefetch > 0 {
		if err := c.call(&spec.BasicQos{PrefetchCount: uint16(min(o.Prefetch, 65535))}, &spec.BasicQosOk{}); err != nil {
			return fail(fmt.Errorf("basic.qos: %w", err))
		}
	}
	if err := c.call(&spec.BasicConsume{Queue: queue, NoAck: o.AckMode == AckAuto}, &spec.BasicConsumeOk{}); err != nil {
		return fail(fmt.Errorf("basic.consume %s: %w", queue, err))
	}
	_ = c.nc.SetDeadline(time.Time{})
	lc := &lean091Consumer{c: c, o: o, done: make(chan struct{}), deleted: make(chan error, 1)}
	if !o.Topic && idx == 0 {
		lc.deleteQueue = o.Destination
	}
	go lc.run(h)
	return lc, nil
}

type lean091Consumer struct {
	c           *lean091Conn
	o           *Options
	deleteQueue string     // the run's queue, deleted on Close by consumer 0
	deleted     chan error // queue.delete's outcome
	closing     atomic.Bool
	done        chan struct{}

	// The reader's own.
	deliver spec.BasicDeliver
	ack     spec.BasicAck
	fields  lean091Fields
	runID   string // the last run ID seen, reused while it repeats
	n       int    // deliveries so far
}

// lean091Fields are the benchmark headers of a content header, as they
// were on the wire: a long string's or byte array's bytes (which alias the
// frame), or an integer.
type lean091Fields struct {
	vals [4]lean091Field // hdrRun, hdrSeq, hdrTS, hdrProbe
}

type lean091Field struct {
	present, isInt bool
	b              []byte
	i              int64
}

var lean091Keys = [4]string{hdrRun, hdrSeq, hdrTS, hdrProbe}

// scanLean091Header reads a content header payload's body size and its
// benchmark headers into f, without allocating.
func scanLean091Header(p []byte, f *lean091Fields) (uint64, error) {
	*f = lean091Fields{}
	bad := func(what string) (uint64, error) {
		return 0, fmt.Errorf("content header: %s", what)
	}
	if len(p) < 14 {
		return bad("truncated")
	}
	if cls := binary.BigEndian.Uint16(p); cls != spec.ClassBasic {
		return bad("class " + strconv.Itoa(int(cls)))
	}
	size := binary.BigEndian.Uint64(p[4:])
	flags := binary.BigEndian.Uint16(p[12:])
	off := 14
	for w := flags; w&1 != 0; { // continuation flag words
		if len(p) < off+2 {
			return bad("truncated flags")
		}
		w = binary.BigEndian.Uint16(p[off:])
		off += 2
	}
	for _, fl := range []uint16{spec.FlagContentType, spec.FlagContentEncoding} {
		if flags&fl == 0 {
			continue
		}
		if len(p) <= off || len(p) < off+1+int(p[off]) {
			return bad("truncated short string")
		}
		off += 1 + int(p[off])
	}
	if flags&spec.FlagHeaders == 0 {
		return size, nil
	}
	if len(p) < off+4 {
		return bad("truncated headers")
	}
	n := binary.BigEndian.Uint32(p[off:])
	off += 4
	if uint64(n) > uint64(len(p)-off) {
		return bad("headers table longer than the frame")
	}
	t := p[off : off+int(n)]
	for len(t) > 0 {
		kl := int(t[0])
		if len(t) < 2+kl {
			return bad("truncated headers entry")
		}
		key, typ, v := t[1:1+kl], t[1+kl], t[2+kl:]
		vn, ok := lean091ValueSize(typ, v)
		if !ok {
			return bad(fmt.Sprintf("headers entry %q: type %q truncated or unknown", key, typ))
		}
		for i, k := range lean091Keys {
			if string(key) == k {
				f.vals[i] = lean091FieldOf(typ, v[:vn])
			}
		}
		t = v[vn:]
	}
	return size, nil
}

// lean091ValueSize returns the size of a field value of type typ at the
// start of v, and whether it fits.
func lean091ValueSize(typ byte, v []byte) (int, bool) {
	n := 0
	switch typ {
	case 'V':
	case 't', 'b', 'B':
		n = 1
	case 's', 'u', 'U':
		n = 2
	case 'I', 'i', 'f':
		n = 4
	case 'D':
		n = 5
	case 'l', 'L', 'd', 'T':
		n = 8
	case 'S', 'x', 'F', 'A':
		if len(v) < 4 {
			return 0, false
		}
		l := binary.BigEndian.Uint32(v)
		if uint64(l) > uint64(len(v)-4) {
			return 0, false
		}
		n = 4 + int(l)
	default:
		return 0, false
	}
	return n, n <= len(v)
}

func lean091FieldOf(typ byte, v []byte) lean091Field {
	f := lean091Field{present: true, isInt: true}
	switch typ {
	case 'S', 'x':
		return lean091Field{present: true, b: v[4:]}
	case 'b':
		f.i = int64(int8(v[0]))
	case 'B':
		f.i = int64(v[0])
	case 's', 'U':
		f.i = int64(int16(binary.BigEndian.Uint16(v)))
	case 'u':
		f.i = int64(binary.BigEndian.Uint16(v))
	case 'I':
		f.i = int64(int32(binary.BigEndian.Uint32(v)))
	case 'i':
		f.i = int64(binary.BigEndian.Uint32(v))
	case 'l', 'L':
		f.i = int64(binary.BigEndian.Uint64(v))
	default:
		return lean091Field{present: true, b: []byte("?")} // some other type: present, not a number
	}
	return f
}

// msg builds the message the benchmark headers describe, as parseMsg
// would from their string forms; the run ID reuses *run while it repeats.
func (f *lean091Fields) msg(run *string) (Msg, error) {
	var m Msg
	r := f.vals[0]
	if r.isInt {
		m.Run = strconv.FormatInt(r.i, 10)
	} else if string(r.b) != *run {
		*run = string(r.b)
	}
	if !r.isInt {
		m.Run = *run
	}
	if pr := f.vals[3]; pr.present && (pr.isInt || len(pr.b) > 0) {
		m.Probe = true
		return m, nil
	}
	seq := f.vals[1]
	dot := bytes.IndexByte(seq.b, '.')
	if seq.isInt || dot < 0 {
		if m.Run == "" {
			m.Producer = -1 // not a benchmark message: foreign
			return m, nil
		}
		return m, fmt.Errorf("message with a malformed %s header %q", hdrSeq, seq.b)
	}
	prod, ok1 := lean091Uint(seq.b[:dot])
	n, ok2 := lean091Uint(seq.b[dot+1:])
	ts, ok3 := f.vals[2].i, f.vals[2].isInt
	if !ok3 {
		var neg bool
		b := f.vals[2].b
		if len(b) > 0 && b[0] == '-' {
			neg, b = true, b[1:]
		}
		var u uint64
		u, ok3 = lean091Uint(b)
		ts = int64(u)
		if neg {
			ts = -ts
		}
	}
	if !ok1 || !ok2 || !ok3 || prod > 1<<31 {
		return m, fmt.Errorf("message with malformed benchmark headers: %s %q, %s %q", hdrSeq, seq.b, hdrTS, f.vals[2].b)
	}
	m.Producer, m.Seq, m.Sent = int(prod), n, ts
	return m, nil
}

// lean091Uint parses a decimal number of at most 19 digits.
func lean091Uint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	return u, true
}

func (lc *lean091Consumer) run(h Handler) {
	defer close(lc.done)
	failed := func(err error) {
		if !lc.closing.Load() {
			h(Msg{}, err)
		}
	}
	const (
		wantMethod = iota
		wantHeader
		wantBody
	)
	state := wantMethod
	var remaining uint64
	var m Msg
	var merr error
	for {
		f, err := lc.c.fr.ReadFrame()
		if err != nil {
			failed(fmt.Errorf("AMQP 0-9-1 connection lost: %w", err))
			return
		}
		if f.Type == spec.FrameHeartbeat {
			continue
		}
		switch state {
		case wantHeader:
			if f.Type != spec.FrameHeader {
				failed(fmt.Errorf("frame type %d where a content header was due", f.Type))
				return
			}
			if remaining, err = scanLean091Header(f.Payload, &lc.fields); err != nil {
				failed(err)
				return
			}
			m, merr = lc.fields.msg(&lc.runID)
			state = wantBody
		case wantBody:
			if f.Type != spec.FrameBody || uint64(len(f.Payload)) > remaining {
				failed(fmt.Errorf("frame type %d (%d bytes) where %d bytes of body were due", f.Type, len(f.Payload), remaining))
				return
			}
			remaining -= uint64(len(f.Payload))
		default:
			if f.Type != spec.FrameMethod {
				failed(fmt.Errorf("frame type %d outside a delivery", f.Type))
				return
			}
			if isMethod(f.Payload, spec.ClassBasic, spec.MethodBasicDeliver) {
				if err := lc.deliver.Decode(f.Payload[4:]); err != nil {
					failed(err)
					return
				}
				state = wantHeader
				continue
			}
			if !lc.control(f, failed) {
				return
			}
			continue
		}
		if state != wantBody || remaining > 0 {
			continue
		}
		state = wantMethod
		if lc.closing.Load() {
			continue // drain until the close is answered
		}
		lc.n++
		ack := false
		switch lc.o.AckMode {
		case AckClient:
			ack, lc.ack.Multiple = lc.n%max(lc.o.AckEvery, 1) == 0, true
		case AckClientIndividual:
			ack, lc.ack.Multiple = true, false
		}
		if ack {
			lc.ack.DeliveryTag = lc.deliver.DeliveryTag
			if err := lc.c.queueMethod(lean091Channel, &lc.ack); err != nil {
				failed(fmt.Errorf("basic.ack: %w", err))
				return
			}
		}
		if merr != nil {
			h(Msg{}, merr)
			return
		}
		h(m, nil)
	}
}

// control handles a method other than basic.deliver; it returns false
// when the reader is done.
func (lc *lean091Consumer) control(f spec.Frame, failed func(error)) bool {
	cls, mth, err := spec.MethodIDs(f.Payload)
	if err != nil {
		failed(err)
		return false
	}
	switch {
	case cls == spec.ClassQueue && mth == spec.MethodQueueDeleteOk:
		lc.report(nil)
	case cls == spec.ClassConnection && mth == spec.MethodConnectionCloseOk:
		return false
	case cls == spec.ClassBasic && mth == spec.MethodBasicCancel:
		failed(errors.New("the broker cancelled the consumer (basic.cancel)"))
		return false
	default:
		if rerr := lc.c.refusal(f, cls, mth); rerr != nil {
			if lc.closing.Load() && cls == spec.ClassChannel {
				lc.report(rerr)
				return true
			}
			failed(rerr)
			return false
		}
	}
	return true
}

// report passes queue.delete's outcome to Close (the first one only).
func (lc *lean091Consumer) report(err error) {
	select {
	case lc.deleted <- err:
	default:
	}
}

func (lc *lean091Consumer) Close() error {
	lc.closing.Store(true)
	var err error
	if lc.deleteQueue != "" {
		if qerr := lc.c.queueMethod(lean091Channel, &spec.QueueDelete{Queue: lc.deleteQueue}); qerr != nil {
			err = fmt.Errorf("queue.delete %s: %w", lc.deleteQueue, qerr)
		} else {
			t := time.NewTimer(5 * time.Second)
			select {
			case derr := <-lc.deleted:
				if derr != nil {
					err = fmt.Errorf("queue.delete %s: %w", lc.deleteQueue, derr)
				}
			case <-lc.done:
			case <-t.C:
				err = fmt.Errorf("queue.delete %s: not answered within 5s", lc.deleteQueue)
			}
			t.Stop()
		}
	}
	return errors.Join(err, lc.c.shutdown(lc.done, 5*time.Second))
}
