package amqp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// durableExists reports whether durable subscription name on topic exists.
func durableExists(ts *testServer, topic, name string) bool {
	for _, si := range ts.eng.Subscriptions() {
		if si.Durable && si.Name == name && si.Topic.Name == topic {
			return true
		}
	}
	return false
}

// TestAuthorization runs every action once as a user who may and once as
// one who may not: the allowed one works, the refused one gets
// amqp:unauthorized-access naming the user and the action (on the attach,
// the send's outcome or the closing detach), nothing is stored, and the
// connection carries on.
func TestAuthorization(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{Realm: testRealm(t, "")}, engine.Config{})
	ops := []struct {
		name   string
		action engine.Action
		// run does the action as user on c; names end with sfx. It returns
		// the error of the step that needs the permission.
		run func(t *testing.T, c *amqp.Conn, user, sfx string) error
		// queue is the queue a refused send must leave without a message.
		queue string
	}{
		{"send on a named link", engine.ActionSend, func(t *testing.T, c *amqp.Conn, _, sfx string) error {
			ctx, cancel := ctx5()
			defer cancel()
			snd, err := session(t, c).NewSender(ctx, "orders.named"+sfx, nil)
			if err != nil {
				return err
			}
			return snd.Send(ctx, text("x"), nil)
		}, "orders.named"},
		{"send on the anonymous relay", engine.ActionSend, func(t *testing.T, c *amqp.Conn, _, sfx string) error {
			ctx, cancel := ctx5()
			defer cancel()
			snd := sender(t, session(t, c), "", nil)
			return snd.Send(ctx, &amqp.Message{Properties: &amqp.MessageProperties{To: ptr("orders.relay" + sfx)}, Value: "x"}, nil)
		}, "orders.relay"},
		{"send in a transaction", engine.ActionSend, func(t *testing.T, _ *amqp.Conn, user, sfx string) error {
			return rawTransactionalSend(t, ts, user, "orders.txn"+sfx)
		}, "orders.txn"},
		{"consume", engine.ActionConsume, func(t *testing.T, c *amqp.Conn, _, sfx string) error {
			ctx, cancel := ctx5()
			defer cancel()
			_, err := session(t, c).NewReceiver(ctx, "orders.consume"+sfx, queueCaps())
			return err
		}, ""},
		{"subscribe", engine.ActionSubscribe, func(t *testing.T, c *amqp.Conn, _, sfx string) error {
			ctx, cancel := ctx5()
			defer cancel()
			_, err := session(t, c).NewReceiver(ctx, "prices.sub"+sfx, &amqp.ReceiverOptions{SourceCapabilities: []string{"topic"}})
			return err
		}, ""},
		{"durable subscription create", engine.ActionDurable, func(t *testing.T, c *amqp.Conn, _, sfx string) error {
			ctx, cancel := ctx5()
			defer cancel()
			_, err := session(t, c).NewReceiver(ctx, "prices.durable"+sfx, durableOpts("create"+sfx))
			if err == nil && !durableExists(ts, "prices.durable"+sfx, "create"+sfx) {
				t.Fatal("the durable subscription was not made")
			}
			return err
		}, ""},
		{"durable subscription delete", engine.ActionDurable, nil, ""}, // TestAuthorizationDurableDelete
		{"browse", engine.ActionBrowse, func(t *testing.T, c *amqp.Conn, _, sfx string) error {
			ctx, cancel := ctx5()
			defer cancel()
			_, err := session(t, c).NewReceiver(ctx, "orders.browse"+sfx,
				&amqp.ReceiverOptions{SourceDistributionMode: amqp.SourceDistributionModeCopy, SourceCapabilities: []string{"queue"}})
			return err
		}, ""},
		{"create by naming", engine.ActionCreate, func(t *testing.T, c *amqp.Conn, _, sfx string) error {
			ctx, cancel := ctx5()
			defer cancel()
			_, err := session(t, c).NewSender(ctx, "orders.new"+sfx, nil)
			if err == nil {
				if _, err := ts.eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: "orders.new" + sfx}); err != nil {
					t.Fatalf("the queue was not made: %v", err)
				}
			}
			return err
		}, "orders.new"},
	}
	for _, op := range ops {
		if op.run == nil {
			continue
		}
		for _, allowed := range []bool{true, false} {
			user, sfx := "alice", ".ok"
			if !allowed {
				user, sfx = "no-"+op.action.String(), ".denied"
			}
			t.Run(op.name+"/"+user, func(t *testing.T) {
				c := dialAs(t, ts, user, "")
				err := op.run(t, c, user, sfx)
				if allowed {
					if err != nil {
						t.Fatalf("%s by %s refused: %v", op.action, user, err)
					}
					return
				}
				refusedFor(t, err, user, op.action)
				if op.queue != "" {
					if _, err := ts.eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: op.queue + sfx}); err == nil {
						t.Fatalf("a refused %s left queue %s behind", op.action, op.queue+sfx)
					}
				}
				stillWorks(t, c)
			})
		}
	}
}

