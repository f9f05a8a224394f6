package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The lean STOMP client: one goroutine per consumer connection, headers
// scanned in place and only the few it needs decoded. go-stomp's client
// spends most of its CPU unescaping every header value (strings.Replacer)
// and passing each frame through three goroutines; on a machine with few
// cores that makes the load generator, not the broker, the bottleneck of
// the queue and fan-out scenarios. Select it with STOMPConfig.Client =
// "lean"; it speaks the same frames (STOMP 1.2, falling back to 1.1/1.0).

// leanConn is a connected STOMP connection.
type leanConn struct {
	nc      net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	version string
	wmu     sync.Mutex
}

func (s *STOMP) leanDial(ctx context.Context) (*leanConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &leanConn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriterSize(nc, 64<<10)}
	host := s.cfg.Host
	if host == "" {
		host, _, _ = net.SplitHostPort(s.cfg.Addr)
	}
	var b strings.Builder
	b.WriteString("CONNECT\naccept-version:1.0,1.1,1.2\nheart-beat:0,0\nhost:")
	b.WriteString(escapeHeader(host))
	if s.cfg.Login != "" || s.cfg.Passcode != "" {
		b.WriteString("\nlogin:" + escapeHeader(s.cfg.Login) + "\npasscode:" + escapeHeader(s.cfg.Passcode))
	}
	b.WriteString("\n\n\x00")
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	if _, err := c.w.WriteString(b.String()); err != nil {
		_ = nc.Close()
		return nil, err
	}
	if err := c.w.Flush(); err != nil {
		_ = nc.Close()
		return nil, err
	}
	var f leanFrame
	if err := c.readFrame(&f, []string{"version", "message"}); err != nil {
		_ = nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	if f.command != "CONNECTED" {
		_ = nc.Close()
		return nil, fmt.Errorf("CONNECT refused: %s %s", f.get("message"), strings.TrimSpace(string(f.body)))
	}
	c.version = f.get("version")
	if c.version == "" {
		c.version = "1.0"
	}
	return c, nil
}

// escapeHeader escapes a header value for STOMP 1.1/1.2 (CONNECT is
// written before the version is known; its values are plain in practice).
func escapeHeader(v string) string {
	if !strings.ContainsAny(v, "\\\r\n:") {
		return v
	}
	return strings.NewReplacer("\\", "\\\\", "\r", "\\r", "\n", "\\n", ":", "\\c").Replace(v)
}

func unescapeHeader(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v)
	}
	return strings.NewReplacer("\\\\", "\\", "\\r", "\r", "\\n", "\n", "\\c", ":").Replace(string(v))
}

// leanFrame is a frame with only the wanted headers decoded; body is valid
// until the next read when keepBody is false.
type leanFrame struct {
	command string
	names   []string
	values  []string
	body    []byte
}

func (f *leanFrame) get(name string) string {
	for i, n := range f.names {
		if n == name {
			return f.values[i]
		}
	}
	return ""
}

var errFrameTooBig = errors.New("frame header section too large")

