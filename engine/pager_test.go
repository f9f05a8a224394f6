package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/records"
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
	for i := 0; b.pagedScheduled() != n-1; i++ {
		if i == 2000 {
			t.Fatalf("%d messages paged out, want %d", b.pagedScheduled(), n-1)
		}
		time.Sleep(5 * time.Millisecond)
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
	if got := b.pagedScheduled(); got != 20 {
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

// sendScheduled sends n persistent text messages "0".."n-1" to dest, due
// at base plus i ms, with property i.
func sendScheduled(t *testing.T, b *Broker, dest message.Destination, n int, base int64) {
	t.Helper()
	conn, _ := b.Connect(ConnectionOptions{})
	defer conn.Close()
	s, _ := conn.CreateSession(AutoAcknowledge)
	p, _ := s.CreateProducer(dest)
	for i := 0; i < n; i++ {
		m := &message.Message{Body: message.Body{Kind: message.BodyText, Data: []byte(fmt.Sprint(i))}}
		m.Props.SetUnchecked("i", message.IntValue(int32(i)))
		if err := p.Send(context.Background(), m, SendOptions{Set: SetDeliveryTime, DeliveryTime: base + int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitPaged waits until the broker keeps n scheduled messages only in the
// store.
func waitPaged(t *testing.T, b *Broker, n int) {
	t.Helper()
	for i := 0; b.pagedScheduled() != n; i++ {
		if i == 2000 {
			t.Fatalf("%d scheduled messages paged out, want %d", b.pagedScheduled(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// storeKeys counts the keys of a store bucket.
func storeKeys(t *testing.T, b *Broker, bucket string) int {
	t.Helper()
	n := 0
	if err := b.store.ForEach(bucket, func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// A paged-out scheduled message costs no memory of its own: not a
// scheduler entry, not a ref; the queue keeps only counts.
func TestPagedScheduledMessagesLeaveMemory(t *testing.T) {
	b, closeBroker := openPaging(t, t.TempDir())
	defer closeBroker()
	q := message.Destination{Kind: message.Queue, Name: "far"}
	const n = 3000
	sendScheduled(t, b, q, n, time.Now().Add(time.Hour).UnixMilli())
	waitPaged(t, b, n)
	if got := b.sched.len(); got != 0 {
		t.Fatalf("the scheduler holds %d entries, want 0", got)
	}
	qq := b.dests[q].q
	qq.mu.Lock()
	count, scheduled := qq.count, qq.scheduled
	qq.mu.Unlock()
	if count != n || scheduled != n {
		t.Fatalf("queue count %d, scheduled %d; want %d, %d", count, scheduled, n, n)
	}
	if got := storeKeys(t, b, records.SchedBucket(qq.bucket)); got != n {
		t.Fatalf("time index has %d entries, want %d", got, n)
	}
	for _, d := range b.Destinations() {
		if d.Destination() == q && (d.Paged != n || d.Scheduled != n || d.Messages != n) {
			t.Fatalf("destination info paged %d scheduled %d messages %d, want %d each", d.Paged, d.Scheduled, d.Messages, n)
		}
	}
}

// Browsing lists paged-out scheduled messages in due order; an
// administrator's delete and move with a selector reach them; a purge
// removes the rest, index entries and message records included.
func TestPagedScheduledAdminOperations(t *testing.T) {
	b, closeBroker := openPaging(t, t.TempDir())
	defer closeBroker()
	q := message.Destination{Kind: message.Queue, Name: "far"}
	other := message.Destination{Kind: message.Queue, Name: "elsewhere"}
	const n = 100
	base := time.Now().Add(time.Hour).UnixMilli()
	sendScheduled(t, b, q, n, base)
	waitPaged(t, b, n)
	page, err := b.BrowseMessages(Target{Dest: q}, BrowseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != n || len(page.Messages) != n {
		t.Fatalf("browse: total %d, %d listed, want %d", page.Total, len(page.Messages), n)
	}
	for i, e := range page.Messages {
		if !e.Scheduled || e.DeliverAt != base+int64(i) || string(e.Msg.Body.Data) != fmt.Sprint(i) {
			t.Fatalf("entry %d: scheduled %v at %d body %s; want scheduled at %d body %d", i, e.Scheduled, e.DeliverAt, e.Msg.Body.Data, base+int64(i), i)
		}
	}
	ctx := context.Background()
	if _, err := b.CreateDestination(ctx, other); err != nil {
		t.Fatal(err)
	}
	deleted, err := b.DeleteMessages(ctx, Target{Dest: q}, Filter{Selector: "i < 10"})
	if err != nil || deleted != 10 {
		t.Fatalf("delete i < 10: %d, %v; want 10", deleted, err)
	}
	moved, err := b.MoveMessages(ctx, Target{Dest: q}, Filter{Selector: "i >= 90"}, other)
	if err != nil || moved != 10 {
		t.Fatalf("move i >= 90: %d, %v; want 10", moved, err)
	}
	qq := b.dests[q].q
	if got := storeKeys(t, b, records.SchedBucket(qq.bucket)); got != n-20 {
		t.Fatalf("time index has %d entries after delete and move, want %d", got, n-20)
	}
	purged, err := b.Purge(ctx, q)
	if err != nil || purged != n-20 {
		t.Fatalf("purge: %d, %v; want %d", purged, err, n-20)
	}
	if got := storeKeys(t, b, records.SchedBucket(qq.bucket)); got != 0 {
		t.Fatalf("time index has %d entries after the purge", got)
	}
	if got := storeKeys(t, b, qq.bucket); got != 0 {
		t.Fatalf("queue bucket has %d ref records after the purge", got)
	}
	for _, d := range b.Destinations() {
		if d.Destination() == q && (d.Messages != 0 || d.Scheduled != 0 || d.Paged != 0) {
			t.Fatalf("after the purge: messages %d scheduled %d paged %d", d.Messages, d.Scheduled, d.Paged)
		}
		if d.Destination() == other && d.Messages != 10 {
			t.Fatalf("%s holds %d messages, want the 10 moved", other, d.Messages)
		}
	}
	// Only the moved messages remain in the store.
	if got := storeKeys(t, b, records.Messages); got != 10 {
		t.Fatalf("%d message records left, want the 10 moved", got)
	}
}

// Deleting a destination removes its paged-out scheduled messages from
// the store: nothing is left to come back at a restart.
func TestPagedScheduledDeletedWithDestination(t *testing.T) {
	dir := t.TempDir()
	b, closeBroker := openPaging(t, dir)
	q := message.Destination{Kind: message.Queue, Name: "far"}
	sendScheduled(t, b, q, 50, time.Now().Add(time.Hour).UnixMilli())
	waitPaged(t, b, 50)
	bucket := b.dests[q].q.bucket
	if err := b.DeleteDestination(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if got := storeKeys(t, b, records.Messages) + storeKeys(t, b, records.SchedBucket(bucket)) + storeKeys(t, b, bucket); got != 0 {
		t.Fatalf("%d records left after the deletion", got)
	}
	closeBroker()
	b, closeBroker = openPaging(t, dir)
	defer closeBroker()
	if got := b.pagedScheduled(); got != 0 {
		t.Fatalf("%d paged scheduled messages after a restart", got)
	}
}

// A far-scheduled message published to a topic with two durable
// subscriptions is paged out for both, survives a restart, reaches each
// on time, and its record goes once both have it acknowledged.
func TestPagedScheduledSharedByDurableSubscriptions(t *testing.T) {
	dir := t.TempDir()
	b, closeBroker := openPagingOpts(t, dir, 600*time.Millisecond, 200*time.Millisecond)
	topic := message.Destination{Kind: message.Topic, Name: "news"}
	subscribe := func(b *Broker, name string) (*Connection, *Consumer) {
		conn, err := b.Connect(ConnectionOptions{ClientID: "c-" + name})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := conn.CreateSession(AutoAcknowledge)
		c, err := s.CreateConsumer(topic, ConsumerOptions{SubscriptionName: name, Durable: true})
		if err != nil {
			t.Fatal(err)
		}
		return conn, c
	}
	for _, name := range []string{"a", "b"} {
		conn, _ := subscribe(b, name)
		_ = conn.Close()
	}
	due := time.Now().Add(2500 * time.Millisecond).UnixMilli()
	sendScheduled(t, b, topic, 5, due)
	waitPaged(t, b, 10)
	closeBroker()
	b, closeBroker = openPagingOpts(t, dir, 600*time.Millisecond, 200*time.Millisecond)
	defer closeBroker()
	if got := b.pagedScheduled(); got != 10 {
		t.Fatalf("after a restart %d paged, want 10 (5 per subscription)", got)
	}
	for _, name := range []string{"a", "b"} {
		conn, c := subscribe(b, name)
		_ = conn.Start()
		for i := 0; i < 5; i++ {
			d, ok, err := c.ReceiveTimeout(10 * time.Second)
			if err != nil || !ok {
				t.Fatalf("subscription %s message %d: ok=%v err=%v", name, i, ok, err)
			}
			if string(d.Msg.Body.Data) != fmt.Sprint(i) || time.Now().UnixMilli() < due+int64(i) {
				t.Fatalf("subscription %s got %s at %d, want %d due %d", name, d.Msg.Body.Data, time.Now().UnixMilli(), i, due+int64(i))
			}
		}
		_ = conn.Close()
		if name == "a" && storeKeys(t, b, records.Messages) != 5 {
			t.Fatalf("message records went while subscription b still holds them")
		}
	}
	for i := 0; storeKeys(t, b, records.Messages) != 0; i++ {
		if i == 1000 {
			t.Fatalf("%d message records left after both subscriptions acknowledged", storeKeys(t, b, records.Messages))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A store written while scheduled messages were kept in memory (paging
// off, or a broker stopped before it paged them) has them put into the
// time index at recovery from their ref records, without reading them.
func TestRecoveryPagesOutUnindexedScheduledMessages(t *testing.T) {
	dir := t.TempDir()
	b, closeBroker := openPagingOpts(t, dir, -1, 0)
	q := message.Destination{Kind: message.Queue, Name: "far"}
	due := time.Now().Add(3 * time.Second).UnixMilli()
	sendScheduled(t, b, q, 30, due)
	if got := b.pagedScheduled(); got != 0 {
		t.Fatalf("paging off, yet %d paged", got)
	}
	closeBroker()
	b, closeBroker = openPagingOpts(t, dir, 600*time.Millisecond, 200*time.Millisecond)
	defer closeBroker()
	if got := b.pagedScheduled(); got != 30 {
		t.Fatalf("after recovery %d paged, want 30", got)
	}
	if got := b.sched.len(); got != 0 {
		t.Fatalf("recovery put %d in the scheduler, want 0", got)
	}
	conn, _ := b.Connect(ConnectionOptions{})
	s, _ := conn.CreateSession(AutoAcknowledge)
	c, _ := s.CreateConsumer(q, ConsumerOptions{})
	_ = conn.Start()
	for i := 0; i < 30; i++ {
		d, ok, err := c.ReceiveTimeout(10 * time.Second)
		if err != nil || !ok || string(d.Msg.Body.Data) != fmt.Sprint(i) {
			t.Fatalf("message %d: ok=%v err=%v", i, ok, err)
		}
	}
}

// A deep queue whose window is full, with far-scheduled messages among
// its paged ready ones: the ready ones drain in order, the scheduled ones
// are not taken for paged ready messages, and come at their time.
func TestPagedScheduledAmongPagedReadyMessages(t *testing.T) {
	dir := t.TempDir()
	bs, err := boltstore.Open(filepath.Join(dir, "sluice.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(context.Background(), Config{Store: bs, AutoCreate: true, WindowMessages: 20,
		PageScheduledAfter: 600 * time.Millisecond, PageLookahead: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close(); _ = bs.Close() }()
	q := message.Destination{Kind: message.Queue, Name: "deep"}
	conn, _ := b.Connect(ConnectionOptions{})
	s, _ := conn.CreateSession(AutoAcknowledge)
	p, _ := s.CreateProducer(q)
	due := time.Now().Add(3 * time.Second).UnixMilli()
	const ready = 200
	for i := 0; i < ready; i++ {
		m := &message.Message{Body: message.Body{Kind: message.BodyText, Data: []byte(fmt.Sprint("r", i))}}
		if err := p.Send(context.Background(), m, SendOptions{}); err != nil {
			t.Fatal(err)
		}
		if i%20 == 10 {
			m := &message.Message{Body: message.Body{Kind: message.BodyText, Data: []byte(fmt.Sprint("s", i))}}
			if err := p.Send(context.Background(), m, SendOptions{Set: SetDeliveryTime, DeliveryTime: due}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitPaged(t, b, ready/20)
	c, _ := s.CreateConsumer(q, ConsumerOptions{})
	_ = conn.Start()
	for i := 0; i < ready; i++ {
		d, ok, err := c.ReceiveTimeout(5 * time.Second)
		if err != nil || !ok {
			t.Fatalf("ready message %d: ok=%v err=%v", i, ok, err)
		}
		if got := string(d.Msg.Body.Data); got != fmt.Sprint("r", i) {
			t.Fatalf("got %s, want r%d", got, i)
		}
	}
	for i := 0; i < ready/20; i++ {
		d, ok, err := c.ReceiveTimeout(10 * time.Second)
		if err != nil || !ok {
			t.Fatalf("scheduled message %d: ok=%v err=%v", i, ok, err)
		}
		if now := time.Now().UnixMilli(); now < due || string(d.Msg.Body.Data)[0] != 's' {
			t.Fatalf("got %s at %d, due %d", d.Msg.Body.Data, now, due)
		}
	}
}

// Browsing while the pager pages scheduled messages out lists each of them
// once: never both in memory and in the time index, never in neither. Each
// send here hands the pager one message while the browse that follows it
// runs.
func TestBrowseWhilePagingOutListsEachScheduledMessageOnce(t *testing.T) {
	b, closeBroker := openPaging(t, t.TempDir())
	defer closeBroker()
	q := message.Destination{Kind: message.Queue, Name: "far"}
	conn, _ := b.Connect(ConnectionOptions{})
	defer conn.Close()
	s, _ := conn.CreateSession(AutoAcknowledge)
	p, _ := s.CreateProducer(q)
	base := time.Now().Add(time.Hour).UnixMilli()
	const n = 40
	for i := 0; i < n; i++ {
		m := &message.Message{Body: message.Body{Kind: message.BodyText, Data: []byte(fmt.Sprint(i))}}
		if err := p.Send(context.Background(), m, SendOptions{Set: SetDeliveryTime, DeliveryTime: base + int64(i)}); err != nil {
			t.Fatal(err)
		}
		for _, sorted := range []string{"", "priority"} { // eachWaiting, then waiting
			page, err := b.BrowseMessages(Target{Dest: q}, BrowseOptions{Sort: sorted})
			if err != nil {
				t.Fatal(err)
			}
			seen := make(map[string]bool, len(page.Messages))
			for _, e := range page.Messages {
				if seen[e.Msg.ID] {
					t.Fatalf("after %d sends, browse (sort %q) lists %s twice", i+1, sorted, e.Msg.Body.Data)
				}
				seen[e.Msg.ID] = true
			}
			if len(seen) != i+1 {
				t.Fatalf("after %d sends, browse (sort %q) lists %d messages", i+1, sorted, len(seen))
			}
		}
	}
}