// TestAuthorizationDurableDelete deletes a durable subscription with a
// closing detach: a user without the durable action may attach to the
// subscription (subscribe suffices) but not delete it, and the
// subscription stays. Two clients: go-amqp (a durable attach, then
// Close) and the raw frames of Qpid JMS's unsubscribe (an attach without a
// source that looks the subscription up, then a closing detach), whose
// detach is answered with amqp:unauthorized-access. go-amqp 1.7 does not
// pass on the error of the detach that answers its Close, so only the
// subscription's survival shows there.
func TestAuthorizationDurableDelete(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{Realm: testRealm(t, "")}, engine.Config{})
	for _, user := range []string{"alice", "no-durable"} {
		for _, client := range []string{"go-amqp", "qpid-jms-frames"} {
			t.Run(user+"/"+client, func(t *testing.T) {
				topic, sub, cid := "prices.del."+user+"."+client, "sub", "del-"+user+"-"+client
				owner := dialAs(t, ts, "alice", cid)
				_ = receiver(t, session(t, owner), topic, durableOpts(sub))
				_ = owner.Close() // the link is not closed: the subscription stays
				waitFor(t, func() bool { return len(ts.eng.Connections()) == 0 }, "connection not gone")

				var err error
				if client == "go-amqp" {
					c := dialAs(t, ts, user, cid)
					r := receiver(t, session(t, c), topic, durableOpts(sub))
					ctx, cancel := ctx5()
					defer cancel()
					if err := r.Close(ctx); err != nil {
						t.Fatalf("close: %v", err)
					}
					defer stillWorks(t, c)
				} else {
					err = rawUnsubscribe(t, ts, user, cid, sub)
				}
				if user == "alice" {
					if err != nil || durableExists(ts, topic, sub) {
						t.Fatalf("delete by alice: %v (still there: %v)", err, durableExists(ts, topic, sub))
					}
					return
				}
				if client != "go-amqp" {
					refusedFor(t, err, user, engine.ActionDurable)
				}
				if !durableExists(ts, topic, sub) {
					t.Fatal("a refused delete deleted the durable subscription")
				}
			})
		}
	}
}

// rawUnsubscribe deletes durable subscription sub of client ID cid as
// Qpid JMS does, and returns the error of the answering detach.
func rawUnsubscribe(t *testing.T, ts *testServer, user, cid, sub string) error {
	t.Helper()
	rc := rawDial(t, ts.addr)
	if code := rc.saslLogin(t, mechInit("PLAIN", "\x00"+user+"\x00"+passwordOf(user))); code != types.SASLCodeOK {
		t.Fatalf("login as %s: %d", user, code)
	}
	rc.openAs(t, 0, cid)
	rc.beginRaw(t)
	rc.write(t, 0, &types.Attach{Name: sub, Handle: 0, Role: types.RoleReceiver, Target: types.NewTarget()}, nil)
	if a := rc.expect(t, "amqp:attach:list", 5*time.Second).Body.(*types.Attach); a.Source == nil {
		t.Fatalf("lookup of %s found nothing", sub)
	}
	rc.write(t, 0, &types.Detach{Handle: 0, Closed: true}, nil)
	d := rc.expect(t, "amqp:detach:list", 5*time.Second).Body.(*types.Detach)
	// The connection carries on: a new link attaches.
	rc.attachSender(t, 1, "", false)
	if d.Error != nil {
		return &amqp.Error{Condition: amqp.ErrCond(d.Error.Condition), Description: d.Error.Description}
	}
	return nil
}