// readFrame reads the next frame (skipping heart-beats), decoding the
// headers named in want (the first occurrence of each, as STOMP 1.2 says)
// and content-length. The body is read but kept only for ERROR frames and
// CONNECTED.
func (c *leanConn) readFrame(f *leanFrame, want []string) error {
	f.names, f.values, f.body = f.names[:0], f.values[:0], nil
	var line []byte
	var err error
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return errFrameTooBig
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			break
		}
	}
	f.command = commandString(line)
	length := -1
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return errFrameTooBig
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		i := bytes.IndexByte(line, ':')
		if i < 0 {
			continue
		}
		name, value := line[:i], line[i+1:]
		if length < 0 && string(name) == "content-length" {
			n, err := strconv.Atoi(string(value))
			if err != nil || n < 0 {
				return fmt.Errorf("bad content-length %q", value)
			}
			length = n
			continue
		}
		for _, w := range want {
			if string(name) == w && f.get(w) == "" {
				f.names = append(f.names, w)
				f.values = append(f.values, unescapeHeader(value))
				break
			}
		}
	}
	keep := f.command == "ERROR" || f.command == "CONNECTED"
	if length >= 0 {
		if keep {
			f.body = make([]byte, length)
			if _, err := io.ReadFull(c.r, f.body); err != nil {
				return err
			}
		} else if _, err := c.r.Discard(length); err != nil {
			return err
		}
		b, err := c.r.ReadByte()
		if err != nil {
			return err
		}
		if b != 0 {
			return errors.New("frame body not followed by NUL")
		}
		return nil
	}
	for {
		chunk, err := c.r.ReadSlice(0)
		if keep {
			f.body = append(f.body, chunk...)
		}
		if err == nil {
			if keep {
				f.body = f.body[:len(f.body)-1]
			}
			return nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// commandString avoids an allocation for the commands a client receives.
func commandString(b []byte) string {
	switch string(b) {
	case "MESSAGE":
		return "MESSAGE"
	case "RECEIPT":
		return "RECEIPT"
	case "ERROR":
		return "ERROR"
	case "CONNECTED":
		return "CONNECTED"
	}
	return string(b)
}

// writeFrame writes and flushes one frame; values must need no escaping
// except where escaped by the caller.
func (c *leanConn) writeFrame(command string, headers []string, body []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	w := c.w
	w.WriteString(command)
	w.WriteByte('\n')
	for i := 0; i+1 < len(headers); i += 2 {
		w.WriteString(headers[i])
		w.WriteByte(':')
		w.WriteString(headers[i+1])
		w.WriteByte('\n')
	}
	if body != nil {
		w.WriteString("content-length:")
		w.WriteString(strconv.Itoa(len(body)))
		w.WriteByte('\n')
	}
	w.WriteByte('\n')
	w.Write(body)
	w.WriteByte(0)
	return w.Flush()
}

func (c *leanConn) close() {
	_ = c.writeFrame("DISCONNECT", nil, nil)
	_ = c.nc.Close()
}

// leanProducer sends with the lean client; with receipts (or a confirmed
// send) it keeps up to ReceiptWindow outstanding.
type leanProducer struct {
	o      *Options
	c      *leanConn
	dest   string
	tokens chan struct{}
	next   uint64
	err    atomic.Pointer[error]
	failed chan struct{}
	once   sync.Once
	done   chan struct{}
	hdrs   []string
}

func (s *STOMP) newLeanProducer(ctx context.Context, o *Options) (*leanProducer, error) {
	c, err := s.leanDial(ctx)
	if err != nil {
		return nil, err
	}
	p := &leanProducer{o: o, c: c, dest: escapeHeader(stompDestination(o)),
		tokens: make(chan struct{}, max(1, o.ReceiptWindow)), failed: make(chan struct{}), done: make(chan struct{})}
	go p.read()
	return p, nil
}

func (p *leanProducer) fail(err error) {
	p.once.Do(func() {
		p.err.Store(&err)
		close(p.failed)
	})
}

func (p *leanProducer) read() {
	defer close(p.done)
	var f leanFrame
	for {
		if err := p.c.readFrame(&f, []string{"receipt-id", "message"}); err != nil {
			p.fail(fmt.Errorf("connection: %w", err))
			return
		}
		switch f.command {
		case "RECEIPT":
			select {
			case <-p.tokens:
			default:
				p.fail(fmt.Errorf("unexpected RECEIPT %s", f.get("receipt-id")))
				return
			}
		case "ERROR":
			p.fail(fmt.Errorf("ERROR from broker: %s %s", f.get("message"), strings.TrimSpace(string(f.body))))
			return
		}
	}
}

func (p *leanProducer) Send(ctx context.Context, m Msg, body []byte) error {
	receipt := p.o.Receipts || m.Probe || m.Confirm
	if receipt {
		select {
		case p.tokens <- struct{}{}:
		case <-p.failed:
			return *p.err.Load()
		case <-ctx.Done():
			return ctx.Err()
		}
	} else if e := p.err.Load(); e != nil {
		return *e
	}
	h := append(p.hdrs[:0], "destination", p.dest, "content-type", "application/octet-stream",
		hdrRun, m.Run, hdrSeq, strconv.Itoa(m.Producer)+"."+strconv.FormatUint(m.Seq, 10), hdrTS, strconv.FormatInt(m.Sent, 10))
	if m.Probe {
		h = append(h, hdrProbe, "1")
	}
	if p.o.Persistent {
		h = append(h, "persistent", "true") // only when true: RabbitMQ refuses false on durable queues
	}
	if receipt {
		p.next++
		h = append(h, "receipt", "r"+strconv.FormatUint(p.next, 10))
	}
	p.hdrs = h
	if err := p.c.writeFrame("SEND", h, body); err != nil {
		p.fail(err)
		return err
	}
	if m.Probe || m.Confirm {
		return p.Flush(ctx)
	}
	return nil
}

func (p *leanProducer) Flush(ctx context.Context) error {
	n := 0
	defer func() {
		for ; n > 0; n-- {
			<-p.tokens
		}
	}()
	for ; n < cap(p.tokens); n++ {
		select {
		case p.tokens <- struct{}{}:
		case <-p.failed:
			return *p.err.Load()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (p *leanProducer) Close() error {
	p.fail(errors.New("closed"))
	p.c.close()
	<-p.done
	return nil
}

// leanConsumer reads MESSAGE frames on its own goroutine.
type leanConsumer struct {
	c       *leanConn
	closing atomic.Bool
	done    chan struct{}
}

func (s *STOMP) newLeanConsumer(ctx context.Context, o *Options, h Handler) (*leanConsumer, error) {
	c, err := s.leanDial(ctx)
	if err != nil {
		return nil, err
	}
	ack := string(o.AckMode)
	hdrs := []string{"id", "0", "destination", escapeHeader(stompDestination(o)), "ack", ack}
	if o.Prefetch > 0 {
		for _, name := range s.cfg.PrefetchHeaders {
			hdrs = append(hdrs, name, strconv.Itoa(o.Prefetch))
		}
	}
	if err := c.writeFrame("SUBSCRIBE", hdrs, nil); err != nil {
		_ = c.nc.Close()
		return nil, err
	}
	lc := &leanConsumer{c: c, done: make(chan struct{})}
	go lc.run(o, h)
	return lc, nil
}

func (lc *leanConsumer) run(o *Options, h Handler) {
	defer close(lc.done)
	want := []string{hdrRun, hdrSeq, hdrTS, hdrProbe, "message"}
	if o.AckMode != AckAuto {
		want = append(want, "ack", "message-id")
	}
	fail := func(err error) {
		if !lc.closing.Load() {
			h(Msg{}, err)
		}
	}
	var f leanFrame
	n := 0
	for {
		if err := lc.c.readFrame(&f, want); err != nil {
			fail(fmt.Errorf("connection: %w", err))
			return
		}
		switch f.command {
		case "MESSAGE":
		case "ERROR":
			fail(fmt.Errorf("ERROR from broker: %s %s", f.get("message"), strings.TrimSpace(string(f.body))))
			return
		default:
			continue
		}
		if lc.closing.Load() {
			continue
		}
		m, err := parseMsg(f.get)
		if err != nil {
			fail(err)
			return
		}
		if o.AckMode != AckAuto {
			n++
			if o.AckMode == AckClientIndividual || n%o.AckEvery == 0 || m.Probe {
				var hdrs []string
				if lc.c.version == "1.2" {
					hdrs = []string{"id", escapeHeader(f.get("ack"))}
				} else {
					hdrs = []string{"message-id", escapeHeader(f.get("message-id")), "subscription", "0"}
				}
				if err := lc.c.writeFrame("ACK", hdrs, nil); err != nil {
					fail(fmt.Errorf("ack: %w", err))
					return
				}
			}
		}
		h(m, nil)
	}
}

func (lc *leanConsumer) Close() error {
	lc.closing.Store(true)
	lc.c.close()
	select {
	case <-lc.done:
	case <-time.After(5 * time.Second):
		return errors.New("consumer did not stop within 5s")
	}
	return nil
}
