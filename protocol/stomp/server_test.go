package stomp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	gostomp "github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/stomp"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// startServer runs an in-memory engine and a STOMP server on 127.0.0.1:0.
func startServer(t *testing.T, cfg engine.Config, opts stomp.Options) (string, *engine.Broker) {
	t.Helper()
	cfg.AutoCreate = true
	eng, err := engine.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, eng, func() { _ = eng.Close() }, opts)
	return addr, eng
}

// serve runs a STOMP server with opts on eng at 127.0.0.1:0 until the test
// ends, then shuts it down and calls closeEng.
func serve(t testing.TB, eng *engine.Broker, closeEng func(), opts stomp.Options) (string, *stomp.Server) {
	t.Helper()
	srv := stomp.NewServer(eng, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		closeEng()
	})
	return ln.Addr().String(), srv
}

func dial(t *testing.T, addr string, opts ...func(*gostomp.Conn) error) *gostomp.Conn {
	t.Helper()
	c, err := gostomp.Dial("tcp", addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect() })
	return c
}

func next(t *testing.T, sub *gostomp.Subscription) *gostomp.Message {
	t.Helper()
	select {
	case m, ok := <-sub.C:
		if !ok {
			t.Fatal("subscription closed")
		}
		if m.Err != nil {
			t.Fatalf("subscription error: %v", m.Err)
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5s")
	}
	return nil
}

func none(t *testing.T, sub *gostomp.Subscription, wait time.Duration) {
	t.Helper()
	select {
	case m := <-sub.C:
		if m != nil && m.Err == nil {
			t.Fatalf("unexpected message %q", m.Body)
		}
	case <-time.After(wait):
	}
}

func TestSendReceiveMapsHeaders(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	c := dial(t, addr)
	sub, err := c.Subscribe("/queue/orders", gostomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Send("/queue/orders", "text/plain", []byte("hello"),
		gostomp.SendOpt.Receipt,
		gostomp.SendOpt.Header("persistent", "true"),
		gostomp.SendOpt.Header("priority", "7"),
		gostomp.SendOpt.Header("correlation-id", "c-1"),
		gostomp.SendOpt.Header("reply-to", "/queue/replies"),
		gostomp.SendOpt.Header("type", "order"),
		gostomp.SendOpt.Header("region", "emea"))
	if err != nil {
		t.Fatal(err)
	}
	m := next(t, sub)
	want := map[string]string{
		"destination": "/queue/orders", "priority": "7", "correlation-id": "c-1", "reply-to": "/queue/replies",
		"type": "order", "region": "emea", "persistent": "true", "JMSXDeliveryCount": "1", "x-delivery-count": "1",
		"content-type": "text/plain",
	}
	for k, v := range want {
		if got := m.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if string(m.Body) != "hello" || !strings.HasPrefix(m.Header.Get("message-id"), "ID:") || m.Header.Get("redelivered") != "" {
		t.Fatalf("message %q id %q redelivered %q", m.Body, m.Header.Get("message-id"), m.Header.Get("redelivered"))
	}
}

func TestTopicSelectorAndFanOut(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	c := dial(t, addr)
	all, _ := c.Subscribe("/topic/prices", gostomp.AckAuto)
	red, _ := c.Subscribe("/topic/prices", gostomp.AckAuto, gostomp.SubscribeOpt.Header("selector", "color = 'red'"))
	for _, color := range []string{"blue", "red"} {
		if err := c.Send("/topic/prices", "text/plain", []byte(color), gostomp.SendOpt.Receipt, gostomp.SendOpt.Header("color", color)); err != nil {
			t.Fatal(err)
		}
	}
	if string(next(t, all).Body) != "blue" || string(next(t, all).Body) != "red" {
		t.Fatal("fan-out")
	}
	if string(next(t, red).Body) != "red" {
		t.Fatal("selector")
	}
	none(t, red, 50*time.Millisecond)
}

func TestClientAckRedeliveredAfterDisconnect(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	c1, err := gostomp.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := c1.Subscribe("/queue/work", gostomp.AckClientIndividual)
	_ = c1.Send("/queue/work", "text/plain", []byte("job"), gostomp.SendOpt.Receipt)
	m := next(t, sub)
	if m.Header.Get("ack") == "" {
		t.Fatal("STOMP 1.2 MESSAGE without ack header")
	}
	_ = c1.Disconnect() // without ACK
	c2 := dial(t, addr)
	sub2, _ := c2.Subscribe("/queue/work", gostomp.AckClient)
	m2 := next(t, sub2)
	if string(m2.Body) != "job" || m2.Header.Get("redelivered") != "true" || m2.Header.Get("JMSXDeliveryCount") != "2" {
		t.Fatalf("redelivery: %q redelivered=%q count=%q", m2.Body, m2.Header.Get("redelivered"), m2.Header.Get("JMSXDeliveryCount"))
	}
	if err := c2.Ack(m2); err != nil {
		t.Fatal(err)
	}
}

func TestNackCountsAndErrorDestination(t *testing.T) {
	pol := engine.DefaultPolicy()
	pol.RedeliveryLimit = 1
	pol.ErrorDestination = message.Destination{Kind: message.Queue, Name: "dlq"}
	policy := func(d message.Destination) engine.Policy {
		if d.Name == "work" {
			return pol
		}
		return engine.DefaultPolicy()
	}
	addr, _ := startServer(t, engine.Config{Policy: policy}, stomp.Options{})
	c := dial(t, addr)
	sub, _ := c.Subscribe("/queue/work", gostomp.AckClientIndividual)
	dlq, _ := c.Subscribe("/queue/dlq", gostomp.AckAuto)
	_ = c.Send("/queue/work", "text/plain", []byte("poison"), gostomp.SendOpt.Receipt, gostomp.SendOpt.Header("k", "v"))
	m := next(t, sub)
	if err := c.Nack(m); err != nil {
		t.Fatal(err)
	}
	m = next(t, sub)
	if m.Header.Get("JMSXDeliveryCount") != "2" || m.Header.Get("redelivered") != "true" {
		t.Fatalf("after NACK: count %q", m.Header.Get("JMSXDeliveryCount"))
	}
	if err := c.Nack(m); err != nil {
		t.Fatal(err)
	}
	d := next(t, dlq)
	if string(d.Body) != "poison" || d.Header.Get("k") != "v" || d.Header.Get(engine.PropOriginalDestination) != "/queue/work" {
		t.Fatalf("error destination got %q headers k=%q orig=%q", d.Body, d.Header.Get("k"), d.Header.Get(engine.PropOriginalDestination))
	}
	none(t, sub, 50*time.Millisecond)
}

func TestTransactionCommitAndAbort(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	c := dial(t, addr)
	sub, _ := c.Subscribe("/queue/tx", gostomp.AckAuto)
	tx := c.Begin()
	_ = tx.Send("/queue/tx", "text/plain", []byte("aborted"))
	if err := tx.Abort(); err != nil {
		t.Fatal(err)
	}
	tx = c.Begin()
	_ = tx.Send("/queue/tx", "text/plain", []byte("committed"))
	none(t, sub, 50*time.Millisecond)
	if err := tx.CommitWithReceipt(); err != nil {
		t.Fatal(err)
	}
	if string(next(t, sub).Body) != "committed" {
		t.Fatal("commit")
	}
	none(t, sub, 50*time.Millisecond)
}

func TestDurableSubscriptionWithClientID(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	hdr := func(c *gostomp.Conn) error { return nil }
	_ = hdr
	c1, err := gostomp.Dial("tcp", addr, gostomp.ConnOpt.Header("client-id", "app-1"))
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := c1.Subscribe("/topic/news", gostomp.AckAuto, gostomp.SubscribeOpt.Header("activemq.subscriptionName", "news-sub"))
	_ = c1.Send("/topic/news", "text/plain", []byte("first"), gostomp.SendOpt.Receipt)
	if string(next(t, sub).Body) != "first" {
		t.Fatal("first")
	}
	_ = c1.Disconnect()
	p := dial(t, addr)
	_ = p.Send("/topic/news", "text/plain", []byte("while away"), gostomp.SendOpt.Receipt)
	c2 := dial(t, addr, gostomp.ConnOpt.Header("client-id", "app-1"))
	sub2, _ := c2.Subscribe("/topic/news", gostomp.AckAuto, gostomp.SubscribeOpt.Header("activemq.subscriptionName", "news-sub"))
	if string(next(t, sub2).Body) != "while away" {
		t.Fatal("durable subscription lost the message sent while away")
	}
}

func TestBrowserDoesNotConsume(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	c := dial(t, addr)
	for i := 0; i < 3; i++ {
		_ = c.Send("/queue/b", "text/plain", []byte(fmt.Sprint(i)), gostomp.SendOpt.Receipt)
	}
	br, _ := c.Subscribe("/queue/b", gostomp.AckAuto, gostomp.SubscribeOpt.Header("browser", "true"))
	var got []string
	for i := 0; i < 4; i++ {
		m := next(t, br)
		if m.Header.Get("browser") == "end" {
			break
		}
		got = append(got, string(m.Body))
	}
	if fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("browsed %v", got)
	}
	sub, _ := c.Subscribe("/queue/b", gostomp.AckAuto)
	for i := 0; i < 3; i++ {
		next(t, sub)
	}
}

func TestTemporaryQueueReplyTo(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	requester := dial(t, addr)
	replies, _ := requester.Subscribe("/temp-queue/replies", gostomp.AckAuto)
	server := dial(t, addr)
	reqs, _ := server.Subscribe("/queue/requests", gostomp.AckAuto)
	_ = requester.Send("/queue/requests", "text/plain", []byte("ping"), gostomp.SendOpt.Receipt, gostomp.SendOpt.Header("reply-to", "/temp-queue/replies"))
	req := next(t, reqs)
	replyTo := req.Header.Get("reply-to")
	if !strings.HasPrefix(replyTo, "/temp-queue/") {
		t.Fatalf("reply-to %q", replyTo)
	}
	if err := server.Send(replyTo, "text/plain", []byte("pong"), gostomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	if string(next(t, replies).Body) != "pong" {
		t.Fatal("reply")
	}
}

// raw is a STOMP connection spoken byte by byte.
type raw struct {
	t  *testing.T
	nc net.Conn
	rd *frame.Reader
}

func dialRaw(t *testing.T, addr string) *raw {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &raw{t: t, nc: nc, rd: frame.NewReader(nc, frame.Limits{})}
}

func (r *raw) write(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.nc, s); err != nil {
		r.t.Fatal(err)
	}
}

func (r *raw) read() *frame.Frame {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := r.rd.ReadFrame()
	if err != nil {
		r.t.Fatalf("read frame: %v", err)
	}
	return f
}

// closed asserts the server closes the connection.
func (r *raw) closed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bufio.NewReader(r.nc).ReadByte(); err == nil {
		r.t.Fatal("connection still open")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatal("connection not closed within 5s")
	}
}

func TestMalformedFramesGetErrorAndOthersCarryOn(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{Limits: frame.Limits{MaxLineLength: 1024}})
	good := dial(t, addr)
	sub, _ := good.Subscribe("/queue/safe", gostomp.AckAuto)
	_ = good.Send("/queue/safe", "text/plain", []byte("kept"), gostomp.SendOpt.Receipt, gostomp.SendOpt.Header("persistent", "true"))
	cases := []struct {
		name, input, want string
	}{
		{"unknown command", "CONNECT\naccept-version:1.2\n\n\x00FROB\n\n\x00", "unknown"},
		{"frame before connect", "SEND\ndestination:/queue/x\n\nhi\x00", "expected CONNECT"},
		{"no common version", "CONNECT\naccept-version:2.0\n\n\x00", "supported protocol versions"},
		{"bad escape", "CONNECT\naccept-version:1.2\n\n\x00SEND\ndestination:/queue/\\x\n\n\x00", "escape"},
		{"overlong header", "CONNECT\naccept-version:1.2\n\n\x00SEND\ndestination:/queue/" + strings.Repeat("a", 2000) + "\n\n\x00", "too long"},
		{"bad content-length", "CONNECT\naccept-version:1.2\n\n\x00SEND\ndestination:/queue/x\ncontent-length:abc\n\n\x00", "content-length"},
		{"bad destination", "CONNECT\naccept-version:1.2\n\n\x00SEND\ndestination:/nowhere/x\nreceipt:r1\n\n\x00", "destination"},
		{"bare destination", "CONNECT\naccept-version:1.2\n\n\x00SEND\ndestination:orders\n\n\x00", `destination "orders" has no known prefix`},
		{"empty destination name", "CONNECT\naccept-version:1.2\n\n\x00SUBSCRIBE\nid:1\ndestination:temp-queue://\n\n\x00", `"temp-queue://" has an empty name`},
		{"bad priority", "CONNECT\naccept-version:1.2\n\n\x00SEND\ndestination:/queue/x\npriority:12\n\n\x00", "priority"},
		{"bad selector", "CONNECT\naccept-version:1.2\n\n\x00SUBSCRIBE\nid:1\ndestination:/queue/x\nselector:a = \n\n\x00", "selector"},
		{"ack of unknown", "CONNECT\naccept-version:1.2\n\n\x00ACK\nid:9.9\n\n\x00", "no open subscription"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, addr)
			r.write(tc.input)
			f := r.read()
			if f.Command == frame.CmdConnected {
				f = r.read()
			}
			if f.Command != frame.CmdError {
				t.Fatalf("got %s, want ERROR", f.Command)
			}
			msg, _ := f.Get("message")
			if !strings.Contains(strings.ToLower(msg+string(f.Body)), strings.ToLower(tc.want)) {
				t.Fatalf("ERROR message %q body %q does not mention %q", msg, f.Body, tc.want)
			}
			if strings.Contains(tc.input, "receipt:r1") {
				if id, _ := f.Get("receipt-id"); id != "r1" {
					t.Fatalf("receipt-id %q", id)
				}
			}
			r.closed()
		})
	}
	if string(next(t, sub).Body) != "kept" {
		t.Fatal("the well-behaved client lost its message")
	}
}

