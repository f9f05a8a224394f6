package amqp_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/security"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// The test realm: alice may do everything on queues orders.* and topics
// prices.*; each user no-ACTION may do all of that but ACTION, so that a
// refusal can only come from the action it lacks. svc authenticates with
// a client certificate. Nobody may do anything on secret.*.
const (
	alicePassword = "alice-secret"
	otherPassword = "other-secret"
	svcSubject    = "CN=svc-a,O=Example"
)

// realmOptions are the test realm's options; anonymousRole "" lets no
// anonymous client in, "anon" lets them send to orders.*.
func realmOptions(t testing.TB, anonymousRole string) security.Options {
	t.Helper()
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	opts := security.Options{
		Users: []security.User{
			{Name: "alice", PasswordHash: hash(alicePassword), Roles: []string{"all"}},
			{Name: "svc", CertificateSubject: svcSubject, Roles: []string{"all"}},
		},
		Grants:        grantsFor("all", 0),
		AnonymousRole: anonymousRole,
		FailureDelay:  -1,
	}
	other := hash(otherPassword)
	for _, a := range engine.Actions() {
		role := "no-" + a.String()
		opts.Users = append(opts.Users, security.User{Name: role, PasswordHash: other, Roles: []string{role}})
		opts.Grants = append(opts.Grants, grantsFor(role, a)...)
	}
	if anonymousRole != "" {
		opts.Grants = append(opts.Grants, security.Grant{Role: anonymousRole, Kind: "queue", Match: "orders.*", Actions: []string{"send", "create"}})
	}
	return opts
}

// grantsFor gives role every action on queues orders.* and topics prices.*
// but skip (0 skips none).
func grantsFor(role string, skip engine.Action) []security.Grant {
	var queue, topic []string
	for _, a := range engine.Actions() {
		if a == skip {
			continue
		}
		switch a {
		case engine.ActionSend, engine.ActionCreate:
			queue, topic = append(queue, a.String()), append(topic, a.String())
		case engine.ActionConsume, engine.ActionBrowse:
			queue = append(queue, a.String())
		case engine.ActionSubscribe, engine.ActionDurable:
			topic = append(topic, a.String())
		}
	}
	return []security.Grant{
		{Role: role, Kind: "queue", Match: "orders.*", Actions: queue},
		{Role: role, Kind: "topic", Match: "prices.*", Actions: topic},
	}
}

