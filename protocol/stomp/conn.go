package stomp

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// outItem is one thing for the writer goroutine to send.
type outItem struct {
	f     *frame.Frame
	sub   *subscription // for MESSAGE frames of ack:auto subscriptions
	tag   uint64
	size  int64         // bytes taken from the connection's output budget
	close bool          // close the connection once written (ERROR)
	setup *writerSetup  // the negotiated version and heart-beat (CONNECTED)
	done  chan struct{} // closed once written and flushed (DISCONNECT receipt)
}

// writerSetup tells the writer what CONNECT negotiated.
type writerSetup struct {
	version frame.Version
	sendHB  time.Duration
}

// conn is one client connection.
type conn struct {
	srv *Server
	nc  net.Conn
	log *slog.Logger

	version   frame.Version
	rd        *frame.Reader
	out       chan outItem
	budget    *netserve.Budget // bounds the MESSAGE bytes in out and the writer
	done      chan struct{}
	closeOnce sync.Once
	failing   atomic.Bool
	sendHB    time.Duration
	recvHB    time.Duration

	eng      *engine.Connection
	prodSess *engine.Session
	prod     *engine.Producer

	mu       sync.Mutex // guards subs, temps
	subs     map[string]*subscription
	subSeq   uint64
	temps    map[message.Destination]message.Destination // client name → engine destination
	tempsRev map[message.Destination]string              // engine destination → client name
	txns     map[string]*stompTxn

	confirms confirmer       // reader goroutine starts it; see confirm.go
	ctx      context.Context // cancelled when the connection ends

	end netserve.EndReason // why it ends, for the engine's "connection closed"
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{
		srv:      s,
		nc:       nc,
		log:      s.opts.Logger.With(slog.String("remote", nc.RemoteAddr().String())),
		version:  frame.V10,
		rd:       frame.NewReader(nc, s.opts.Limits),
		out:      make(chan outItem, 256),
		budget:   netserve.NewBudget(s.opts.OutputBuffer),
		done:     make(chan struct{}),
		subs:     map[string]*subscription{},
		temps:    map[message.Destination]message.Destination{},
		tempsRev: map[message.Destination]string{},
		txns:     map[string]*stompTxn{},
		ctx:      context.Background(), // Run gives it the connection's end
	}
}

// protoError is a refusal that ends the connection with an ERROR frame.
type protoError struct {
	msg    string // one line, for the message header
	detail string // the body
}

func (e *protoError) Error() string { return e.msg }

func refuse(msg string, args ...any) error { return &protoError{msg: fmt.Sprintf(msg, args...)} }

// isDenied reports whether err is an authorization refusal
// (engine.CodeSecurity) anywhere in its chain. A denied frame is answered
// with an ERROR and the connection stays open (see refuseFrame).
func isDenied(err error) bool {
	return errors.Is(err, &engine.Error{Code: engine.CodeSecurity})
}

// stompTxn is a transaction BEGIN opened. denied is the first SEND in it
// that authorization refused: the transaction stays open for the frames
// that name it, but its COMMIT rolls it back, so that a client never has
// half of what it sent as one unit committed.
type stompTxn struct {
	tx     *engine.Txn
	denied error
}

// Run serves the connection until it ends.
func (c *conn) Run() {
	ctx, cancel := netserve.UntilClosed(c.done)
	defer cancel()
	c.ctx = ctx
	netserve.RunLoops(netserve.Loops{
		Read:     c.readLoop,
		Write:    c.writeLoop,
		Failing:  c.failing.Load, // an ERROR frame is on its way
		Shutdown: c.shutdown,
		Ended:    func(err error) { c.log.Debug("stomp connection ended", slog.Any("err", err)) },
	})
}

// Abort closes the connection because the server shuts down.
func (c *conn) Abort() {
	c.end.Set(engine.ClosedShutdown, nil)
	c.abort()
}

// abort closes the network connection from the server side.
func (c *conn) abort() {
	c.closeOnce.Do(func() { close(c.done) })
	_ = c.nc.Close()
}

