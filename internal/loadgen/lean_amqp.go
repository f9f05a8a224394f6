package loadgen

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/internal/amqp1client"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// The lean AMQP 1.0 client: internal/amqp1client's connections (frames
// through Sluice's own codec), one connection, session and link per
// producer or consumer, one reader goroutine per connection and the
// connection's flusher, which writes whatever frames piled up while it
// last wrote (so a window of transfers, or a run of dispositions, goes out
// in one write). go-amqp costs ~150 µs of CPU per message on a small machine,
// which makes the load generator the bottleneck; select this client with
// AMQPConfig.Client = "lean". It behaves as the go-amqp driver does:
// SASL ANONYMOUS or PLAIN, producers send unsettled (durable when
// persistent) and keep a window of unsettled sends, consumers with ack
// auto ask for pre-settled deliveries, otherwise accept each message.

const (
	// leanAMQPWindow is the session window this side announces (again
	// with every link flow).
	leanAMQPWindow = 1 << 20
	// leanAMQPMaxFrame is the max-frame-size this side announces.
	leanAMQPMaxFrame = 1 << 20
)

var leanAMQPConns atomic.Uint64

var leanAccepted = &types.Accepted{}

// leanDial connects, authenticates and begins the session; it returns
// the connection and its container-id.
func (a *AMQP) leanDial(ctx context.Context) (*amqp1client.Conn, string, error) {
	container := fmt.Sprintf("sluice-bench-lean-%d-%d", os.Getpid(), leanAMQPConns.Add(1))
	c, err := amqp1client.Dial(ctx, amqp1client.Config{
		Addr: a.cfg.Addr, ContainerID: container, Hostname: a.cfg.VirtualHost,
		User: a.cfg.User, Password: a.cfg.Password,
		MaxFrameSize: leanAMQPMaxFrame, Window: leanAMQPWindow,
	})
	return c, container, err
}

// leanAttach attaches the connection's one link (handle 0) and reads
// until the broker answers; it runs before the reader goroutine starts.
// The connection is closed when it fails.
func leanAttach(ctx context.Context, c *amqp1client.Conn, container string, a *types.Attach, what string) error {
	a.Name, a.Handle = container+"-link", 0
	if err := c.Attach(ctx, a, what); err != nil {
		c.Close()
		return err
	}
	return nil
}

// newLeanProducer attaches a sender on a connection of its own.
func (a *AMQP) newLeanProducer(ctx context.Context, o *Options) (Producer, error) {
	c, container, err := a.leanDial(ctx)
	if err != nil {
		return nil, err
	}
	addr, caps := a.address(o)
	tgt := types.NewTarget()
	tgt.Address, tgt.Capabilities = addr, amqp1client.Symbols(caps)
	at := types.NewAttach()
	at.Role, at.Source, at.Target = types.RoleSender, types.NewSource(), tgt
	at.SndSettleMode, at.RcvSettleMode = types.SenderSettleModeUnsettled, types.ReceiverSettleModeFirst
	at.InitialDeliveryCount = types.Some(types.SequenceNo(0))
	if err := leanAttach(ctx, c, container, at, "attach sender to "+addr); err != nil {
		return nil, err
	}
	window := a.cfg.SendWindow
	if o.Receipts {
		window = o.ReceiptWindow
	}
	p := &leanAMQPProducer{c: c, o: o, window: window, remoteIn: int64(c.RemoteIncomingWindow()),
		notify: make(chan struct{}, 1), readDone: make(chan struct{})}
	p.hdr.Durable = types.Some(o.Persistent)
	p.msg.Header = &p.hdr
	p.t.MessageFormat = types.Some(types.MessageFormat(0))
	go p.read()
	return p, nil
}

type leanAMQPProducer struct {
	c      *amqp1client.Conn
	o      *Options
	window int

	mu          sync.Mutex
	credit      uint32 // link credit left
	count       uint32 // link delivery-count
	nextOut     uint32 // next transfer (and delivery) id
	remoteIn    int64  // transfers the broker's session still takes
	outstanding int    // unsettled sends
	err         error
	notify      chan struct{} // the reader changed the state above

	closing  atomic.Bool
	readDone chan struct{}

	// Send's scratch.
	t       types.Transfer
	msg     types.Message
	hdr     types.Header
	props   [4]types.MapEntry
	data    [1]types.Data
	tag     [4]byte
	payload []byte
}