func testRealm(t testing.TB, anonymousRole string) *security.Realm {
	t.Helper()
	r, err := security.New(realmOptions(t, anonymousRole))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func passwordOf(user string) string {
	if user == "alice" {
		return alicePassword
	}
	return otherPassword
}

var containerSeq atomic.Int64

// dialAs logs in with SASL PLAIN (a fresh container-id unless one is
// given).
func dialAs(t *testing.T, ts *testServer, user, containerID string) *amqp.Conn {
	t.Helper()
	if containerID == "" {
		containerID = fmt.Sprintf("sec-%d", containerSeq.Add(1))
	}
	return ts.dial(t, &amqp.ConnOptions{ContainerID: containerID, SASLType: amqp.SASLTypePlain(user, passwordOf(user))})
}

// refusedFor checks that err is the engine's refusal of user's action,
// carried as amqp:unauthorized-access.
func refusedFor(t *testing.T, err error, user string, a engine.Action) {
	t.Helper()
	re := remoteErr(err)
	if re == nil || re.Condition != amqp.ErrCondUnauthorizedAccess {
		t.Fatalf("%s by %s: got %v, want amqp:unauthorized-access", a, user, err)
	}
	for _, want := range []string{fmt.Sprintf("user %s may not ", user), fmt.Sprintf("(action %s)", a)} {
		if !strings.Contains(re.Description, want) {
			t.Fatalf("refusal %q does not say %q", re.Description, want)
		}
	}
}

// stillWorks checks that c carries on: a new session, a temporary queue
// (no permission needed), a send to it over the anonymous relay and its
// delivery.
func stillWorks(t *testing.T, c *amqp.Conn) {
	t.Helper()
	s := session(t, c)
	r := receiver(t, s, "", &amqp.ReceiverOptions{DynamicAddress: true, SourceCapabilities: []string{"temporary-queue"}})
	send(t, sender(t, s, "", nil), &amqp.Message{Properties: &amqp.MessageProperties{To: ptr(r.Address())}, Value: "alive"})
	if m := recv(t, r); m.Value != "alive" {
		t.Fatalf("after a refusal: got %v", m.Value)
	}
}

func ctx5() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// rawSASL is a raw client that logged in with SASL PLAIN and opened.
func rawSASL(t *testing.T, addr, user, password string) *rawClient {
	t.Helper()
	rc := rawDial(t, addr)
	if code := rc.saslLogin(t, mechInit("PLAIN", "\x00"+user+"\x00"+password)); code != types.SASLCodeOK {
		t.Fatalf("login as %s: sasl-outcome %d", user, code)
	}
	rc.open(t, 0)
	return rc
}

func mechInit(mech, resp string) *types.SASLInit {
	return &types.SASLInit{Mechanism: types.Symbol(mech), InitialResponse: []byte(resp)}
}

// saslLogin sends the SASL header and init and returns the outcome's code.
func (rc *rawClient) saslLogin(t *testing.T, init *types.SASLInit) types.SASLCode {
	t.Helper()
	rc.saslMechanisms(t)
	if err := rc.w.WriteFrame(frames.Frame{Type: frames.TypeSASL, Body: init}); err != nil {
		t.Fatal(err)
	}
	f, err := rc.r.ReadFrame()
	if err != nil {
		t.Fatalf("waiting for sasl-outcome: %v", err)
	}
	o, ok := f.Body.(*types.SASLOutcome)
	if !ok {
		t.Fatalf("got %s, want sasl-outcome", bodyDesc(f))
	}
	return o.Code
}

// saslMechanisms sends the SASL header and returns the offered mechanisms.
func (rc *rawClient) saslMechanisms(t *testing.T) []types.Symbol {
	t.Helper()
	if err := rc.w.WriteProtocolHeader(frames.NewProtocolHeader(frames.ProtocolSASL)); err != nil {
		t.Fatal(err)
	}
	_ = rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if h, err := rc.r.ReadProtocolHeader(); err != nil || h.ID != frames.ProtocolSASL {
		t.Fatalf("SASL header answered with %v, %v", h, err)
	}
	f, err := rc.r.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := f.Body.(*types.SASLMechanisms)
	if !ok {
		t.Fatalf("got %s, want sasl-mechanisms", bodyDesc(f))
	}
	return m.SASLServerMechanisms
}

func bodyDesc(f frames.Frame) string {
	if f.Body == nil {
		return "an empty frame"
	}
	n, _ := f.Body.Descriptor()
	return string(n)
}

// TestSASLRefused: a wrong password and an unknown user get the same
// sasl-outcome (auth, no additional data) and the socket closes; ANONYMOUS
// and no SASL at all are refused without an anonymous role; malformed
// PLAIN responses are refused.
func TestSASLRefused(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{Realm: testRealm(t, "")}, engine.Config{})
	outcome := func(t *testing.T, init *types.SASLInit) types.SASLCode {
		rc := rawDial(t, ts.addr)
		code := rc.saslLogin(t, init)
		_ = rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if code != types.SASLCodeOK {
			if n, err := rc.nc.Read(make([]byte, 1)); err == nil || n > 0 {
				t.Fatalf("the socket stays open after a refused login (%v)", err)
			}
		}
		return code
	}
	cases := []struct {
		name string
		init *types.SASLInit
		want types.SASLCode
	}{
		{"right password", mechInit("PLAIN", "\x00alice\x00"+alicePassword), types.SASLCodeOK},
		{"authzid is the user", mechInit("PLAIN", "alice\x00alice\x00"+alicePassword), types.SASLCodeOK},
		{"wrong password", mechInit("PLAIN", "\x00alice\x00wrong"), types.SASLCodeAuth},
		{"unknown user", mechInit("PLAIN", "\x00mallory\x00"+alicePassword), types.SASLCodeAuth},
		{"another user's authzid", mechInit("PLAIN", "no-send\x00alice\x00"+alicePassword), types.SASLCodeAuth},
		{"ANONYMOUS", mechInit("ANONYMOUS", "trace"), types.SASLCodeAuth},
		{"EXTERNAL without TLS", mechInit("EXTERNAL", ""), types.SASLCodeAuth},
		{"unknown mechanism", mechInit("CRAM-MD5", ""), types.SASLCodeAuth},
		{"no response", &types.SASLInit{Mechanism: "PLAIN"}, types.SASLCodeAuth},
		{"one field", mechInit("PLAIN", "alice"), types.SASLCodeAuth},
		{"empty user", mechInit("PLAIN", "\x00\x00"+alicePassword), types.SASLCodeAuth},
		{"NUL in the password", mechInit("PLAIN", "\x00alice\x00"+alicePassword+"\x00x"), types.SASLCodeAuth},
		{"not UTF-8", mechInit("PLAIN", "\x00al\xffice\x00"+alicePassword), types.SASLCodeAuth},
		{"long field", mechInit("PLAIN", "\x00alice\x00"+strings.Repeat("p", 300)), types.SASLCodeAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcome(t, tc.init); got != tc.want {
				t.Fatalf("sasl-outcome %d, want %d", got, tc.want)
			}
		})
	}

	t.Run("offered mechanisms", func(t *testing.T) {
		got := rawDial(t, ts.addr).saslMechanisms(t)
		if fmt.Sprint(got) != "[PLAIN]" {
			t.Fatalf("offered %v, want only PLAIN (no anonymous role, no TLS)", got)
		}
	})

	t.Run("go-amqp", func(t *testing.T) {
		ctx, cancel := ctx5()
		defer cancel()
		var msgs []string
		for _, user := range []string{"alice", "mallory"} {
			_, err := amqp.Dial(ctx, "amqp://"+ts.addr, &amqp.ConnOptions{SASLType: amqp.SASLTypePlain(user, "wrong")})
			if err == nil {
				t.Fatalf("%s with a wrong password let in", user)
			}
			msgs = append(msgs, err.Error())
		}
		if msgs[0] != msgs[1] {
			t.Fatalf("a wrong password and an unknown user look different: %q vs %q", msgs[0], msgs[1])
		}
		if _, err := amqp.Dial(ctx, "amqp://"+ts.addr, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()}); err == nil {
			t.Fatal("ANONYMOUS let in without an anonymous role")
		}
		// No SASL: an open, then a close with amqp:unauthorized-access.
		c, err := amqp.Dial(ctx, "amqp://"+ts.addr, nil)
		if err == nil {
			defer c.Close()
			_, err = c.NewSession(ctx, nil)
		}
		if re := remoteErr(err); re == nil || re.Condition != amqp.ErrCondUnauthorizedAccess {
			t.Fatalf("a client without SASL: %v, want amqp:unauthorized-access", err)
		}
		if n := len(ts.eng.Connections()); n != 0 {
			t.Fatalf("%d engine connections after refused logins", n)
		}
	})
}