func TestVersionsAndReceipts(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	for _, v := range []string{"1.0", "1.1", "1.2"} {
		r := dialRaw(t, addr)
		r.write("CONNECT\naccept-version:" + v + "\nhost:x\n\n\x00")
		f := r.read()
		if got, _ := f.Get("version"); f.Command != frame.CmdConnected || got != v {
			t.Fatalf("accept-version %s: %s version %q", v, f.Command, got)
		}
		if s, _ := f.Get("server"); !strings.HasPrefix(s, "Sluice") {
			t.Fatalf("server header %q", s)
		}
		r.write("SEND\ndestination:/queue/v\nreceipt:42\n\nbody\x00DISCONNECT\nreceipt:77\n\n\x00")
		if id, _ := r.read().Get("receipt-id"); id != "42" {
			t.Fatalf("receipt %q", id)
		}
		if id, _ := r.read().Get("receipt-id"); id != "77" {
			t.Fatalf("disconnect receipt %q", id)
		}
		r.closed()
	}
	// No accept-version means STOMP 1.0.
	r := dialRaw(t, addr)
	r.write("CONNECT\n\n\x00")
	if v, _ := r.read().Get("version"); v != "1.0" {
		t.Fatalf("default version %q", v)
	}
}

func TestSilentClientIsDropped(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{HeartBeat: frame.HeartBeat{Send: 100 * time.Millisecond, Receive: 100 * time.Millisecond}})
	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\nheart-beat:100,100\n\n\x00")
	f := r.read()
	if hb, _ := f.Get("heart-beat"); hb != "100,100" {
		t.Fatalf("heart-beat %q", hb)
	}
	// The server sends heart-beats and, since this client sends none,
	// drops it after the grace period.
	_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	sawBeat := false
	for i := 0; i < 1000; i++ {
		n, err := r.nc.Read(buf)
		if n > 0 && strings.Contains(string(buf[:n]), "\n") {
			sawBeat = true
		}
		if err != nil {
			break
		}
	}
	if !sawBeat {
		t.Fatal("server sent no heart-beat")
	}
}

