package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store/boltstore"
	"github.com/sluicemq/sluice/engine/store/journal"
)

// openPaging opens a broker on a journaled bbolt store in dir that pages
// out messages scheduled more than 300 ms ahead.
func openPaging(t *testing.T, dir string) (*Broker, func()) {
	return openPagingOpts(t, dir, 300*time.Millisecond, 100*time.Millisecond)
}

// openPagingOpts is openPaging with the paging thresholds given (zero:
// the defaults).
func openPagingOpts(t *testing.T, dir string, after, ahead time.Duration) (*Broker, func()) {
	t.Helper()
	bs, err := boltstore.Open(filepath.Join(dir, "sluice.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := journal.Open(context.Background(), filepath.Join(dir, "journal"), bs, journal.Options{Validate: boltstore.Validate})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(context.Background(), Config{Store: js, AutoCreate: true,
		PageScheduledAfter: after, PageLookahead: ahead})
	if err != nil {
		t.Fatal(err)
	}
	return b, func() { _ = b.Close(); _ = js.Close() }
}

func TestScheduledPersistentMessagesArePagedOutAndBackInOnTime(t *testing.T) {
	dir := t.TempDir()
	b, closeBroker := openPaging(t, dir)
	defer func() { closeBroker() }()
	q := message.Destination{Kind: message.Queue, Name: "later"}
	conn, _ := b.Connect(ConnectionOptions{})
	s, _ := conn.CreateSession(AutoAcknowledge)
	p, _ := s.CreateProducer(q)
	base := time.Now().Add(time.Second).UnixMilli()
	const n = 50
	for i := 0; i < n; i++ {
		m := &message.Message{Body: message.Body{Kind: message.BodyText, Data: []byte(fmt.Sprint(i))}}
		mode := message.Persistent
		if i == n-1 {
			mode = message.NonPersistent // never paged: only in memory
		}
		if err := p.Send(context.Background(), m, SendOptions{Set: SetDeliveryTime | SetDeliveryMode, DeliveryTime: base + int64(i*10), DeliveryMode: mode}); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.pager.len(); got != n-1 {
		t.Fatalf("%d messages paged out, want %d", got, n-1)
	}
	if got := b.sched.len(); got != 1 {
		t.Fatalf("%d messages held in memory by the scheduler, want 1", got)
	}
	// Management sees paged messages too.
	infos := b.Destinations()
	for _, d := range infos {
		if d.Destination() == q && d.Scheduled != n {
			t.Fatalf("scheduled count %d, want %d", d.Scheduled, n)
		}
	}
	c, _ := s.CreateConsumer(q, ConsumerOptions{})
	_ = conn.Start()
	for i := 0; i < n; i++ {
		d, ok, err := c.ReceiveTimeout(5 * time.Second)
		if err != nil || !ok {
			t.Fatalf("message %d: ok=%v err=%v", i, ok, err)
		}
		due := base + int64(i*10)
		late := time.Now().UnixMilli() - due
		if string(d.Msg.Body.Data) != fmt.Sprint(i) {
			t.Fatalf("got %s, want %d (order)", d.Msg.Body.Data, i)
		}
		if late < -5 {
			t.Fatalf("message %d delivered %d ms early", i, -late)
		}
	}
}

func TestPagedMessagesSurviveRestartAndAreNotDecodedAtRecovery(t *testing.T) {
	dir := t.TempDir()
	b, closeBroker := openPaging(t, dir)
	q := message.Destination{Kind: message.Queue, Name: "later"}
	conn, _ := b.Connect(ConnectionOptions{})
	s, _ := conn.CreateSession(AutoAcknowledge)
	p, _ := s.CreateProducer(q)
	due := time.Now().Add(1500 * time.Millisecond).UnixMilli()
	for i := 0; i < 20; i++ {
		m := &message.Message{Body: message.Body{Kind: message.BodyText, Data: []byte(fmt.Sprint(i))}}
		if err := p.Send(context.Background(), m, SendOptions{Set: SetDeliveryTime, DeliveryTime: due + int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	closeBroker()
	b, closeBroker = openPaging(t, dir)
	defer func() { closeBroker() }()
	if got := b.pager.len(); got != 20 {
		t.Fatalf("after restart %d messages paged, want 20", got)
	}
	conn, _ = b.Connect(ConnectionOptions{})
	s, _ = conn.CreateSession(AutoAcknowledge)
	c, _ := s.CreateConsumer(q, ConsumerOptions{})
	_ = conn.Start()
	for i := 0; i < 20; i++ {
		d, ok, err := c.ReceiveTimeout(5 * time.Second)
		if err != nil || !ok {
			t.Fatalf("message %d after restart: ok=%v err=%v", i, ok, err)
		}
		if string(d.Msg.Body.Data) != fmt.Sprint(i) || time.Now().UnixMilli() < due {
			t.Fatalf("got %s at %d, due %d", d.Msg.Body.Data, time.Now().UnixMilli(), due)
		}
	}
}