// shutdown releases the engine side: subscriptions close, transactions roll
// back, unacknowledged messages return to their destinations. The engine
// logs the end with the reason c.end holds (a DISCONNECT has closed the
// engine connection already, as the client's close).
func (c *conn) shutdown() {
	c.closeOnce.Do(func() { close(c.done) })
	if c.eng != nil {
		_ = c.eng.CloseWithReason(c.end.Get())
	}
	_ = c.nc.Close()
}

func (c *conn) readLoop() error {
	connected := false
	for {
		timeout := c.srv.opts.ConnectTimeout
		if connected {
			timeout = 0
			if c.recvHB > 0 {
				timeout = 2*c.recvHB + time.Second
			}
		}
		if timeout > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
		} else {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		ev, err := c.rd.Next()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if !connected {
					c.fail(refuse("no CONNECT frame within %s", c.srv.opts.ConnectTimeout), nil)
				} else {
					hb := refuse("heart-beat timeout: nothing received for %s", timeout)
					c.end.Set(engine.ClosedHeartbeatTimeout, hb)
					c.fail(hb, nil)
				}
				return err
			}
			var fe *frame.Error
			switch {
			case errors.As(err, &fe) && !errors.Is(err, io.ErrUnexpectedEOF):
				c.fail(refuse("%s", fe.Reason), nil)
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				c.end.Set(engine.ClosedNetworkError, errors.New("the client closed the network connection without DISCONNECT"))
			case !errors.Is(err, net.ErrClosed):
				c.end.Set(engine.ClosedNetworkError, err)
			}
			return err
		}
		if ev.Frame == nil {
			continue
		}
		f := ev.Frame
		if !connected {
			if f.Command != frame.CmdConnect && f.Command != frame.CmdStomp {
				c.fail(refuse("expected CONNECT or STOMP, got %s", f.Command), f)
				return nil
			}
			if err := c.connect(f); err != nil {
				c.fail(err, f)
				return nil
			}
			connected = true
			continue
		}
		if f.Command == frame.CmdSend && !c.holdProducer() {
			return nil
		}
		stop, err := c.handle(f)
		if err != nil && isDenied(err) {
			c.refuseFrame(err, f)
			continue
		}
		if err != nil {
			c.fail(err, f)
			return nil
		}
		if stop {
			return nil
		}
	}
}

// fail sends an ERROR frame for err (answering f's receipt if it asked for
// one) and closes the connection once it is written.
func (c *conn) fail(err error, f *frame.Frame) {
	c.end.Set(engine.ClosedError, err)
	ef := errorFrame(err, f)
	c.failing.Store(true)
	msg, _ := ef.Get(frame.HeaderMessage)
	c.log.Info("stomp error sent", slog.String("message", msg))
	select {
	case c.out <- outItem{f: ef, close: true}:
	case <-c.done:
	}
}

// refuseFrame answers a frame that authorization refused with an ERROR
// (with f's receipt-id, if it asked for a receipt) and leaves the
// connection open: the frame had no effect, and the connection's other
// subscriptions and transactions carry on. While earlier frames wait for
// their confirmations, the ERROR waits its turn behind their receipts.
func (c *conn) refuseFrame(err error, f *frame.Frame) {
	c.log.Debug("stomp frame refused", slog.String("command", string(f.Command)), slog.Any("err", err))
	if c.confirms.Pending() > 0 {
		c.later(pendingConfirm{f: f, refusal: err})
		return
	}
	c.send(outItem{f: errorFrame(err, f)})
}

// errorFrame is the ERROR frame for err, answering f's receipt if it asked
// for one: the message header is err's first line, the body the detail
// with the JMS exception name.
func errorFrame(err error, f *frame.Frame) *frame.Frame {
	msg, detail := err.Error(), ""
	var pe *protoError
	if errors.As(err, &pe) {
		msg, detail = pe.msg, pe.detail
	} else if code := engine.CodeOf(err); code != engine.CodeJMS {
		detail = code.String() + ": " + err.Error()
	}
	if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
		msg = msg[:i]
	}
	ef := &frame.Frame{Command: frame.CmdError}
	ef.Add(frame.HeaderMessage, msg)
	if f != nil {
		if r, ok := f.Get(frame.HeaderReceipt); ok {
			ef.Add(frame.HeaderReceiptID, r)
		}
	}
	ef.Add(frame.HeaderContentType, "text/plain")
	if detail == "" {
		detail = msg
	}
	ef.Body = []byte(detail + "\n")
	return ef
}