func TestSubscriptionLimits(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{MaxSubscriptions: 2, MaxPrefetch: 10})
	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\n\n\x00")
	r.read()
	r.write("SUBSCRIBE\nid:1\ndestination:/queue/a\nactivemq.prefetchSize:11\n\n\x00")
	f := r.read()
	if msg, _ := f.Get("message"); f.Command != frame.CmdError || !strings.Contains(msg, "limit") {
		t.Fatalf("prefetch over limit: %s %q", f.Command, msg)
	}
	r = dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\n\n\x00")
	r.read()
	r.write("SUBSCRIBE\nid:1\ndestination:/queue/a\n\n\x00SUBSCRIBE\nid:2\ndestination:/queue/b\n\n\x00SUBSCRIBE\nid:3\ndestination:/queue/c\n\n\x00")
	f = r.read()
	if msg, _ := f.Get("message"); f.Command != frame.CmdError || !strings.Contains(msg, "too many subscriptions") {
		t.Fatalf("subscription limit: %s %q", f.Command, msg)
	}
}

func TestAdministratorCloseEndsTheConnection(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, stomp.Options{})
	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\nclient-id:doomed\n\n\x00")
	if f := r.read(); f.Command != frame.CmdConnected {
		t.Fatalf("got %s", f.Command)
	}
	var id uint64
	for _, ci := range eng.Connections() {
		if ci.ClientID == "doomed" {
			id = ci.ID
		}
	}
	if err := eng.CloseConnection(id); err != nil {
		t.Fatal(err)
	}
	f := r.read()
	if msg, _ := f.Get("message"); f.Command != frame.CmdError || !strings.Contains(msg, "administrator") {
		t.Fatalf("got %s %q", f.Command, msg)
	}
	r.closed()
}