func (p *leanAMQPProducer) wake() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

func (p *leanAMQPProducer) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.wake()
}

// read handles the broker's flows and dispositions.
func (p *leanAMQPProducer) read() {
	defer close(p.readDone)
	for {
		f, err := p.c.ReadFrame()
		if err != nil {
			if !p.closing.Load() {
				p.fail(fmt.Errorf("AMQP connection lost: %w", err))
			}
			return
		}
		switch b := f.Body.(type) {
		case *types.Flow:
			p.mu.Lock()
			p.remoteIn = int64(amqp1client.SessionRoom(b, p.nextOut))
			if _, ok := b.Handle.Get(); ok {
				p.credit = amqp1client.SenderCredit(b, p.count)
			}
			p.mu.Unlock()
			p.wake()
		case *types.Disposition:
			if b.Role != types.RoleReceiver || !b.Settled {
				continue
			}
			var serr error
			switch s := b.State.(type) {
			case *types.Accepted:
			case *types.Rejected:
				serr = fmt.Errorf("message rejected: %s", amqp1client.ErrText(s.Error))
			default:
				serr = fmt.Errorf("message settled as %T", b.State)
			}
			first, last := amqp1client.Span(b)
			n := int(last-first) + 1
			p.mu.Lock()
			p.outstanding = max(0, p.outstanding-n)
			if serr != nil && p.err == nil {
				p.err = serr
			}
			p.mu.Unlock()
			p.wake()
		case *types.Detach, *types.End, *types.Close:
			if _, ok := b.(*types.Close); ok && p.closing.Load() {
				return
			}
			p.fail(amqp1client.FrameErr(f))
			if _, ok := b.(*types.Close); ok {
				return
			}
		}
	}
}