// send queues a frame for the writer, waiting while the writer is behind
// (TCP back-pressure reaches the engine this way). It reports false when the
// connection is closing.
func (c *conn) send(it outItem) bool {
	select {
	case c.out <- it:
		return true
	case <-c.done:
		return false
	}
}

// writeLoop writes queued frames through the shared coalescing writer,
// with heart-beats at the interval CONNECT negotiated. The MESSAGE frames
// of ack:auto subscriptions are acknowledged once they reached the socket;
// a DISCONNECT receipt's waiter is released after its batch either way.
func (c *conn) writeLoop() {
	w := frame.NewWriter(c.nc, frame.EncodeOptions{})
	w.SetVersion(frame.V10)
	settle := netserve.Settle{Budget: c.budget} // what the batch leaves to do once written
	sw := netserve.Writer[outItem]{
		Conn: c.nc,
		Out:  c.out,
		Done: c.done,
		Put: func(it outItem) netserve.Put {
			var p netserve.Put
			if it.setup != nil {
				w.SetVersion(it.setup.version)
				p.KeepAlive = it.setup.sendHB
			}
			if it.f != nil {
				if err := w.WriteFrame(it.f); err != nil {
					c.log.Warn("stomp frame not encodable", slog.Any("err", err))
				}
			}
			if it.sub != nil {
				settle.AckOnWrite(it.sub.sess, it.tag)
			}
			settle.Add(it.size, it.done)
			p.Close = it.close
			return p
		},
		Flush:     w.Flush,
		KeepAlive: w.WriteHeartBeat,
		Flushed:   settle.Flushed,
		Failed: func(err error) {
			c.end.Set(engine.ClosedNetworkError, err)
			c.abort()
		},
		Closing: c.abort,
	}
	sw.Run()
}

// connect handles CONNECT/STOMP: version, heart-beats, client ID.
func (c *conn) connect(f *frame.Frame) error {
	accept, present := f.Get(frame.HeaderAcceptVersion)
	v, err := frame.NegotiateVersion(accept, present, frame.AllVersions())
	if err != nil {
		ef := &protoError{msg: "supported protocol versions are " + frame.FormatVersions(frame.AllVersions()),
			detail: "no common STOMP version: the client accepts " + accept}
		return ef
	}
	c.version = v
	c.rd.SetVersion(v)
	if v >= frame.V11 {
		hbv, hbPresent := f.Get(frame.HeaderHeartBeat)
		send, recv, err := frame.NegotiateHeartBeat(hbv, hbPresent, c.srv.opts.HeartBeat)
		if err != nil {
			return refuse("bad heart-beat header %q", hbv)
		}
		c.sendHB, c.recvHB = send, recv
	}
	who, err := c.authenticate(f)
	if err != nil {
		return err
	}
	opts := c.srv.opts.Connection
	opts.RemoteAddr = c.nc.RemoteAddr().String()
	opts.Protocol = "stomp/" + v.String()
	opts.User, opts.Permissions = who.User, who.Permissions
	opts.MaxTransactions = c.srv.opts.MaxTransactions
	if id, ok := f.Get(hClientID); ok && id != "" {
		opts.ClientID = id
	}
	eng, err := c.srv.eng.Connect(opts)
	if err != nil {
		return err
	}
	c.eng = eng
	// A problem the engine reports on the connection as a whole (an
	// administrator closed it, say) ends the STOMP connection.
	eng.SetExceptionListener(func(err error) {
		c.log.Info("engine ended the connection", slog.Any("err", err))
		c.fail(refuse("%v", err), nil)
	})
	if c.prodSess, err = eng.CreateSession(engine.AutoAcknowledge); err != nil {
		return err
	}
	if c.prod, err = c.prodSess.CreateProducer(message.Destination{}); err != nil {
		return err
	}
	if err := eng.Start(); err != nil {
		return err
	}
	cf := &frame.Frame{Command: frame.CmdConnected}
	cf.Add(frame.HeaderVersion, v.String())
	cf.Add("session", strconv.FormatUint(eng.ID(), 10))
	cf.Add("server", c.srv.opts.ServerName)
	if v >= frame.V11 {
		cf.Add(frame.HeaderHeartBeat, frame.HeartBeat{Send: c.sendHB, Receive: c.recvHB}.String())
	}
	c.log.Debug("stomp connected", slog.String("version", v.String()), slog.String("user", who.User))
	// The client expects data at least every sendHB: beat a little sooner,
	// so that a beat delayed by scheduling on a loaded machine is not late.
	c.send(outItem{f: cf, setup: &writerSetup{version: v, sendHB: c.sendHB * 9 / 10}})
	return nil
}