func TestUnsubscribeDurableByNameAndReconnectWithTheSameClientID(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, stomp.Options{})
	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\nclient-id:app-1\n\n\x00" +
		"SUBSCRIBE\nid:s1\ndestination:/topic/news\nactivemq.subscriptionName:news-sub\nreceipt:r1\n\n\x00" +
		"UNSUBSCRIBE\nid:s1\nreceipt:r2\n\n\x00" +
		"UNSUBSCRIBE\nid:x\nactivemq.subscriptionName:news-sub\nreceipt:r3\n\n\x00" +
		"DISCONNECT\nreceipt:r4\n\n\x00")
	for _, want := range []string{"", "r1", "r2", "r3", "r4"} {
		f := r.read()
		if want == "" {
			continue // CONNECTED
		}
		if id, _ := f.Get("receipt-id"); f.Command != frame.CmdReceipt || id != want {
			msg, _ := f.Get("message")
			t.Fatalf("got %s %q (%s), want RECEIPT %s", f.Command, id, msg, want)
		}
	}
	if subs := eng.Subscriptions(); len(subs) != 0 {
		t.Fatalf("durable subscription still there: %+v", subs)
	}
	// The receipt came after the client ID was released: reconnecting
	// with it at once succeeds, every time.
	for i := 0; i < 20; i++ {
		r := dialRaw(t, addr)
		r.write("CONNECT\naccept-version:1.2\nclient-id:app-1\n\n\x00DISCONNECT\nreceipt:bye\n\n\x00")
		if f := r.read(); f.Command != frame.CmdConnected {
			msg, _ := f.Get("message")
			t.Fatalf("reconnect %d: %s %q", i, f.Command, msg)
		}
		if f := r.read(); f.Command != frame.CmdReceipt {
			t.Fatalf("reconnect %d: %s", i, f.Command)
		}
	}
}

