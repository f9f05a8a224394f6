package broker

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// The AMQP port serves AMQP 1.0 and 0-9-1 clients side by side, the
// amqp091 listener 0-9-1 alone, and a message sent over one reaches a
// consumer on the other.
func TestAMQPPortServesBothVersions(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Listeners.AMQP = "127.0.0.1:0"
	cfg.Listeners.AMQP091 = "127.0.0.1:0"
	b := start(t, cfg)
	defer shutdown(t, b)
	shared := b.Addr("amqp").String()
	own := b.Addr("amqp091").String()

	// A 0-9-1 client on the shared port declares the queue and consumes.
	c091, err := amqp091.Dial("amqp://guest:guest@" + shared + "/")
	if err != nil {
		t.Fatalf("0-9-1 on the AMQP port: %v", err)
	}
	defer c091.Close()
	ch, err := c091.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("both", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume("both", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}

	// An AMQP 1.0 client on the same port sends to the same queue.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c10, err := goamqp.Dial(ctx, "amqp://"+shared, &goamqp.ConnOptions{SASLType: goamqp.SASLTypeAnonymous()})
	if err != nil {
		t.Fatalf("AMQP 1.0 on the AMQP port: %v", err)
	}
	defer c10.Close()
	s, err := c10.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := s.NewSender(ctx, "both", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := snd.Send(ctx, goamqp.NewMessage([]byte("from 1.0")), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-ds:
		if string(d.Body) != "from 1.0" {
			t.Fatalf("0-9-1 got %q", d.Body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the 0-9-1 consumer got nothing from the AMQP 1.0 sender")
	}

	// The listener of its own speaks 0-9-1.
	other, err := amqp091.Dial("amqp://guest:guest@" + own + "/")
	if err != nil {
		t.Fatalf("0-9-1 on its own listener: %v", err)
	}
	_ = other.Close()

	// A client with an unknown header gets the AMQP 1.0 server's answer;
	// one with an old 0-9 header the 0-9-1 header, then the end.
	for _, tc := range []struct{ hdr, want string }{
		{"AMQP\x01\x01\x00\x09", "AMQP\x00\x00\x09\x01"},
		{"AMQP\x00\x01\x00\x00", "AMQP\x00\x01\x00\x00"},
	} {
		nc, err := net.DialTimeout("tcp", shared, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write([]byte(tc.hdr)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 8)
		if _, err := io.ReadFull(nc, got); err != nil || string(got) != tc.want {
			t.Errorf("header %q answered %q (%v), want %q", tc.hdr, got, err, tc.want)
		}
		_ = nc.Close()
	}
}

// The amqps listener serves 0-9-1 clients over TLS too, and AMQP 1.0 ones
// beside them.
func TestAMQPSServes091(t *testing.T) {
	s := newTLSSetup(t)
	b := startTLS(t, s.config(t), startOptions{})
	c, err := amqp091.DialTLS("amqps://guest:guest@"+b.Addr("amqps").String()+"/", s.client())
	if err != nil {
		t.Fatalf("0-9-1 over TLS: %v", err)
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("tls.091", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.PublishWithContext(context.Background(), "", "tls.091", false, false, amqp091.Publishing{Body: []byte("over amqps")}); err != nil {
		t.Fatal(err)
	}
	ac, err := dialAMQP("amqps://"+b.Addr("amqps").String(), s.client())
	if err != nil {
		t.Fatalf("AMQP 1.0 over TLS beside 0-9-1: %v", err)
	}
	defer ac.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := ac.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := sess.NewReceiver(ctx, "tls.091", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := rcv.Receive(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.GetData()) != "over amqps" {
		t.Fatalf("AMQP 1.0 got %q", m.GetData())
	}
	_ = rcv.AcceptMessage(ctx, m)
}

// The sniffing listener hands a short or silent client to the AMQP 1.0
// side with what it sent put back, and closing it ends the connections
// still being sniffed.
func TestSniffListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got091 := make(chan net.Conn, 1)
	s := newSniffListener(ln, func(nc net.Conn) { got091 <- nc }, slog.New(slog.DiscardHandler))
	defer s.Close()

	short, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	_, _ = short.Write([]byte("AMQ"))
	_ = short.(*net.TCPConn).CloseWrite()
	nc, err := s.Accept()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil || string(b) != "AMQ" {
		t.Fatalf("AMQP 1.0 side read %q, %v; want the 3 octets sent", b, err)
	}
	_ = nc.Close()

	v091, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer v091.Close()
	_, _ = v091.Write([]byte("AMQP\x00\x00\x09\x01rest"))
	select {
	case nc := <-got091:
		buf := make([]byte, 12)
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(nc, buf); err != nil || string(buf) != "AMQP\x00\x00\x09\x01rest" {
			t.Fatalf("0-9-1 side read %q, %v", buf, err)
		}
		_ = nc.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the 0-9-1 connection was not handed over")
	}

	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	time.Sleep(50 * time.Millisecond) // being sniffed
	_ = s.Close()
	_ = silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection being sniffed stayed open after Close")
	}
	if _, err := s.Accept(); err == nil {
		t.Fatal("Accept after Close")
	}
}