// authenticate asks the server's realm who the client of CONNECT f is: by
// its login and passcode; without a login, by the TLS client certificate
// the handshake verified; else as an anonymous client. With security off
// it asks nothing and every client is let in. A failure is one generic
// ERROR text, whatever went wrong (the realm logs the reason, and has
// already waited its failure delay). The passcode is never logged.
func (c *conn) authenticate(f *frame.Frame) (security.Identity, error) {
	realm := c.srv.opts.Realm
	if !realm.Enabled() {
		return security.Identity{}, nil
	}
	at := security.Attempt{Protocol: "stomp", Remote: c.nc.RemoteAddr().String()}
	at.ClientID, _ = f.Get(hClientID)
	var who security.Identity
	var err error
	login, _ := f.Get(hLogin)
	var cert *x509.Certificate
	if login == "" {
		// The reader has read CONNECT, so a TLS handshake is complete.
		cert, _ = netserve.PeerCertificate(c.ctx, c.nc)
	}
	switch {
	case login != "":
		at.Mechanism = "login"
		passcode, _ := f.Get(hPasscode)
		who, err = realm.Login(c.ctx, at, login, passcode)
	case cert != nil:
		at.Mechanism = "certificate"
		who, err = realm.Certificate(c.ctx, at, cert)
	default:
		at.Mechanism = "anonymous"
		who, err = realm.Anonymous(c.ctx, at)
	}
	if err != nil {
		return security.Identity{}, &protoError{msg: security.ErrAuthentication.Error()}
	}
	return who, nil
}

// receipt answers a frame's receipt header, if any. A SEND's receipt is
// withheld while the broker's flow gate holds producers: a client that
// waits for its receipts before sending more is held that way.
func (c *conn) receipt(f *frame.Frame) {
	if r, ok := f.Get(frame.HeaderReceipt); ok {
		if f.Command == frame.CmdSend && !c.srv.eng.Flow().WaitChan(c.done) {
			return
		}
		rf := &frame.Frame{Command: frame.CmdReceipt}
		rf.Add(frame.HeaderReceiptID, r)
		c.send(outItem{f: rf})
	}
}

// flushWrites waits until everything queued for the writer before it has
// been written and flushed, and ack:auto deliveries among it acknowledged
// (or the connection ends, or a few seconds pass).
func (c *conn) flushWrites() {
	done := make(chan struct{})
	if c.send(outItem{done: done}) {
		netserve.WaitBounded(done, c.done, 5*time.Second)
	}
}

// handle processes one frame after CONNECT. stop ends the connection
// normally (DISCONNECT).
func (c *conn) handle(f *frame.Frame) (stop bool, err error) {
	ctx := context.Background()
	switch f.Command {
	case frame.CmdSend:
		if err = c.handleSend(ctx, f); errors.Is(err, errPending) {
			return false, nil // the confirmer answers it
		}
	case frame.CmdSubscribe:
		err = c.handleSubscribe(f)
	case frame.CmdUnsubscribe:
		err = c.handleUnsubscribe(ctx, f)
	case frame.CmdAck, frame.CmdNack:
		if err = c.handleAck(ctx, f); errors.Is(err, errPending) {
			return false, nil // the confirmer answers it
		}
	case frame.CmdBegin, frame.CmdCommit, frame.CmdAbort:
		err = c.handleTxn(ctx, f)
	case frame.CmdDisconnect:
		// Release the engine side (the client ID above all) before the
		// receipt: once it has the receipt, the client may connect again
		// with the same client ID.
		// Stop deliveries and let the writer flush the MESSAGE frames
		// already queued, acknowledging those of ack:auto subscriptions,
		// so that Close gives back only what the client never got.
		c.waitConfirms()
		_ = c.eng.Stop()
		c.flushWrites()
		_ = c.eng.Close()
		if r, ok := f.Get(frame.HeaderReceipt); ok {
			rf := &frame.Frame{Command: frame.CmdReceipt}
			rf.Add(frame.HeaderReceiptID, r)
			done := make(chan struct{})
			if c.send(outItem{f: rf, done: done}) {
				// The writer may already be gone (a failed write closes
				// c.done): then the receipt is never written.
				select {
				case <-done:
				case <-c.done:
				case <-time.After(10 * time.Second):
				}
			}
		}
		return true, nil
	case frame.CmdConnect, frame.CmdStomp:
		err = refuse("already connected")
	default:
		err = refuse("%s is not a frame a client sends", f.Command)
	}
	if err != nil {
		return false, err
	}
	if c.confirms.Pending() > 0 {
		// Receipts keep the order of their frames.
		if _, ok := f.Get(frame.HeaderReceipt); ok {
			c.later(pendingConfirm{f: f})
		}
		return false, nil
	}
	c.receipt(f)
	return false, nil
}