func TestSubscribeReceiptComesBeforeItsMessages(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	for i := 0; i < 20; i++ {
		r := dialRaw(t, addr)
		dest := fmt.Sprintf("/queue/rcpt-%d", i)
		r.write("CONNECT\naccept-version:1.2\n\n\x00SEND\ndestination:" + dest + "\nreceipt:s\n\nwaiting\x00")
		r.read() // CONNECTED
		r.read() // RECEIPT s
		r.write("SUBSCRIBE\nid:1\ndestination:" + dest + "\nreceipt:sub\n\n\x00")
		if f := r.read(); f.Command != frame.CmdReceipt {
			t.Fatalf("round %d: got %s before the SUBSCRIBE receipt", i, f.Command)
		}
		if f := r.read(); f.Command != frame.CmdMessage {
			t.Fatalf("round %d: got %s, want the MESSAGE", i, f.Command)
		}
	}
}

// sluice-redelivery-delay on a NACK changes the subscription session's
// redelivery delay from then on (WebLogic's setRedeliveryDelay, at any time).
func TestRedeliveryDelayHeaderOnNack(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\n\n\x00SUBSCRIBE\nid:1\ndestination:/queue/d\nack:client-individual\n\n\x00SEND\ndestination:/queue/d\n\nm\x00")
	r.read() // CONNECTED
	m := r.read()
	ack, _ := m.Get("ack")
	failed := time.Now()
	r.write("NACK\nid:" + ack + "\nsluice-redelivery-delay:400\n\n\x00")
	m = r.read()
	if time.Since(failed) < 350*time.Millisecond || m.Command != frame.CmdMessage {
		t.Fatalf("%s after %s", m.Command, time.Since(failed))
	}
	if n, _ := m.Get("JMSXDeliveryCount"); n != "2" {
		t.Fatalf("delivery count %s", n)
	}
}

