package amqp1client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/internal/amqp1client"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// serve starts a Sluice AMQP 1.0 listener on 127.0.0.1:0 and returns its
// address.
func serve(t *testing.T, opts sluiceamqp.Options) string {
	t.Helper()
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := sluiceamqp.NewServer(eng, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = eng.Close()
	})
	return ln.Addr().String()
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dial(t *testing.T, cfg amqp1client.Config) *amqp1client.Conn {
	t.Helper()
	c, err := amqp1client.Dial(ctx5(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// readUntil reads frames until keep returns true for one, and returns it;
// a detach, end or close fails the test.
func readUntil(t *testing.T, c *amqp1client.Conn, keep func(frames.Frame) bool) frames.Frame {
	t.Helper()
	for range 1000 {
		f, err := c.ReadFrame()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if err := amqp1client.FrameErr(f); err != nil {
			t.Fatal(err)
		}
		if keep(f) {
			return f
		}
	}
	t.Fatal("no matching frame in 1000")
	return frames.Frame{}
}

func attachSender(t *testing.T, c *amqp1client.Conn, addr string) {
	t.Helper()
	tgt := types.NewTarget()
	tgt.Address, tgt.Capabilities = addr, amqp1client.Symbols([]string{"queue"})
	a := types.NewAttach()
	a.Name, a.Handle = "snd-"+addr, 0
	a.Role, a.Source, a.Target = types.RoleSender, types.NewSource(), tgt
	a.InitialDeliveryCount = types.Some(types.SequenceNo(0))
	if err := c.Attach(ctx5(t), a, "attach sender"); err != nil {
		t.Fatal(err)
	}
}

// send sends the messages with bodies on handle 0 and waits until the
// broker has accepted them all.
func send(t *testing.T, c *amqp1client.Conn, bodies ...[]byte) {
	t.Helper()
	f := readUntil(t, c, func(f frames.Frame) bool { _, ok := f.Body.(*types.Flow); return ok })
	if cr := amqp1client.SenderCredit(f.Body.(*types.Flow), 0); cr < uint32(len(bodies)) {
		t.Fatalf("credit %d for %d messages", cr, len(bodies))
	}
	var tag [4]byte
	for i, b := range bodies {
		payload, err := (&types.Message{Data: []types.Data{b}}).AppendAMQP(nil)
		if err != nil {
			t.Fatal(err)
		}
		tr := &types.Transfer{DeliveryID: types.Some(types.DeliveryNumber(i)),
			DeliveryTag: amqp1client.Tag(tag[:0], uint32(i)), MessageFormat: types.Some(types.MessageFormat(0))}
		if err := c.Queue(tr, payload); err != nil {
			t.Fatal(err)
		}
	}
	settled := 0
	for settled < len(bodies) {
		f := readUntil(t, c, func(f frames.Frame) bool { _, ok := f.Body.(*types.Disposition); return ok })
		d := f.Body.(*types.Disposition)
		if _, ok := d.State.(*types.Accepted); !ok || !d.Settled {
			t.Fatalf("disposition %+v, want settled accepted", d)
		}
		first, last := amqp1client.Span(d)
		settled += int(last-first) + 1
	}
}

// receive attaches a receiver with credit window and reads n deliveries,
// accepting each.
func receive(t *testing.T, c *amqp1client.Conn, addr string, window uint32, n int) [][]byte {
	t.Helper()
	src := types.NewSource()
	src.Address = addr
	a := types.NewAttach()
	a.Name, a.Handle = "rcv-"+addr, 0
	a.Role, a.Source, a.Target = types.RoleReceiver, src, types.NewTarget()
	if err := c.Attach(ctx5(t), a, "attach receiver"); err != nil {
		t.Fatal(err)
	}
	credit := amqp1client.Credit{Window: window}
	next := c.NextIncoming()
	var fl types.Flow
	credit.Grant(&fl, 0, next, 0, c.Window())
	if err := c.Queue(&fl, nil); err != nil {
		t.Fatal(err)
	}
	var asm amqp1client.Assembler
	var got [][]byte
	for len(got) < n {
		f := readUntil(t, c, func(f frames.Frame) bool { _, ok := f.Body.(*types.Transfer); return ok })
		next++
		d, ended, err := asm.Add(f.Body.(*types.Transfer), f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if !ended {
			continue
		}
		if credit.Delivered() {
			credit.Grant(&fl, 0, next, 0, c.Window())
			if err := c.Queue(&fl, nil); err != nil {
				t.Fatal(err)
			}
		}
		m, err := types.DecodeMessage(d.Payload)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, bytes.Join(dataOf(m), nil))
		disp := &types.Disposition{Role: types.RoleReceiver, First: types.DeliveryNumber(d.ID), Settled: true, State: &types.Accepted{}}
		if err := c.Queue(disp, nil); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

func dataOf(m *types.Message) [][]byte {
	out := make([][]byte, len(m.Data))
	for i, d := range m.Data {
		out[i] = d
	}
	return out
}

// Messages go through the broker and back: a window of unsettled sends is
// settled as accepted, and a receiver whose credit is refilled at half its
// window gets them all, in order, including ones the broker splits into
// several frames for a receiver with a small max-frame-size.
func TestSendAndReceiveThroughTheBroker(t *testing.T) {
	tests := []struct {
		name     string
		maxFrame uint32 // the receiver's
		size     int
		n        int
	}{
		{"one frame each", 0, 100, 50},
		{"several frames each", 512, 3000, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := serve(t, sluiceamqp.Options{})
			queue := fmt.Sprintf("q-%d", tt.size)
			var bodies [][]byte
			for i := range tt.n {
				bodies = append(bodies, bytes.Repeat([]byte{byte('a' + i%26)}, tt.size))
			}
			p := dial(t, amqp1client.Config{Addr: addr, ContainerID: "producer"})
			attachSender(t, p, queue)
			send(t, p, bodies...)
			c := dial(t, amqp1client.Config{Addr: addr, ContainerID: "consumer", MaxFrameSize: tt.maxFrame})
			got := receive(t, c, queue, 8, tt.n)
			for i := range bodies {
				if !bytes.Equal(got[i], bodies[i]) {
					t.Fatalf("message %d: got %d bytes %.10q…, want %d bytes %.10q…", i, len(got[i]), got[i], len(bodies[i]), bodies[i])
				}
			}
		})
	}
}

// An attach the broker refuses (an invalid selector) is a RefusedError
// naming the attach, with the broker's condition.
func TestAttachRefused(t *testing.T) {
	addr := serve(t, sluiceamqp.Options{})
	c := dial(t, amqp1client.Config{Addr: addr, ContainerID: "refused"})
	src := types.NewSource()
	src.Address = "orders"
	src.Filter = types.FilterSet{{Key: types.Symbol("jms-selector"),
		Value: types.Described{Descriptor: uint64(0x0000468C00000004), Value: "price >"}}}
	a := types.NewAttach()
	a.Name, a.Role, a.Source, a.Target = "bad-selector", types.RoleReceiver, src, types.NewTarget()
	err := c.Attach(ctx5(t), a, "attach receiver to orders")
	var r *amqp1client.RefusedError
	if !errors.As(err, &r) {
		t.Fatalf("attach with an invalid selector: %v, want a RefusedError", err)
	}
	if r.Op != "attach receiver to orders" || !strings.Contains(r.Reason, "amqp:invalid-field") {
		t.Fatalf("refusal %q / %q, want the attach and amqp:invalid-field", r.Op, r.Reason)
	}
}

// SASL PLAIN logs in with the right password; a wrong one is refused at
// open.
func TestSASLPlain(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	realm, err := security.New(security.Options{
		Users:        []security.User{{Name: "alice", PasswordHash: string(hash), Roles: []string{"all"}}},
		Grants:       []security.Grant{{Role: "all", Match: "*", Actions: []string{"*"}}},
		FailureDelay: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, sluiceamqp.Options{Realm: realm})
	c := dial(t, amqp1client.Config{Addr: addr, ContainerID: "alice", User: "alice", Password: "secret"})
	attachSender(t, c, "orders")
	send(t, c, []byte("hello"))

	_, err = amqp1client.Dial(ctx5(t), amqp1client.Config{Addr: addr, ContainerID: "mallory", User: "alice", Password: "guess"})
	var r *amqp1client.RefusedError
	if !errors.As(err, &r) || r.Op != "open" {
		t.Fatalf("wrong password: %v, want a RefusedError at open", err)
	}
	_, err = amqp1client.Dial(ctx5(t), amqp1client.Config{Addr: addr, ContainerID: "anon"})
	if !errors.As(err, &r) || r.Op != "open" {
		t.Fatalf("anonymous with users and no anonymous role: %v, want a RefusedError at open", err)
	}
}

// A connection that sends nothing for longer than the broker's idle
// time-out stays open: the writer sends empty frames.
func TestIdleConnectionStaysOpen(t *testing.T) {
	addr := serve(t, sluiceamqp.Options{IdleTimeout: 400 * time.Millisecond})
	c := dial(t, amqp1client.Config{Addr: addr, ContainerID: "idle"})
	time.Sleep(1200 * time.Millisecond)
	attachSender(t, c, "orders")
	send(t, c, []byte("still here"))
}

// Shutdown closes the connection: the broker answers the close, and
// Queue fails afterwards.
func TestShutdown(t *testing.T) {
	addr := serve(t, sluiceamqp.Options{})
	c := dial(t, amqp1client.Config{Addr: addr, ContainerID: "bye"})
	readerDone := make(chan struct{})
	closed := make(chan bool, 1)
	go func() {
		defer close(readerDone)
		for range 1000 {
			f, err := c.ReadFrame()
			if err != nil {
				closed <- false
				return
			}
			if _, ok := f.Body.(*types.Close); ok {
				closed <- true
				return
			}
		}
	}()
	if err := c.Shutdown(readerDone, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !<-closed {
		t.Fatal("the broker's close was not read")
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Queue(types.NewClose(), nil) == nil {
		if time.Now().After(deadline) {
			t.Fatal("Queue still succeeds 5s after Shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ReadIdle fails a read when the broker has sent nothing for that long.
func TestReadIdle(t *testing.T) {
	addr := serve(t, sluiceamqp.Options{})
	c := dial(t, amqp1client.Config{Addr: addr, ContainerID: "quiet", ReadIdle: 100 * time.Millisecond})
	start := time.Now()
	_, err := c.ReadFrame()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read from a silent broker: %v, want a time-out", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the time-out took %v", d)
	}
}