func (c *conn) handleSend(ctx context.Context, f *frame.Frame) error {
	ds, ok := f.Get(hDestination)
	if !ok {
		return refuse("SEND without a destination header")
	}
	dest, err := c.parseDestination(ds)
	if err != nil {
		return refuse("%v", err)
	}
	m, o, err := c.toMessage(f)
	if err != nil {
		return refuse("%v", err)
	}
	if txID, ok := f.Get(hTransaction); ok {
		st := c.txns[txID]
		if st == nil {
			return refuse("SEND names transaction %q, which is not open", txID)
		}
		err := c.prod.SendIn(ctx, st.tx, dest, m, o)
		if err != nil && isDenied(err) && st.denied == nil {
			st.denied = err
		}
		return err
	}
	conf, err := c.prod.SendToAsync(ctx, dest, m, o)
	if err != nil {
		return err
	}
	if !conf.Ready() && (c.confirms.Pending() > 0 || c.rd.Buffered() > 0) {
		// Written in the background: the confirmer answers the receipt,
		// or fails the connection if the write fails (confirm.go).
		c.later(pendingConfirm{f: f, conf: conf})
		return errPending
	}
	// Nothing queued before it and nothing more to read: the client most
	// likely waits for this receipt, and waiting here spares it a hand-off.
	return conf.Wait(c.ctx)
}

func (c *conn) handleTxn(ctx context.Context, f *frame.Frame) error {
	id, ok := f.Get(hTransaction)
	if !ok || id == "" {
		return refuse("%s without a transaction header", f.Command)
	}
	switch f.Command {
	case frame.CmdBegin:
		if c.txns[id] != nil {
			return refuse("transaction %q is already open", id)
		}
		tx, err := c.eng.BeginTxn() // refused past MaxTransactions
		if err != nil {
			return err
		}
		c.txns[id] = &stompTxn{tx: tx}
	case frame.CmdCommit:
		st := c.txns[id]
		if st == nil {
			return refuse("COMMIT of transaction %q, which is not open", id)
		}
		delete(c.txns, id)
		if st.denied != nil {
			st.tx.Rollback(ctx)
			return &engine.Error{Code: engine.CodeTransactionRolledBack,
				Msg: fmt.Sprintf("transaction %s rolled back: a SEND in it was refused", id), Err: st.denied}
		}
		return st.tx.Commit(ctx)
	case frame.CmdAbort:
		st := c.txns[id]
		if st == nil {
			return refuse("ABORT of transaction %q, which is not open", id)
		}
		delete(c.txns, id)
		st.tx.Rollback(ctx)
	}
	return nil
}

// holdProducer is called by the reader before it handles a SEND: while the
// broker's flow gate holds producers (memory or disk), it waits, reading
// nothing more from the socket, so that TCP holds the client; only
// connections that publish are held, and only once they send. It reports
// false when the connection ended meanwhile.
func (c *conn) holdProducer() bool {
	fl := c.srv.eng.Flow()
	blocked, why := fl.Blocked()
	if !blocked {
		return true
	}
	c.log.Debug("stomp producer held by flow control", slog.String("reason", why.String()))
	return fl.WaitChan(c.done)
}