// TestSASLAnonymousRole lets anonymous clients in, with the anonymous
// role's permissions only: by ANONYMOUS and by skipping SASL.
func TestSASLAnonymousRole(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{Realm: testRealm(t, "anon")}, engine.Config{})
	got := rawDial(t, ts.addr).saslMechanisms(t)
	if fmt.Sprint(got) != "[PLAIN ANONYMOUS]" {
		t.Fatalf("offered %v, want PLAIN and ANONYMOUS", got)
	}
	for name, opts := range map[string]*amqp.ConnOptions{
		"ANONYMOUS": {SASLType: amqp.SASLTypeAnonymous()},
		"no SASL":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			c := ts.dial(t, opts)
			s := session(t, c)
			send(t, sender(t, s, "orders.anon", nil), text("from nobody"))
			ctx, cancel := ctx5()
			defer cancel()
			_, err := s.NewReceiver(ctx, "orders.anon", queueCaps())
			refusedFor(t, err, "anonymous", engine.ActionConsume)
			stillWorks(t, c)
		})
	}
}

// TestSASLFailureDelay: a refused login is answered only after the
// realm's failure delay (1 s by default), so passwords cannot be guessed
// fast.
func TestSASLFailureDelay(t *testing.T) {
	opts := realmOptions(t, "")
	opts.FailureDelay = 0 // the default
	realm, err := security.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, sluiceamqp.Options{Realm: realm}, engine.Config{})
	ctx, cancel := ctx5()
	defer cancel()
	start := time.Now()
	if _, err := amqp.Dial(ctx, "amqp://"+ts.addr, &amqp.ConnOptions{SASLType: amqp.SASLTypePlain("alice", "guess")}); err == nil {
		t.Fatal("a wrong password let in")
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("a wrong password was refused after %s, before the failure delay", d)
	}
}

// testPKI makes a CA, a server certificate for 127.0.0.1 and a client
// certificate with the subject svcSubject (and one with an unknown
// subject).
type testPKI struct {
	pool            *x509.CertPool
	server          tls.Certificate
	client, unknown tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Sluice test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, ips ...net.IP) tls.Certificate {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subject, NotBefore: now.Add(-time.Hour),
			NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
	}
	p := &testPKI{pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.server = issue(2, pkix.Name{CommonName: "127.0.0.1"}, x509.ExtKeyUsageServerAuth, net.IPv4(127, 0, 0, 1))
	p.client = issue(3, pkix.Name{CommonName: "svc-a", Organization: []string{"Example"}}, x509.ExtKeyUsageClientAuth)
	p.unknown = issue(4, pkix.Name{CommonName: "stranger", Organization: []string{"Example"}}, x509.ExtKeyUsageClientAuth)
	return p
}

// startTLSServer serves AMQP over TLS on 127.0.0.1:0, asking for client
// certificates signed by the test CA (not requiring them).
func startTLSServer(t *testing.T, pki *testPKI, opts sluiceamqp.Options) *testServer {
	t.Helper()
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := sluiceamqp.NewServer(eng, opts)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pki.server},
		ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pki.pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := ctx5()
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = eng.Close()
	})
	return &testServer{eng: eng, srv: srv, addr: ln.Addr().String()}
}