// beginRaw begins session 0.
func (rc *rawClient) beginRaw(t *testing.T) {
	t.Helper()
	b := types.NewBegin()
	b.IncomingWindow, b.OutgoingWindow = 1000, 1000
	rc.write(t, 0, b, nil)
	rc.expect(t, "amqp:begin:list", 5*time.Second)
}

// attachSender attaches a link on which the client sends: to addr, or to
// the anonymous relay when addr is "", or to the coordinator.
func (rc *rawClient) attachSender(t *testing.T, handle uint32, addr string, coordinator bool) {
	t.Helper()
	var target types.TargetArchetype
	switch {
	case coordinator:
		target = &types.Coordinator{Capabilities: []types.TxnCapability{types.TxnCapabilityLocalTransactions}}
	default:
		tgt := types.NewTarget()
		tgt.Address = addr
		target = tgt
	}
	rc.write(t, 0, &types.Attach{Name: fmt.Sprintf("snd-%d", handle), Handle: types.Handle(handle), Role: types.RoleSender,
		Source: types.NewSource(), Target: target, InitialDeliveryCount: types.Some(types.SequenceNo(0))}, nil)
	a := rc.expect(t, "amqp:attach:list", 5*time.Second).Body.(*types.Attach)
	if a.Target == nil {
		t.Fatalf("attach of %q refused", addr)
	}
	rc.expect(t, "amqp:flow:list", 5*time.Second)
}