// wait returns with mu held once ready holds, or an error without it.
func (p *leanAMQPProducer) wait(ctx context.Context, ready func() bool) error {
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

func (p *leanAMQPProducer) Send(ctx context.Context, m Msg, body []byte) error {
	if err := p.wait(ctx, func() bool { return p.outstanding < p.window && p.credit > 0 && p.remoteIn > 0 }); err != nil {
		return err
	}
	id := p.nextOut
	p.nextOut++
	p.credit--
	p.count++
	p.remoteIn--
	p.outstanding++
	p.mu.Unlock()

	p.props[0] = types.MapEntry{Key: hdrRun, Value: m.Run}
	p.props[1] = types.MapEntry{Key: hdrSeq, Value: strconv.Itoa(m.Producer) + "." + strconv.FormatUint(m.Seq, 10)}
	p.props[2] = types.MapEntry{Key: hdrTS, Value: m.Sent}
	n := 3
	if m.Probe {
		p.props[3] = types.MapEntry{Key: hdrProbe, Value: "1"}
		n = 4
	}
	p.msg.ApplicationProperties = p.props[:n]
	p.data[0] = body
	p.msg.Data = p.data[:]
	payload, err := p.msg.AppendAMQP(p.payload[:0])
	if err != nil {
		p.fail(fmt.Errorf("encode: %w", err))
		return err
	}
	p.payload = payload
	p.t.DeliveryID = types.Some(types.DeliveryNumber(id))
	p.t.DeliveryTag = amqp1client.Tag(p.tag[:0], id)
	if err := p.c.Queue(&p.t, payload); err != nil {
		p.fail(err)
		return err
	}
	if m.Confirm || m.Probe {
		return p.Flush(ctx)
	}
	return nil
}

// Flush waits until every send is settled.
func (p *leanAMQPProducer) Flush(ctx context.Context) error {
	if err := p.wait(ctx, func() bool { return p.outstanding == 0 }); err != nil {
		return err
	}
	p.mu.Unlock()
	return nil
}

func (p *leanAMQPProducer) Close() error {
	p.closing.Store(true)
	return p.c.Shutdown(p.readDone, 5*time.Second)
}

// newLeanConsumer attaches a receiver on a connection of its own.
func (a *AMQP) newLeanConsumer(ctx context.Context, o *Options, h Handler) (Consumer, error) {
	c, container, err := a.leanDial(ctx)
	if err != nil {
		return nil, err
	}
	addr, caps := a.address(o)
	src := types.NewSource()
	src.Address, src.Capabilities = addr, amqp1client.Symbols(caps)
	at := types.NewAttach()
	at.Role, at.Source, at.Target = types.RoleReceiver, src, types.NewTarget()
	at.SndSettleMode, at.RcvSettleMode = types.SenderSettleModeUnsettled, types.ReceiverSettleModeFirst
	if o.AckMode == AckAuto {
		at.SndSettleMode = types.SenderSettleModeSettled
	}
	if err := leanAttach(ctx, c, container, at, "attach receiver to "+addr); err != nil {
		return nil, err
	}
	credit := o.Prefetch
	if credit <= 0 {
		credit = a.cfg.DefaultCredit
	}
	credit = min(credit, leanAMQPWindow/2)
	lc := &leanAMQPConsumer{c: c, credit: amqp1client.Credit{Window: uint32(credit)}, nextIncoming: c.NextIncoming(), done: make(chan struct{})}
	lc.disp = types.Disposition{Role: types.RoleReceiver, Settled: true, State: leanAccepted}
	if err := lc.flow(); err != nil {
		c.Close()
		return nil, fmt.Errorf("flow: %w", err)
	}
	go lc.run(h)
	return lc, nil
}

type leanAMQPConsumer struct {
	c       *amqp1client.Conn
	closing atomic.Bool
	done    chan struct{}

	// The reader's own.
	credit       amqp1client.Credit
	asm          amqp1client.Assembler
	nextIncoming uint32
	fl           types.Flow
	disp         types.Disposition
}

// flow grants the link its whole window of credit again.
func (lc *leanAMQPConsumer) flow() error {
	lc.credit.Grant(&lc.fl, 0, lc.nextIncoming, 0, leanAMQPWindow)
	return lc.c.Queue(&lc.fl, nil)
}

func (lc *leanAMQPConsumer) run(h Handler) {
	defer close(lc.done)
	failed := func(err error) {
		if !lc.closing.Load() {
			h(Msg{}, err)
		}
	}
	for {
		f, err := lc.c.ReadFrame()
		if err != nil {
			failed(fmt.Errorf("AMQP connection lost: %w", err))
			return
		}
		switch b := f.Body.(type) {
		case *types.Transfer:
			lc.nextIncoming++
			d, ended, err := lc.asm.Add(b, f.Payload)
			if err != nil {
				failed(err)
				return
			}
			if !ended {
				continue
			}
			refill := lc.credit.Delivered()
			if !d.Aborted && !d.Settled {
				lc.disp.First = types.DeliveryNumber(d.ID)
				if err := lc.c.Queue(&lc.disp, nil); err != nil {
					failed(fmt.Errorf("accept: %w", err))
					return
				}
			}
			if refill {
				if err := lc.flow(); err != nil {
					failed(fmt.Errorf("flow: %w", err))
					return
				}
			}
			if d.Aborted {
				continue
			}
			msg, err := types.DecodeMessage(d.Payload)
			if err != nil {
				failed(fmt.Errorf("decode message: %w", err))
				return
			}
			m, err := parseMsg(func(name string) string {
				v, _ := msg.ApplicationProperties.Get(name)
				switch v := v.(type) {
				case string:
					return v
				case int64:
					return strconv.FormatInt(v, 10)
				case nil:
					return ""
				default:
					return fmt.Sprint(v)
				}
			})
			if err != nil {
				h(Msg{}, err)
				return
			}
			h(m, nil)
		case *types.Detach, *types.End, *types.Close:
			if _, ok := b.(*types.Close); ok && lc.closing.Load() {
				return
			}
			failed(amqp1client.FrameErr(f))
			return
		}
	}
}

func (lc *leanAMQPConsumer) Close() error {
	lc.closing.Store(true)
	return lc.c.Shutdown(lc.done, 5*time.Second)
}