// TestSASLExternal authenticates a TLS client by its certificate: EXTERNAL
// is offered only to a client whose certificate TLS verified, maps the
// certificate's subject to the user with that certificate_subject (whose
// permissions then apply), and refuses a certificate no user has.
func TestSASLExternal(t *testing.T) {
	pki := newTestPKI(t)
	ts := startTLSServer(t, pki, sluiceamqp.Options{Realm: testRealm(t, "")})
	clientTLS := func(certs ...tls.Certificate) *tls.Config {
		return &tls.Config{RootCAs: pki.pool, Certificates: certs, MinVersion: tls.VersionTLS12}
	}
	ctx, cancel := ctx5()
	defer cancel()

	t.Run("certificate of svc", func(t *testing.T) {
		c, err := amqp.Dial(ctx, "amqps://"+ts.addr, &amqp.ConnOptions{TLSConfig: clientTLS(pki.client), SASLType: amqp.SASLTypeExternal("")})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s := session(t, c)
		send(t, sender(t, s, "orders.tls", nil), text("over TLS"))
		if m := recv(t, receiver(t, s, "orders.tls", queueCaps())); m.Value != "over TLS" {
			t.Fatalf("got %v", m.Value)
		}
		_, err = s.NewSender(ctx, "secret.tls", nil)
		refusedFor(t, err, "svc", engine.ActionSend)
		users := map[string]bool{}
		for _, ci := range ts.eng.Connections() {
			users[ci.User] = true
		}
		if !users["svc"] {
			t.Fatalf("connection users %v, want svc", users)
		}
	})

	t.Run("offered mechanisms", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			certs []tls.Certificate
			want  string
		}{
			{"with a certificate", []tls.Certificate{pki.client}, "[EXTERNAL PLAIN]"},
			{"without a certificate", nil, "[PLAIN]"},
		} {
			nc, err := tls.Dial("tcp", ts.addr, clientTLS(tc.certs...))
			if err != nil {
				t.Fatal(err)
			}
			rc := &rawClient{nc: nc, r: frames.NewReader(bufio.NewReader(nc), 1<<20), w: frames.NewWriter(nc, 1<<20)}
			if got := fmt.Sprint(rc.saslMechanisms(t)); got != tc.want {
				t.Errorf("%s: offered %s, want %s", tc.name, got, tc.want)
			}
			_ = nc.Close()
		}
	})

	t.Run("go-amqp without a certificate", func(t *testing.T) {
		_, err := amqp.Dial(ctx, "amqps://"+ts.addr, &amqp.ConnOptions{TLSConfig: clientTLS(), SASLType: amqp.SASLTypeExternal("")})
		if err == nil || !strings.Contains(err.Error(), "no supported auth mechanism") {
			t.Fatalf("EXTERNAL without a certificate: %v", err)
		}
		// PLAIN still works over TLS.
		c, err := amqp.Dial(ctx, "amqps://"+ts.addr, &amqp.ConnOptions{TLSConfig: clientTLS(), SASLType: amqp.SASLTypePlain("alice", alicePassword)})
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	})

	t.Run("certificate of nobody", func(t *testing.T) {
		_, err := amqp.Dial(ctx, "amqps://"+ts.addr, &amqp.ConnOptions{TLSConfig: clientTLS(pki.unknown), SASLType: amqp.SASLTypeExternal("")})
		if err == nil {
			t.Fatal("a certificate no user has let in")
		}
	})

	t.Run("authorization identity of another user", func(t *testing.T) {
		_, err := amqp.Dial(ctx, "amqps://"+ts.addr, &amqp.ConnOptions{TLSConfig: clientTLS(pki.client), SASLType: amqp.SASLTypeExternal("alice")})
		if err == nil {
			t.Fatal("EXTERNAL as svc acting as alice let in")
		}
	})
}

// TestSASLSecurityOff: without a realm any PLAIN credentials and
// ANONYMOUS are accepted, and the PLAIN name is the connection's user.
func TestSASLSecurityOff(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	if got := fmt.Sprint(rawDial(t, ts.addr).saslMechanisms(t)); got != "[PLAIN ANONYMOUS]" {
		t.Fatalf("offered %s", got)
	}
	c := ts.dial(t, &amqp.ConnOptions{SASLType: amqp.SASLTypePlain("bob", "anything")})
	send(t, sender(t, session(t, c), "secret.off", nil), text("no security"))
	found := false
	for _, ci := range ts.eng.Connections() {
		found = found || ci.User == "bob"
	}
	if !found {
		t.Fatal("the PLAIN user is not the connection's user")
	}
	_ = session(t, ts.dial(t, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()}))
	_ = session(t, ts.dial(t, nil))
}
