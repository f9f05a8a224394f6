package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// pagedConfig keeps windows small, so that a few thousand messages page.
func pagedConfig(window int) engine.Config {
	return engine.Config{WindowMessages: window}
}

func destInfo(t *testing.T, h *harness, d message.Destination) engine.DestinationInfo {
	t.Helper()
	in, err := h.b.DestinationInfo(d)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// sendN sends n persistent messages "0".."n-1" with priorities from prio.
func sendN(t *testing.T, s *engine.Session, d message.Destination, n int, prio func(i int) uint8, props func(i int) (string, message.Value)) {
	t.Helper()
	p, err := s.CreateProducer(d)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		m := text(strconv.Itoa(i))
		o := engine.SendOptions{}
		if prio != nil {
			o.Set |= engine.SetPriority
			o.Priority = prio(i)
		}
		if props != nil {
			name, v := props(i)
			m.Props.SetUnchecked(name, v)
		}
		if err := p.Send(context.Background(), m, o); err != nil {
			t.Fatal(err)
		}
	}
}

// drain receives and acknowledges (auto) until nothing comes for wait.
func drainBodies(t *testing.T, c *engine.Consumer, max int) []string {
	t.Helper()
	var out []string
	for len(out) < max {
		d, ok, err := c.ReceiveTimeout(2 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		out = append(out, body(d))
	}
	return out
}

func seq(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// A deep queue keeps only its window in memory, counts every message, and
// delivers all of them once, in order.
func TestPagedQueueDrainsInOrder(t *testing.T) {
	h := newPersistent(t, "", pagedConfig(50))
	q := message.Destination{Kind: message.Queue, Name: "deep"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	const n = 2000
	sendN(t, s, q, n, nil, nil)
	in := destInfo(t, h, q)
	if in.Messages != n || in.Ready != n {
		t.Fatalf("depth %d, ready %d; want %d", in.Messages, in.Ready, n)
	}
	if in.Paged < n-50 || in.Paged > n {
		t.Fatalf("paged %d of %d with a window of 50", in.Paged, n)
	}
	cons := consumer(t, h.session(c, engine.AutoAcknowledge), q, engine.ConsumerOptions{Prefetch: 10})
	_ = c.Start()
	got := drainBodies(t, cons, n+1)
	if !slices.Equal(got, seq(n)) {
		t.Fatalf("received %d messages, first out of order at %d", len(got), firstDiff(got, seq(n)))
	}
	eventually(t, "the queue to be empty", func() bool { in := destInfo(t, h, q); return in.Messages == 0 && in.Paged == 0 })
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Priorities keep their order across the window: every message of a
// higher priority, in memory or not, goes before any of a lower one.
func TestPagedPriorityOrder(t *testing.T) {
	h := newPersistent(t, "", pagedConfig(40))
	q := message.Destination{Kind: message.Queue, Name: "prio"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	const n = 1500
	rng := rand.New(rand.NewPCG(1, 2))
	prios := make([]uint8, n)
	for i := range prios {
		prios[i] = uint8(rng.IntN(10))
	}
	sendN(t, s, q, n, func(i int) uint8 { return prios[i] }, nil)
	if in := destInfo(t, h, q); in.Paged == 0 {
		t.Fatal("nothing paged")
	}
	want := seq(n)
	slices.SortStableFunc(want, func(a, b string) int {
		ia, _ := strconv.Atoi(a)
		ib, _ := strconv.Atoi(b)
		return int(prios[ib]) - int(prios[ia])
	})
	cons := consumer(t, h.session(c, engine.AutoAcknowledge), q, engine.ConsumerOptions{Prefetch: 1})
	_ = c.Start()
	got := drainBodies(t, cons, n+1)
	if !slices.Equal(got, want) {
		i := firstDiff(got, want)
		t.Fatalf("received %d of %d; first difference at %d: got %v, want %v", len(got), n, i, got[i:min(i+5, len(got))], want[i:min(i+5, len(want))])
	}
}

// A restart reads only the window back: the rest stays paged, and the
// queue drains the same.
func TestPagedQueueSurvivesRestart(t *testing.T) {
	h := newPersistent(t, "", pagedConfig(30))
	q := message.Destination{Kind: message.Queue, Name: "restart"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	const n = 1000
	sendN(t, s, q, n, func(i int) uint8 { return uint8(4 + i%2) }, nil)
	// Take a few, so that the paging point is not the start.
	cons := consumer(t, h.session(c, engine.AutoAcknowledge), q, engine.ConsumerOptions{Prefetch: 1})
	_ = c.Start()
	first := drainBodies(t, cons, 100)
	_ = c.Close()
	h.restart()
	in := destInfo(t, h, q)
	if in.Messages != n-100 {
		t.Fatalf("after restart: depth %d, want %d", in.Messages, n-100)
	}
	if in.Paged < n-100-30-2 {
		t.Fatalf("after restart: %d paged, want all but the window of 30", in.Paged)
	}
	c2 := h.conn(engine.ConnectionOptions{})
	cons2 := consumer(t, h.session(c2, engine.AutoAcknowledge), q, engine.ConsumerOptions{Prefetch: 5})
	_ = c2.Start()
	rest := drainBodies(t, cons2, n)
	all := append(first, rest...)
	var odd, even []string
	for i := 1; i < n; i += 2 {
		odd = append(odd, strconv.Itoa(i))
	}
	for i := 0; i < n; i += 2 {
		even = append(even, strconv.Itoa(i))
	}
	want := append(odd, even...)
	// The first 100 came in priority order among what was sent; so do the
	// rest: compare as sets per priority, in order within each.
	got5, got4 := filterBodies(all, func(i int) bool { return i%2 == 1 }), filterBodies(all, func(i int) bool { return i%2 == 0 })
	if !slices.Equal(got5, odd) || !slices.Equal(got4, even) || len(all) != len(want) {
		t.Fatalf("after restart received %d of %d; out of order within a priority", len(all), n)
	}
	h.restart()
	if in := destInfo(t, h, q); in.Messages != 0 {
		t.Fatalf("drained queue holds %d after a restart", in.Messages)
	}
}

func filterBodies(bs []string, keep func(int) bool) []string {
	var out []string
	for _, b := range bs {
		i, _ := strconv.Atoi(b)
		if keep(i) {
			out = append(out, b)
		}
	}
	return out
}

// A consumer whose selector matches only messages deep in the store gets
// them, while a plain consumer of the same queue keeps draining.
func TestPagedSelectorConsumerFindsDeepMessages(t *testing.T) {
	h := newPersistent(t, "", pagedConfig(20))
	q := message.Destination{Kind: message.Queue, Name: "sel"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	const n = 3000
	red := func(i int) bool { return i >= n-10 || i == 1500 }
	sendN(t, s, q, n, nil, func(i int) (string, message.Value) {
		if red(i) {
			return "color", message.StringValue("red")
		}
		return "color", message.StringValue("blue")
	})
	sel := consumer(t, h.session(c, engine.AutoAcknowledge), q, engine.ConsumerOptions{Selector: "color = 'red'", Prefetch: 4})
	_ = c.Start()
	var got []string
	for range 11 {
		got = append(got, body(recv(t, sel)))
	}
	want := []string{"1500"}
	for i := n - 10; i < n; i++ {
		want = append(want, strconv.Itoa(i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("selector consumer got %v, want %v", got, want)
	}
	// The blue ones are all still there, in order, for a plain consumer.
	plain := consumer(t, h.session(c, engine.AutoAcknowledge), q, engine.ConsumerOptions{Prefetch: 10})
	rest := drainBodies(t, plain, n)
	var blue []string
	for i := range n {
		if !red(i) {
			blue = append(blue, strconv.Itoa(i))
		}
	}
	if !slices.Equal(rest, blue) {
		t.Fatalf("plain consumer got %d, want %d blue ones in order (first difference at %d)", len(rest), len(blue), firstDiff(rest, blue))
	}
}

// Browsing, the administrator's listing, moving and purging see the
// messages that are only in the store.
func TestPagedBrowseMoveAndPurge(t *testing.T) {
	h := newPersistent(t, "", pagedConfig(25))
	q := message.Destination{Kind: message.Queue, Name: "adm"}
	to := message.Destination{Kind: message.Queue, Name: "adm.moved"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	const n = 600
	sendN(t, s, q, n, nil, func(i int) (string, message.Value) { return "n", message.IntValue(int32(i)) })
	if _, err := h.b.CreateDestination(context.Background(), to); err != nil {
		t.Fatal(err)
	}
	br, err := s.CreateBrowser(q, "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := br.Enumeration()
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for e.HasMoreElements() {
		d, _ := e.NextElement()
		seen = append(seen, body(d))
	}
	if !slices.Equal(seen, seq(n)) {
		t.Fatalf("browser saw %d of %d in order (first difference at %d)", len(seen), n, firstDiff(seen, seq(n)))
	}
	page, err := h.b.BrowseMessages(engine.QueueTarget("adm"), engine.BrowseOptions{Selector: "n >= 590"})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 10 {
		t.Fatalf("listing with n >= 590: %d, want 10", page.Total)
	}
	// Move every tenth message, most of them paged.
	moved, err := h.b.MoveMessages(context.Background(), engine.QueueTarget("adm"), engine.Filter{Selector: "n / 10 * 10 = n"}, to)
	if err != nil || moved != n/10 {
		t.Fatalf("moved %d (%v), want %d", moved, err, n/10)
	}
	if got, want := h.depth(to), n/10; got != want {
		t.Fatalf("destination holds %d, want %d", got, want)
	}
	if in := destInfo(t, h, q); in.Messages != n-n/10 {
		t.Fatalf("source holds %d after the move, want %d", in.Messages, n-n/10)
	}
	purged, err := h.b.Purge(context.Background(), q)
	if err != nil || purged != n-n/10 {
		t.Fatalf("purged %d (%v), want %d", purged, err, n-n/10)
	}
	h.restart()
	if in := destInfo(t, h, q); in.Messages != 0 {
		t.Fatalf("purged queue holds %d after a restart", in.Messages)
	}
	if in := destInfo(t, h, to); in.Messages != int64(n/10) {
		t.Fatalf("moved-to queue holds %d after a restart, want %d", in.Messages, n/10)
	}
	// Deleting a destination with paged messages leaves nothing behind.
	if err := h.b.DeleteDestination(context.Background(), to); err != nil {
		t.Fatal(err)
	}
	h.restart()
	left := 0
	_ = h.st.ForEach("msgs", func(k, _ []byte) error { left++; return nil })
	if left != 0 {
		t.Fatalf("%d message records left after purge and delete", left)
	}
}

// Durable subscriptions page as queues do, sharing each message's record:
// both drain everything, and the store is empty after.
func TestPagedDurableSubscriptionsShareMessages(t *testing.T) {
	h := newPersistent(t, "", pagedConfig(30))
	topic := message.Destination{Kind: message.Topic, Name: "news"}
	c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
	subs := make([]*engine.Consumer, 2)
	for i := range subs {
		subs[i] = consumer(t, h.session(c, engine.AutoAcknowledge), topic, engine.ConsumerOptions{Durable: true, SubscriptionName: fmt.Sprint("sub", i), Prefetch: 3})
	}
	p := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	const n = 500
	sendN(t, p, topic, n, nil, nil)
	// The first subscription drains half before a restart, the second none.
	_ = c.Start()
	first := drainBodies(t, subs[0], n/2)
	_ = c.Close()
	h.restart()
	c2 := h.conn(engine.ConnectionOptions{ClientID: "cid"})
	var got [2][]string
	got[0] = first
	for i := range 2 {
		cons := consumer(t, h.session(c2, engine.AutoAcknowledge), topic, engine.ConsumerOptions{Durable: true, SubscriptionName: fmt.Sprint("sub", i), Prefetch: 3})
		_ = c2.Start()
		got[i] = append(got[i], drainBodies(t, cons, n)...)
	}
	for i := range 2 {
		if !slices.Equal(got[i], seq(n)) {
			t.Fatalf("subscription %d got %d of %d in order (first difference at %d)", i, len(got[i]), n, firstDiff(got[i], seq(n)))
		}
	}
	_ = c2.Close()
	h.restart()
	left := 0
	_ = h.st.ForEach("msgs", func(k, _ []byte) error { left++; return nil })
	if left != 0 {
		t.Fatalf("%d message records left after both subscriptions drained", left)
	}
}

// Paged messages that expire while in the store are not delivered.
func TestPagedExpiredNotDelivered(t *testing.T) {
	clock := newClock()
	cfg := pagedConfig(10)
	cfg.Now = clock.Now
	h := newPersistent(t, "", cfg)
	q := message.Destination{Kind: message.Queue, Name: "ttl"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	p, err := s.CreateProducer(q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		o := engine.SendOptions{}
		if i%2 == 1 {
			o = engine.SendOptions{Set: engine.SetTimeToLive, TimeToLive: time.Minute}
		}
		if err := p.Send(context.Background(), text(strconv.Itoa(i)), o); err != nil {
			t.Fatal(err)
		}
	}
	clock.Add(2 * time.Minute)
	cons := consumer(t, h.session(c, engine.AutoAcknowledge), q, engine.ConsumerOptions{Prefetch: 5})
	_ = c.Start()
	got := drainBodies(t, cons, 100)
	want := filterBodies(seq(100), func(i int) bool { return i%2 == 0 })
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want the 50 that never expire", got)
	}
	eventually(t, "expired ones counted", func() bool { in := destInfo(t, h, q); return in.Expired == 50 && in.Messages == 0 })
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A backlog many times the window costs memory for the window only: before
// and after a restart.
func TestPagedBacklogMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 40 MiB")
	}
	cfg := pagedConfig(256)
	h := newPersistent(t, "", cfg)
	q := message.Destination{Kind: message.Queue, Name: "mem"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	p, err := s.CreateProducer(q)
	if err != nil {
		t.Fatal(err)
	}
	const n, size = 40000, 1024
	body := make([]byte, size)
	base := liveHeap()
	for i := range n {
		m := &message.Message{Body: message.Body{Kind: message.BodyBytes, Data: body}}
		m.Props.SetUnchecked("i", message.IntValue(int32(i)))
		if err := p.Send(context.Background(), m, engine.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	body = nil
	check := func(when string) {
		t.Helper()
		in := destInfo(t, h, q)
		if in.Messages != n {
			t.Fatalf("%s: depth %d, want %d", when, in.Messages, n)
		}
		// The bodies alone are 40 MiB; the window holds 256 of them.
		grown := int64(liveHeap()) - int64(base)
		t.Logf("%s: heap grew by %.1f MiB with %d of %d messages paged", when, float64(grown)/(1<<20), in.Paged, n)
		if grown > 12<<20 {
			t.Fatalf("%s: the heap grew by %.1f MiB for a backlog of %d × %d B with a window of 256", when, float64(grown)/(1<<20), n, size)
		}
	}
	check("after the fill")
	_ = c.Close()
	h.restart()
	check("after a restart")
	c2 := h.conn(engine.ConnectionOptions{})
	cons := consumer(t, h.session(c2, engine.AutoAcknowledge), q, engine.ConsumerOptions{Prefetch: 100})
	_ = c2.Start()
	for i := range n {
		d := recv(t, cons)
		if v, _ := d.Msg.Props.Get("i"); v.N != int64(i) {
			t.Fatalf("message %d came as %d-th", v.N, i)
		}
	}
}

// Non-persistent messages sent behind a backlog wait in the store too (so
// that a queue nobody drains does not grow in memory), in order with the
// persistent ones, and do not outlive a restart.
func TestPagedNonPersistentBehindBacklog(t *testing.T) {
	h := newPersistent(t, "", pagedConfig(20))
	q := message.Destination{Kind: message.Queue, Name: "np"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	p, err := s.CreateProducer(q)
	if err != nil {
		t.Fatal(err)
	}
	const n = 600
	np := engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: message.NonPersistent}
	for i := range n {
		o := engine.SendOptions{}
		if i%2 == 1 {
			o = np
		}
		if _, err := p.SendToAsync(context.Background(), q, text(strconv.Itoa(i)), o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the backlog to be paged", func() bool { in := destInfo(t, h, q); return in.Messages == n && in.Paged >= n-60 })
	cons := consumer(t, h.session(c, engine.AutoAcknowledge), q, engine.ConsumerOptions{Prefetch: 5})
	_ = c.Start()
	got := drainBodies(t, cons, 100)
	if !slices.Equal(got, seq(100)) {
		t.Fatalf("first 100: %v", got)
	}
	_ = c.Close()
	h.restart()
	// The persistent ones are left, in order; the non-persistent ones went.
	c2 := h.conn(engine.ConnectionOptions{})
	cons2 := consumer(t, h.session(c2, engine.AutoAcknowledge), q, engine.ConsumerOptions{Prefetch: 5})
	_ = c2.Start()
	rest := drainBodies(t, cons2, n)
	want := filterBodies(seq(n)[100:], func(i int) bool { return i%2 == 0 })
	// Those still in memory at the restart are gone as well; those in the
	// store must not come back.
	for _, b := range rest {
		if i, _ := strconv.Atoi(b); i%2 == 1 {
			t.Fatalf("non-persistent message %s came back after a restart", b)
		}
	}
	if !slices.Equal(rest, want) {
		t.Fatalf("after restart got %d persistent messages, want %d in order", len(rest), len(want))
	}
	h.restart()
	left := 0
	_ = h.st.ForEach("msgs", func(k, _ []byte) error { left++; return nil })
	if left != 0 {
		t.Fatalf("%d message records left", left)
	}
}

// The expiry scan finds expired messages among those kept only in the
// store, without a consumer reading them back.
func TestPagedExpiryScan(t *testing.T) {
	clock := newClock()
	cfg := pagedConfig(10)
	cfg.Now = clock.Now
	cfg.ExpiryScanInterval = 20 * time.Millisecond
	h := newPersistent(t, "", cfg)
	q := message.Destination{Kind: message.Queue, Name: "ttlscan"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	p, err := s.CreateProducer(q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		o := engine.SendOptions{}
		if i%2 == 1 {
			o = engine.SendOptions{Set: engine.SetTimeToLive, TimeToLive: time.Minute}
		}
		if err := p.Send(context.Background(), text(strconv.Itoa(i)), o); err != nil {
			t.Fatal(err)
		}
	}
	if in := destInfo(t, h, q); in.Paged < 150 || in.Expired != 0 {
		t.Fatalf("before expiry: %+v", in)
	}
	clock.Add(2 * time.Minute)
	eventually(t, "the paged messages to expire", func() bool {
		in := destInfo(t, h, q)
		return in.Expired == 100 && in.Messages == 100
	})
	h.restart()
	c2 := h.conn(engine.ConnectionOptions{})
	cons := consumer(t, h.session(c2, engine.AutoAcknowledge), q, engine.ConsumerOptions{Prefetch: 5})
	_ = c2.Start()
	got := drainBodies(t, cons, 200)
	if want := filterBodies(seq(200), func(i int) bool { return i%2 == 0 }); !slices.Equal(got, want) {
		t.Fatalf("after the scan and a restart got %v", got)
	}
}

// Deleting a queue removes the messages it kept in the store for later
// (scheduled far ahead), not only when they would have been due: a restart
// before then would leave them behind.
func TestDeleteRemovesScheduledPagedMessages(t *testing.T) {
	h := newPersistent(t, "", engine.Config{})
	q := message.Destination{Kind: message.Queue, Name: "later.deleted"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	p, err := s.CreateProducer(q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := p.Send(context.Background(), text(strconv.Itoa(i)), engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if in := destInfo(t, h, q); in.Scheduled != 20 {
		t.Fatalf("scheduled %d, want 20", in.Scheduled)
	}
	if err := h.b.DeleteDestination(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	h.restart()
	left := 0
	_ = h.st.ForEach("msgs", func(k, _ []byte) error { left++; return nil })
	if left != 0 {
		t.Fatalf("%d message records left after deleting a queue of scheduled messages", left)
	}
}
