package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/go-amqp"
	"github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/config"
	"github.com/sluicemq/sluice/internal/tlsconf"
)

// secureExample starts the broker of examples/secure/sluice.toml as it
// stands, from a copy next to a tls/ pair made as its comment says (by
// openssl when it is installed, else the same kind of self-signed pair),
// with every listener moved to a free loopback port.
func secureExample(t *testing.T) (*Broker, *tls.Config) {
	t.Helper()
	src, err := os.ReadFile("../../examples/secure/sluice.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "sluice.toml")
	if err := os.WriteFile(file, src, 0o600); err != nil {
		t.Fatal(err)
	}
	tlsDir := filepath.Join(dir, "tls")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(tlsDir, "server.crt"), filepath.Join(tlsDir, "server.key")
	if _, err := exec.LookPath("openssl"); err == nil {
		out, err := exec.Command("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
			"-days", "2", "-keyout", keyFile, "-out", certFile).CombinedOutput()
		if err != nil {
			t.Fatalf("openssl: %v\n%s", err, out)
		}
	} else {
		certPEM, keyPEM, err := tlsconf.SelfSigned([]string{"localhost"}, 48*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = filepath.Join(dir, "data")
	for _, l := range []*string{&cfg.Listeners.STOMP, &cfg.Listeners.STOMPS, &cfg.Listeners.AMQP, &cfg.Listeners.AMQPS, &cfg.Listeners.Admin} {
		if *l == "" {
			t.Fatal("the example leaves a listener off")
		}
		*l = "127.0.0.1:0"
	}
	cfg.Security.FailureDelay = config.Duration(20 * time.Millisecond) // TestFailedLoginIsDelayed checks the real one
	b, err := Start(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("the example does not start: %v", err)
	}
	t.Cleanup(func() { shutdown(t, b) })

	// openssl's pair names localhost only in its subject, which Go clients
	// no longer match against: trust the certificate itself, whatever name.
	pem, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in " + certFile)
	}
	client := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool})
			return err
		}}
	return b, client
}