// An ack:auto subscription that unsubscribes the moment its MESSAGE
// arrives, or a client that disconnects then: the message reached the
// client, so it is consumed, not put back for the next subscriber.
func TestAutoAckUnsubscribeOrDisconnectRace(t *testing.T) {
	const rounds = 100
	for _, how := range []string{"unsubscribe", "disconnect"} {
		t.Run(how, func(t *testing.T) {
			addr, eng := startServer(t, engine.Config{}, stomp.Options{})
			name := "auto-race-" + how
			p := dial(t, addr)
			var r *raw
			for round := range rounds {
				body := fmt.Sprintf("m%d", round)
				if err := p.Send("/queue/"+name, "text/plain", []byte(body), gostomp.SendOpt.Receipt); err != nil {
					t.Fatal(err)
				}
				if r == nil || how == "disconnect" {
					r = dialRaw(t, addr)
					r.write("CONNECT\naccept-version:1.2\n\n\x00")
					r.read() // CONNECTED
				}
				r.write(fmt.Sprintf("SUBSCRIBE\nid:%d\ndestination:/queue/%s\nack:auto\n\n\x00", round, name))
				if f := r.read(); f.Command != frame.CmdMessage || string(f.Body) != body {
					t.Fatalf("round %d: got %s %q, want MESSAGE %s", round, f.Command, f.Body, body)
				}
				if how == "unsubscribe" {
					r.write(fmt.Sprintf("UNSUBSCRIBE\nid:%d\nreceipt:u%d\n\n\x00", round, round))
				} else {
					r.write("DISCONNECT\nreceipt:bye\n\n\x00")
				}
				if f := r.read(); f.Command != frame.CmdReceipt {
					t.Fatalf("round %d: got %s, want the RECEIPT", round, f.Command)
				}
				info, err := eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: name})
				if err != nil {
					t.Fatal(err)
				}
				if info.Messages != 0 {
					t.Fatalf("round %d: %s was put back after it reached the client (ack:auto, then %s)", round, body, how)
				}
			}
		})
	}
}