func toMessage(t *testing.T, to, body string) []byte {
	t.Helper()
	m := &types.Message{Value: &types.AMQPValue{Value: body}}
	if to != "" {
		p := types.NewProperties()
		p.To = to
		m.Properties = p
	}
	b, err := m.AppendAMQP(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sendRaw sends one unsettled delivery and returns its disposition's
// state.
func (rc *rawClient) sendRaw(t *testing.T, handle, id uint32, state types.DeliveryState, payload []byte) types.DeliveryState {
	t.Helper()
	rc.write(t, 0, transfer(handle, id, state), payload)
	f := rc.expect(t, "amqp:disposition:list", 5*time.Second)
	if d := f.Body.(*types.Disposition); uint32(d.First) != id {
		t.Fatalf("disposition of delivery %d, want %d", d.First, id)
	}
	return dispositionState(t, f)
}

func rejectedWith(st types.DeliveryState) *types.Error {
	if ts, ok := st.(*types.TransactionalState); ok {
		st, _ = ts.Outcome.(types.DeliveryState)
	}
	if r, ok := st.(*types.Rejected); ok && r.Error != nil {
		return r.Error
	}
	return nil
}

func accepted(st types.DeliveryState) bool {
	if ts, ok := st.(*types.TransactionalState); ok {
		_, ok := ts.Outcome.(*types.Accepted)
		return ok
	}
	_, ok := st.(*types.Accepted)
	return ok
}

// declareRaw declares a transaction on the coordinator link at handle.
func (rc *rawClient) declareRaw(t *testing.T, handle, id uint32) []byte {
	t.Helper()
	st := rc.sendRaw(t, handle, id, nil, valueMessage(t, &types.Declare{}))
	d, ok := st.(*types.Declared)
	if !ok {
		t.Fatalf("declare answered with %#v", st)
	}
	return d.TxnID.([]byte)
}

// rawTransactionalSend sends one message to queue in a transaction as
// user and commits; it returns the send's refusal as go-amqp would.
func rawTransactionalSend(t *testing.T, ts *testServer, user, queue string) error {
	t.Helper()
	rc := rawSASL(t, ts.addr, user, passwordOf(user))
	rc.beginRaw(t)
	rc.attachSender(t, 0, "", true)
	rc.attachSender(t, 1, "", false)
	txn := rc.declareRaw(t, 0, 0)
	st := rc.sendRaw(t, 1, 1, &types.TransactionalState{TxnID: txn}, toMessage(t, queue, "in txn"))
	if !accepted(rc.sendRaw(t, 0, 2, nil, valueMessage(t, &types.Discharge{TxnID: txn}))) {
		t.Fatal("commit not accepted")
	}
	if e := rejectedWith(st); e != nil {
		if n := queueCount(t, ts, queue); n != 0 {
			t.Fatalf("a refused transactional send was committed: %d on %s", n, queue)
		}
		return &amqp.Error{Condition: amqp.ErrCond(e.Condition), Description: e.Description}
	}
	if !accepted(st) {
		t.Fatalf("transactional send answered with %#v", st)
	}
	waitFor(t, func() bool { return queueCount(t, ts, queue) == 1 }, "committed send not on %s", queue)
	return nil
}

// TestDeniedTransferStoresNothing sends, on one connection, to a denied
// queue over the anonymous relay (unsettled, in a transaction, and
// pre-settled) between sends on an allowed named link: each denied message
// is refused with amqp:unauthorized-access (a rejected outcome, or for the
// pre-settled one a detach of the relay link), is stored nowhere and
// delivered to nobody, and the other links keep flowing.
func TestDeniedTransferStoresNothing(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{Realm: testRealm(t, "")}, engine.Config{})
	rc := rawSASL(t, ts.addr, "alice", alicePassword)
	rc.beginRaw(t)
	rc.attachSender(t, 0, "", false)           // the anonymous relay
	rc.attachSender(t, 1, "orders.raw", false) // allowed
	rc.attachSender(t, 2, "", true)            // the coordinator
	denied := func(st types.DeliveryState, what string) {
		t.Helper()
		e := rejectedWith(st)
		if e == nil || e.Condition != types.AMQPErrorUnauthorizedAccess || !strings.Contains(e.Description, "secret.q") {
			t.Fatalf("%s: answered with %#v, want rejected with amqp:unauthorized-access", what, st)
		}
	}
	ok := func(st types.DeliveryState, what string) {
		t.Helper()
		if !accepted(st) {
			t.Fatalf("%s: answered with %#v, want accepted", what, st)
		}
	}
	id := uint32(0)
	next := func() uint32 { id++; return id - 1 }

	denied(rc.sendRaw(t, 0, next(), nil, toMessage(t, "secret.q", "denied 1")), "relay to secret.q")
	ok(rc.sendRaw(t, 0, next(), nil, toMessage(t, "orders.raw", "1")), "relay to orders.raw after a refusal")
	ok(rc.sendRaw(t, 1, next(), nil, toMessage(t, "", "2")), "named link")

	txn := rc.declareRaw(t, 2, next())
	denied(rc.sendRaw(t, 0, next(), &types.TransactionalState{TxnID: txn}, toMessage(t, "secret.q", "denied 2")), "transactional relay to secret.q")
	ok(rc.sendRaw(t, 1, next(), &types.TransactionalState{TxnID: txn}, toMessage(t, "", "3")), "transactional send on the named link")
	ok(rc.sendRaw(t, 2, next(), nil, valueMessage(t, &types.Discharge{TxnID: txn})), "commit")

	// Pre-settled: no outcome to carry the refusal, so the relay link goes.
	tr := transfer(0, next(), nil)
	tr.Settled = types.Some(true)
	rc.write(t, 0, tr, toMessage(t, "secret.q", "denied 3"))
	d := rc.expect(t, "amqp:detach:list", 5*time.Second).Body.(*types.Detach)
	if d.Handle != 0 || d.Error == nil || d.Error.Condition != types.AMQPErrorUnauthorizedAccess {
		t.Fatalf("pre-settled denied transfer: detach %+v, want handle 0 with amqp:unauthorized-access", d)
	}
	rc.write(t, 0, &types.Detach{Handle: 0, Closed: true}, nil)
	ok(rc.sendRaw(t, 1, next(), nil, toMessage(t, "", "4")), "named link after the relay link was detached")

	// Everything allowed arrives, in order; nothing denied is anywhere.
	src := types.NewSource()
	src.Address = "orders.raw"
	rc.write(t, 0, &types.Attach{Name: "rcv", Handle: 3, Role: types.RoleReceiver, Source: src, Target: types.NewTarget()}, nil)
	rc.expect(t, "amqp:attach:list", 5*time.Second)
	rc.flow(t, 3, 0, 0, 10)
	for _, want := range []string{"1", "2", "3", "4"} {
		f := rc.expect(t, "amqp:transfer:list", 5*time.Second)
		var m types.Message
		if err := m.Decode(f.Payload); err != nil || m.Value == nil || m.Value.Value != want {
			t.Fatalf("received %#v (%v), want %q", m.Value, err, want)
		}
	}
	if _, err := ts.eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: "secret.q"}); err == nil {
		t.Fatal("queue secret.q exists after three refused sends")
	}
	for _, ci := range ts.eng.Connections() {
		if ci.User != "alice" {
			t.Fatalf("connection of user %q, want alice", ci.User)
		}
	}
}