// exampleSTOMP logs in to the example's STOMP (or, with tlsc, STOMPS)
// listener.
func exampleSTOMP(t *testing.T, b *Broker, tlsc *tls.Config, user, pass string) (*stomp.Conn, error) {
	t.Helper()
	var nc net.Conn
	var err error
	if tlsc != nil {
		nc, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", b.Addr("stomps").String(), tlsc)
	} else {
		nc, err = net.DialTimeout("tcp", b.Addr("stomp").String(), 5*time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	opts := []func(*stomp.Conn) error{stomp.ConnOpt.Host("/"), stomp.ConnOpt.WriteChannelCapacity(64), stomp.ConnOpt.ReadChannelCapacity(64)}
	if user != "" {
		opts = append(opts, stomp.ConnOpt.Login(user, pass))
	}
	c, err := stomp.Connect(nc, opts...)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	t.Cleanup(func() { _ = c.MustDisconnect() })
	return c, nil
}

// exampleAMQP logs in to the example's AMQP (or AMQPS) listener.
func exampleAMQP(t *testing.T, b *Broker, tlsc *tls.Config, user, pass string) (*amqp.Session, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr := "amqp://" + b.Addr("amqp").String()
	if tlsc != nil {
		addr = "amqps://" + b.Addr("amqps").String()
	}
	opts := &amqp.ConnOptions{TLSConfig: tlsc, SASLType: amqp.SASLTypeAnonymous()}
	if user != "" {
		opts.SASLType = amqp.SASLTypePlain(user, pass)
	}
	c, err := amqp.Dial(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.NewSession(ctx, nil)
}

// firstSTOMP waits for a subscription's first message or error.
func firstSTOMP(t *testing.T, sub *stomp.Subscription) (*stomp.Message, error) {
	t.Helper()
	select {
	case m, ok := <-sub.C:
		if !ok {
			return nil, errors.New("subscription closed")
		}
		if m.Err != nil {
			return nil, m.Err
		}
		return m, nil
	case <-time.After(5 * time.Second):
		t.Fatal("no message or error within 5s")
		return nil, nil
	}
}

func depth(t *testing.T, b *Broker, d message.Destination) int64 {
	t.Helper()
	in, err := b.Engine().DestinationInfo(d)
	if errors.Is(err, engine.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return in.Messages
}

var (
	ordersEU = message.Destination{Kind: message.Queue, Name: "orders.eu"}
	pricesFX = message.Destination{Kind: message.Topic, Name: "prices.fx"}
)

// The users of the worked example in docs/security.md may do what it says
// over STOMP, and nothing else: each denied action is an ERROR naming it,
// and leaves nothing stored.
func TestSecureExampleSTOMP(t *testing.T) {
	b, _ := secureExample(t)
	login := func(user string) *stomp.Conn {
		c, err := exampleSTOMP(t, b, nil, user, user+"-pw")
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		return c
	}
	denied := func(t *testing.T, err error, what string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), what) {
			t.Fatalf("got %v, want a refusal saying %q", err, what)
		}
	}
	// alice sends (creating orders.eu), browses and consumes.
	alice := login("alice")
	if err := alice.Send("/queue/orders.eu", "text/plain", []byte("order 1"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("alice send: %v", err)
	}
	br, err := alice.Subscribe("/queue/orders.eu", stomp.AckAuto, stomp.SubscribeOpt.Header("browser", "true"))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := firstSTOMP(t, br); err != nil || string(m.Body) != "order 1" {
		t.Fatalf("alice browse: %v", err)
	}
	if err := alice.Send("/queue/orders.eu", "text/plain", []byte("order 2"), stomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	// bob consumes, and the message says alice sent it (set_user_id).
	bob := login("bob")
	sub, err := bob.Subscribe("/queue/orders.eu", stomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	m, err := firstSTOMP(t, sub)
	if err != nil || string(m.Body) != "order 1" || m.Header.Get("JMSXUserID") != "alice" {
		t.Fatalf("bob consume: %v %v", m, err)
	}
	// carol subscribes durably to prices.fx.
	carol, err := exampleSTOMP(t, b, nil, "carol", "carol-pw")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := carol.Subscribe("/topic/prices.fx", stomp.AckAuto, stomp.SubscribeOpt.Header("client-id", "dash"),
		stomp.SubscribeOpt.Header("activemq.subscriptionName", "fx")); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		user, what string
		do         func(*stomp.Conn) error
	}{
		{"bob", "user bob may not send to /queue/orders.eu (action send)", func(c *stomp.Conn) error {
			return c.Send("/queue/orders.eu", "text/plain", []byte("forged"), stomp.SendOpt.Receipt)
		}},
		{"bob", "user bob may not browse /queue/orders.eu (action browse)", func(c *stomp.Conn) error {
			s, err := c.Subscribe("/queue/orders.eu", stomp.AckAuto, stomp.SubscribeOpt.Header("browser", "true"))
			if err != nil {
				return err
			}
			_, err = firstSTOMP(t, s)
			return err
		}},
		{"carol", "user carol may not send to /queue/orders.eu (action send)", func(c *stomp.Conn) error {
			return c.Send("/queue/orders.eu", "text/plain", []byte("forged"), stomp.SendOpt.Receipt)
		}},
		{"carol", "user carol may not consume from /queue/orders.eu (action consume)", func(c *stomp.Conn) error {
			s, err := c.Subscribe("/queue/orders.eu", stomp.AckAuto)
			if err != nil {
				return err
			}
			_, err = firstSTOMP(t, s)
			return err
		}},
		{"carol", "user carol may not send to /topic/prices.fx (action send)", func(c *stomp.Conn) error {
			return c.Send("/topic/prices.fx", "text/plain", []byte("tick"), stomp.SendOpt.Receipt)
		}},
		{"alice", "user alice may not subscribe to /topic/prices.fx (action subscribe)", func(c *stomp.Conn) error {
			s, err := c.Subscribe("/topic/prices.fx", stomp.AckAuto)
			if err != nil {
				return err
			}
			_, err = firstSTOMP(t, s)
			return err
		}},
		{"alice", "user alice may not send to /queue/payroll (action send)", func(c *stomp.Conn) error {
			return c.Send("/queue/payroll", "text/plain", []byte("x"), stomp.SendOpt.Receipt)
		}},
		{"bob", "user bob may not create /queue/orders.us (action create)", func(c *stomp.Conn) error {
			s, err := c.Subscribe("/queue/orders.us", stomp.AckAuto)
			if err != nil {
				return err
			}
			_, err = firstSTOMP(t, s)
			return err
		}},
	} {
		t.Run(c.what, func(t *testing.T) { denied(t, c.do(login(c.user)), c.what) })
	}
	if in, err := b.Engine().DestinationInfo(ordersEU); err != nil || in.Enqueued != 2 {
		t.Errorf("orders.eu: %d messages sent to it (%v), want alice's 2: a denied send got in", in.Enqueued, err)
	}
	for _, d := range []message.Destination{{Kind: message.Queue, Name: "payroll"}, {Kind: message.Queue, Name: "orders.us"}} {
		if _, err := b.Engine().DestinationInfo(d); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("%s exists after a denied action: %v", d, err)
		}
	}
	if n := depth(t, b, pricesFX); n != 0 {
		t.Errorf("prices.fx holds %d, want nothing", n)
	}
}

// Over AMQP 1.0 the same: allowed actions work, denied ones are
// amqp:unauthorized-access on the link and store nothing.
func TestSecureExampleAMQP(t *testing.T) {
	b, _ := secureExample(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	session := func(user string) *amqp.Session {
		s, err := exampleAMQP(t, b, nil, user, user+"-pw")
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		return s
	}
	unauthorized := func(t *testing.T, err error, what string) {
		t.Helper()
		var ae *amqp.Error
		var le *amqp.LinkError
		if errors.As(err, &le) && le.RemoteErr != nil {
			ae = le.RemoteErr
		}
		if ae == nil && !errors.As(err, &ae) {
			t.Fatalf("got %v, want amqp:unauthorized-access", err)
		}
		if ae.Condition != amqp.ErrCondUnauthorizedAccess || !strings.Contains(ae.Description, what) {
			t.Fatalf("got %v, want amqp:unauthorized-access saying %q", ae, what)
		}
	}
	alice := session("alice")
	snd, err := alice.NewSender(ctx, "orders.eu", nil)
	if err != nil {
		t.Fatalf("alice sender: %v", err)
	}
	if err := snd.Send(ctx, amqp.NewMessage([]byte("order 1")), nil); err != nil {
		t.Fatalf("alice send: %v", err)
	}
	if _, err := alice.NewReceiver(ctx, "orders.eu", &amqp.ReceiverOptions{SourceDistributionMode: amqp.SourceDistributionModeCopy}); err != nil {
		t.Fatalf("alice browse: %v", err)
	}
	bob := session("bob")
	rcv, err := bob.NewReceiver(ctx, "orders.eu", nil)
	if err != nil {
		t.Fatalf("bob receiver: %v", err)
	}
	m, err := rcv.Receive(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.GetData()) != "order 1" || m.Properties == nil || m.Properties.UserID == nil || string(m.Properties.UserID) != "alice" {
		t.Errorf("bob received %q from %v, want order 1 from alice", m.GetData(), m.Properties)
	}
	_ = rcv.AcceptMessage(ctx, m)
	carol := session("carol")
	if _, err := carol.NewReceiver(ctx, "prices.fx", &amqp.ReceiverOptions{SourceCapabilities: []string{"topic"}}); err != nil {
		t.Fatalf("carol subscribe: %v", err)
	}

	_, err = bob.NewSender(ctx, "orders.eu", nil)
	unauthorized(t, err, "user bob may not send to /queue/orders.eu")
	_, err = bob.NewReceiver(ctx, "orders.eu", &amqp.ReceiverOptions{SourceDistributionMode: amqp.SourceDistributionModeCopy})
	unauthorized(t, err, "user bob may not browse /queue/orders.eu")
	_, err = carol.NewSender(ctx, "prices.fx", &amqp.SenderOptions{TargetCapabilities: []string{"topic"}})
	unauthorized(t, err, "user carol may not send to /topic/prices.fx")
	_, err = carol.NewReceiver(ctx, "orders.eu", nil)
	unauthorized(t, err, "user carol may not consume from /queue/orders.eu")
	_, err = alice.NewReceiver(ctx, "prices.fx", &amqp.ReceiverOptions{SourceCapabilities: []string{"topic"}})
	unauthorized(t, err, "user alice may not subscribe to /topic/prices.fx")
	// The connections carry on after a refusal: alice still sends.
	if err := snd.Send(ctx, amqp.NewMessage([]byte("order 2")), nil); err != nil {
		t.Fatalf("alice send after a refusal: %v", err)
	}
	if n := depth(t, b, ordersEU); n != 1 {
		t.Errorf("orders.eu holds %d messages, want 1 (order 2)", n)
	}
}

// Wrong passwords, unknown users and clients without credentials are
// refused on every messaging listener of the example, plain and TLS; the
// right password works over TLS.
func TestSecureExampleAuthentication(t *testing.T) {
	b, tlsc := secureExample(t)
	for _, l := range []struct {
		name string
		tlsc *tls.Config
	}{{"plain", nil}, {"tls", tlsc}} {
		for _, cred := range []struct{ user, pass string }{{"alice", "bob-pw"}, {"mallory", "alice-pw"}, {"", ""}} {
			t.Run("stomp/"+l.name+"/"+cred.user, func(t *testing.T) {
				_, err := exampleSTOMP(t, b, l.tlsc, cred.user, cred.pass)
				if err == nil || !strings.Contains(err.Error(), "authentication failed") {
					t.Errorf("CONNECT as %q/%q: %v, want authentication failed", cred.user, cred.pass, err)
				}
			})
			t.Run("amqp/"+l.name+"/"+cred.user, func(t *testing.T) {
				if _, err := exampleAMQP(t, b, l.tlsc, cred.user, cred.pass); err == nil {
					t.Errorf("AMQP as %q/%q was accepted", cred.user, cred.pass)
				}
			})
		}
	}
	c, err := exampleSTOMP(t, b, tlsc, "alice", "alice-pw")
	if err != nil {
		t.Fatalf("alice over STOMPS: %v", err)
	}
	if err := c.Send("/queue/orders.tls", "text/plain", []byte("x"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("alice send over STOMPS: %v", err)
	}
	s, err := exampleAMQP(t, b, tlsc, "bob", "bob-pw")
	if err != nil {
		t.Fatalf("bob over AMQPS: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := s.NewReceiver(ctx, "orders.tls", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := r.Receive(ctx, nil); err != nil || m.Value != "x" {
		t.Fatalf("bob over AMQPS received %v, %v", m, err)
	}
}
