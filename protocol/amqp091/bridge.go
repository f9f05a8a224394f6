package amqp091

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// bridge carries the messages of a JMS topic to a queue bound to amq.topic
// with the topic's name: an engine subscription on the topic whose
// listener sends each message on to the queue, then acknowledges it
// (at least once: a crash between the two sends it again). A durable
// queue's bridge has a durable subscription of the server's bridge
// connection, so the topic's messages wait for the queue while the broker
// is down; an exclusive queue's bridge is a plain subscription of the
// queue's own connection, and ends with it.
//
// An exclusive queue's bridge sends what its own connection published on
// that connection, and everything else on the server's bridge connection,
// so that each message in the queue names as its producer the connection
// it came from as far as no-local goes (consumer.local): a no-local
// consumer of the queue skips what its connection published to the topic.
type bridge struct {
	x       *exchanges
	sess    *engine.Session // the subscription (and its sends, for a durable queue or local messages)
	out     *engine.Session // an exclusive queue's sends of other connections' messages, or nil
	subName string          // the durable subscription, or ""
	once    sync.Once
}

// bridgeSubscription names the durable subscription of queue's binding to
// topic key: "amq.topic/KEY>QUEUE~HASH", with the characters subscription
// names may not hold (, = : * % ?) as '_', and a hash of the exact pair
// so that two pairs never share a name.
func bridgeSubscription(queue, key string) string {
	clean := strings.NewReplacer(",", "_", "=", "_", ":", "_", "*", "_", "%", "_", "?", "_")
	sum := sha256.Sum256([]byte(key + "\x00" + queue))
	return "amq.topic/" + clean.Replace(key) + ">" + clean.Replace(queue) + "~" + hex.EncodeToString(sum[:6])
}

// bridgeConnection returns the server's bridge connection, connecting it
// first.
func (x *exchanges) bridgeConnection() (*engine.Connection, error) {
	x.bridgeMu.Lock()
	defer x.bridgeMu.Unlock()
	if x.bridgeConn != nil {
		return x.bridgeConn, nil
	}
	conn, err := x.eng.Connect(engine.ConnectionOptions{ClientID: bridgeClientID, Protocol: "amqp091", RemoteAddr: "bridge"})
	if err != nil {
		return nil, err
	}
	if err := conn.Start(); err != nil {
		_ = conn.Close()
		return nil, err
	}
	x.bridgeConn = conn
	return conn, nil
}

// closeBridges closes the bridge connection (server shutdown); durable
// subscriptions stay.
func (x *exchanges) closeBridges() {
	x.bridgeMu.Lock()
	defer x.bridgeMu.Unlock()
	if x.bridgeConn != nil {
		_ = x.bridgeConn.Close()
		x.bridgeConn = nil
	}
}

// startBridge starts the bridge of binding b of amq.topic (c: the binding
// connection, nil on recovery).
func (x *exchanges) startBridge(ctx context.Context, c *conn, b *binding) (*bridge, error) {
	topic := message.Destination{Kind: message.Topic, Name: b.key}
	if _, err := x.eng.CreateDestination(ctx, topic); err != nil {
		return nil, err
	}
	var ec *engine.Connection
	opts := engine.ConsumerOptions{Prefetch: 256, CreditMode: engine.CreditOnAck}
	br := &bridge{x: x}
	if b.owner != nil {
		ec = b.owner.eng
	} else {
		var err error
		if ec, err = x.bridgeConnection(); err != nil {
			return nil, err
		}
		br.subName = bridgeSubscription(b.queue, b.key)
		opts.SubscriptionName, opts.Durable = br.subName, true
	}
	sess, err := ec.CreateSession(engine.IndividualAcknowledge)
	if err != nil {
		return nil, err
	}
	cons, err := sess.CreateConsumer(topic, opts)
	if err != nil {
		_ = sess.Close()
		return nil, err
	}
	prod, err := sess.CreateProducer(b.dest)
	if err != nil {
		_ = sess.Close()
		return nil, err
	}
	br.sess = sess
	foreign := prod // the producer of messages other connections published
	if b.owner != nil {
		if foreign, err = br.foreignProducer(b.dest); err != nil {
			_ = sess.Close()
			return nil, err
		}
	}
	dest := b.dest
	err = cons.SetListener(func(d message.Delivery) {
		m := d.Msg.Clone()
		o := engine.SendOptions{Set: engine.SetDeliveryMode | engine.SetPriority | engine.SetExpiration | engine.SetRedeliveryLimit,
			DeliveryMode: m.DeliveryMode, Priority: m.Priority, Expiration: m.Expiration, RedeliveryLimit: m.RedeliveryLimit}
		p := prod
		if d.Msg.Producer != ec.ID() {
			p = foreign
		}
		if err := p.Send(context.Background(), m, o); err != nil {
			x.log.Warn("amqp091 bridge: message not passed on", slog.String("topic", topic.Name),
				slog.String("queue", dest.Name), slog.Any("err", err))
			if engine.CodeOf(err) == engine.CodeInvalidDestination {
				// The queue was deleted by another protocol or an
				// administrator: its bindings go (not from this
				// listener, which the bridge's stop waits for).
				go x.unbindQueue(dest)
				_ = sess.Settle(context.Background(), d.Tag, engine.Released)
				return
			}
			_ = sess.Settle(context.Background(), d.Tag, engine.Failed)
			return
		}
		_, _ = sess.AcknowledgeConfirm(d.Tag)
	})
	if err != nil {
		br.closeSessions()
		return nil, err
	}
	return br, nil
}

// foreignProducer opens br.out, a session of the server's bridge
// connection, and its producer to dest.
func (br *bridge) foreignProducer(dest message.Destination) (*engine.Producer, error) {
	bc, err := br.x.bridgeConnection()
	if err != nil {
		return nil, err
	}
	out, err := bc.CreateSession(engine.AutoAcknowledge)
	if err != nil {
		return nil, err
	}
	p, err := out.CreateProducer(dest)
	if err != nil {
		_ = out.Close()
		return nil, err
	}
	br.out = out
	return p, nil
}

// closeSessions closes the subscription's session (which waits for its
// listener), then the session it sends other connections' messages on.
func (br *bridge) closeSessions() {
	_ = br.sess.Close()
	if br.out != nil {
		_ = br.out.Close()
	}
}

// stop ends the bridge; deleteSub also deletes its durable subscription
// (the binding is gone, not just the server).
func (br *bridge) stop(deleteSub bool) {
	br.once.Do(func() {
		br.closeSessions()
		if deleteSub && br.subName != "" {
			if err := br.x.eng.DeleteSubscription(context.Background(), bridgeClientID, br.subName); err != nil {
				br.x.log.Warn("amqp091 bridge: subscription not deleted", slog.String("subscription", br.subName), slog.Any("err", err))
			}
		}
	})
}