// TestStampUserID: with engine.Config.StampUserID, the user-id (and a
// JMSXUserID property) a client sets is replaced by its login, and an
// anonymous client's messages carry none.
func TestStampUserID(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{Realm: testRealm(t, "anon")}, engine.Config{StampUserID: true})
	forged := func() *amqp.Message {
		return &amqp.Message{Value: "m", Properties: &amqp.MessageProperties{UserID: []byte("mallory")},
			ApplicationProperties: map[string]any{"JMSXUserID": "mallory"}}
	}
	alice := dialAs(t, ts, "alice", "")
	s := session(t, alice)
	send(t, sender(t, s, "orders.stamp", nil), forged())
	send(t, sender(t, session(t, ts.dial(t, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})), "orders.stamp", nil), forged())
	r := receiver(t, s, "orders.stamp", queueCaps())
	for _, want := range []string{"alice", ""} {
		m := recv(t, r)
		if got := string(m.Properties.UserID); got != want {
			t.Fatalf("user-id %q, want %q", got, want)
		}
		if v, ok := m.ApplicationProperties["JMSXUserID"]; ok {
			t.Fatalf("JMSXUserID %v travels as an application property", v)
		}
		accept(t, r, m)
	}
}

// TestUserIDCarried: with security off and no stamping, user-id is
// JMSXUserID and arrives as the client set it.
func TestUserIDCarried(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	s := session(t, ts.dial(t, nil))
	send(t, sender(t, s, "uid", nil), &amqp.Message{Value: "m", Properties: &amqp.MessageProperties{UserID: []byte("bob")}})
	m := recv(t, receiver(t, s, "uid", nil))
	if string(m.Properties.UserID) != "bob" {
		t.Fatalf("user-id %q, want bob", m.Properties.UserID)
	}
}

// TestDeniedPresettledSend: a pre-settled send to a denied queue has no
// outcome to carry the refusal, so the server detaches the sending link
// with amqp:unauthorized-access; go-amqp's next send on that link fails
// with it, and the connection's other links carry on.
func TestDeniedPresettledSend(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{Realm: testRealm(t, "")}, engine.Config{})
	c := dialAs(t, ts, "alice", "")
	s := session(t, c)
	relay := sender(t, s, "", &amqp.SenderOptions{SettlementMode: ptr(amqp.SenderSettleModeSettled)})
	ctx, cancel := ctx5()
	defer cancel()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = relay.Send(ctx, &amqp.Message{Properties: &amqp.MessageProperties{To: ptr("secret.presettled")}, Value: "denied"}, nil)
		if err == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	refusedFor(t, err, "alice", engine.ActionSend)
	if _, err := ts.eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: "secret.presettled"}); err == nil {
		t.Fatal("queue secret.presettled exists after refused sends")
	}
	stillWorks(t, c)
}