// With sharing_policy = "sharable" (and client_id_policy = "unrestricted"),
// non-durable topic subscribers of two connections with the same client-id
// share one subscription: each message goes to one of them.
func TestSharableNonDurableTopicSubscribers(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{Connection: engine.ConnectionOptions{
		ClientIDPolicy: engine.Unrestricted, SharingPolicy: engine.Sharable}})
	var subs []*gostomp.Subscription
	for range 2 {
		c := dial(t, addr, gostomp.ConnOpt.Header("client-id", "workers"))
		sub, err := c.Subscribe("/topic/jobs", gostomp.AckAuto, gostomp.SubscribeOpt.Header("activemq.prefetchSize", "1"))
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	p := dial(t, addr)
	const n = 20
	for i := range n {
		if err := p.Send("/topic/jobs", "text/plain", []byte(fmt.Sprint(i)), gostomp.SendOpt.Receipt); err != nil {
			t.Fatal(err)
		}
	}
	// Unshared, each subscriber would get all n: the counts would be 2.
	seen := map[string]int{}
	deadline := time.After(10 * time.Second)
	for len(seen) < n {
		select {
		case m := <-subs[0].C:
			seen[string(m.Body)]++
		case m := <-subs[1].C:
			seen[string(m.Body)]++
		case <-deadline:
			t.Fatalf("received %d of %d messages", len(seen), n)
		}
	}
	for body, k := range seen {
		if k != 1 {
			t.Fatalf("message %s delivered %d times to the shared subscription", body, k)
		}
	}
	for i, sub := range subs {
		select {
		case m := <-sub.C:
			t.Fatalf("subscriber %d got an extra message %q", i, m.Body)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestEveryDestinationFormNamesTheSameDestination: the AMQP-style forms
// name what the STOMP forms name, temporary ones included (the same
// private name of the connection).
func TestEveryDestinationFormNamesTheSameDestination(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	c := dial(t, addr)
	tests := []struct{ sub, send string }{
		{"/queue/forms", "queue://forms"},
		{"/topic/forms", "topic://forms"},
		{"/temp-queue/r", "temp-queue://r"},
		{"/temp-topic/r", "temp-topic://r"},
	}
	for _, tt := range tests {
		sub, err := c.Subscribe(tt.sub, gostomp.AckAuto)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Send(tt.send, "text/plain", []byte(tt.send), gostomp.SendOpt.Receipt); err != nil {
			t.Fatalf("SEND to %s: %v", tt.send, err)
		}
		m := next(t, sub)
		if string(m.Body) != tt.send || m.Header.Get("destination") != tt.sub {
			t.Errorf("subscribed to %s, sent to %s: got %q with destination %q", tt.sub, tt.send, m.Body, m.Header.Get("destination"))
		}
	}
}

// TestTransactionLimit: with the default limit of 100, the 101st BEGIN on
// a connection is answered with an ERROR naming the limit (with the
// receipt it asked for), and that connection closes, as any refused frame
// does; other connections carry on.
func TestTransactionLimit(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	good := dial(t, addr)
	_ = good.Begin() // counted on its own connection only
	r := dialRaw(t, addr)
	var in strings.Builder
	in.WriteString("CONNECT\naccept-version:1.2\n\n\x00")
	for i := range 100 {
		fmt.Fprintf(&in, "BEGIN\ntransaction:t%d\n\n\x00", i)
	}
	in.WriteString("BEGIN\ntransaction:t100\nreceipt:r1\n\n\x00")
	r.write(in.String())
	if f := r.read(); f.Command != frame.CmdConnected {
		t.Fatalf("got %s, want CONNECTED", f.Command)
	}
	f := r.read()
	msg, _ := f.Get("message")
	id, _ := f.Get("receipt-id")
	if f.Command != frame.CmdError || !strings.Contains(msg, "too many open transactions (limit 100)") || id != "r1" {
		t.Fatalf("BEGIN 101 answered with %s message %q receipt-id %q", f.Command, msg, id)
	}
	r.closed()
	sub, _ := good.Subscribe("/queue/after", gostomp.AckAuto)
	if err := good.Send("/queue/after", "text/plain", []byte("ok"), gostomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	if string(next(t, sub).Body) != "ok" {
		t.Fatal("another connection stopped working")
	}
}
