package conformance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mode says which protocol columns a scenario runs in.
type Mode uint8

const (
	// Single runs the scenario once per protocol, on that protocol alone.
	Single Mode = iota
	// Cross runs the scenario once per ordered pair of distinct protocols:
	// T.P is the first (the sender, usually), T.Q the second.
	Cross
)

// Scenario is one conformance check: data describing it plus the steps.
type Scenario struct {
	// ID is "area/name", unique.
	ID string
	// Title is a one-line summary.
	Title string
	// Checks names the section of WebLogic JMS "Managing Your Applications" or
	// the specification rule checked.
	Checks string
	// Expect is the JMS outcome expected.
	Expect string
	// Needs are the broker configuration, features and runner capabilities
	// the scenario relies on.
	Needs []Need
	// Mode is Single or Cross.
	Mode Mode
	// Run performs the steps; T's methods end the scenario on failure.
	Run func(t *T)
}

// Area is the part of the ID before the first slash.
func (s *Scenario) Area() string {
	a, _, _ := strings.Cut(s.ID, "/")
	return a
}

// T is the state of one scenario run on one column: the drivers, the
// profile, unique names, and the connections to close afterwards.
type T struct {
	ctx context.Context
	// P is the protocol driver of a Single scenario, and the first one of
	// a Cross scenario; Q is the second (nil for Single).
	P, Q    Driver
	prof    *Profile
	runID   string
	seq     int
	quiet   time.Duration
	slack   float64
	restart func(ctx context.Context) error
	admin   Admin

	mu    sync.Mutex
	conns []Conn
	steps []string
	notes []string
}

// outcome of a scenario run, carried by panics out of T's methods.
type stop struct {
	status Status
	detail string
}

// Ctx is the scenario's context (it has the scenario's deadline).
func (t *T) Ctx() context.Context { return t.ctx }

// Step records what the scenario is doing, for failure reports.
func (t *T) Step(format string, args ...any) {
	t.mu.Lock()
	t.steps = append(t.steps, fmt.Sprintf(format, args...))
	t.mu.Unlock()
}

// Note records an observation shown with the result even when it passes.
func (t *T) Note(format string, args ...any) {
	t.mu.Lock()
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
	t.mu.Unlock()
}

func (t *T) lastStep() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.steps) == 0 {
		return ""
	}
	return t.steps[len(t.steps)-1]
}

// Fatalf ends the scenario as failed.
func (t *T) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if s := t.lastStep(); s != "" {
		msg = s + ": " + msg
	}
	panic(stop{status: Fail, detail: msg})
}

// NotExpressible ends the scenario as not expressible over the protocol.
func (t *T) NotExpressible(format string, args ...any) {
	panic(stop{status: NotExpressibleStatus, detail: fmt.Sprintf(format, args...)})
}

// check ends the scenario on err: not expressible when the driver says so,
// failed otherwise.
func (t *T) check(err error, what string) {
	if err == nil {
		return
	}
	var ne *NotExpressibleError
	if errors.As(err, &ne) {
		panic(stop{status: NotExpressibleStatus, detail: ne.Reason})
	}
	t.Fatalf("%s: %v", what, err)
}

// Must ends the scenario when err is not nil.
func (t *T) Must(err error, what string) { t.check(err, what) }

// Within scales a tolerance by the profile's slack.
func (t *T) Within(d time.Duration) time.Duration {
	return time.Duration(float64(d) * t.slack)
}

// Quiet is how long the scenario waits to conclude no (further) message
// comes.
func (t *T) Quiet() time.Duration { return t.quiet }

// Name returns a name unique to this run of this scenario.
func (t *T) Name(base string) string {
	t.mu.Lock()
	t.seq++
	n := t.seq
	t.mu.Unlock()
	return fmt.Sprintf("%s-%s-%d", base, t.runID, n)
}

// Queue returns a fresh queue, under the prefix of the configuration need
// (none: the plain "conf.q." prefix).
func (t *T) Queue(need ...Need) Dest {
	return Dest{Kind: Queue, Name: t.prefix(need) + t.Name("q")}
}

// Topic returns a fresh topic.
func (t *T) Topic() Dest {
	return Dest{Kind: Topic, Name: "conf.t." + t.Name("t")}
}

func (t *T) prefix(need []Need) string {
	if len(need) == 0 {
		return "conf.q."
	}
	pv, ok := t.prof.Provides[need[0]]
	if !ok {
		t.Fatalf("scenario uses %s without declaring it", need[0])
	}
	return pv.Prefix
}

// ErrorQueue returns the error destination the profile configured for need.
func (t *T) ErrorQueue(need Need) Dest {
	pv, ok := t.prof.Provides[need]
	if !ok || pv.ErrorQueue == "" {
		t.Fatalf("profile %s has no error destination for %s", t.prof.Name, need)
	}
	return Dest{Kind: Queue, Name: pv.ErrorQueue}
}

// Tag is a value unique to this run: scenarios that read shared
// destinations (error destinations) put it in a property and select on it.
func (t *T) Tag() string { return "r" + strings.ReplaceAll(t.runID, "-", "") }

// Dial connects over P.
func (t *T) Dial(clientID ...string) Conn { return t.DialOn(t.P, clientID...) }

// DialQ connects over Q (the second protocol of a Cross scenario).
func (t *T) DialQ(clientID ...string) Conn { return t.DialOn(t.Q, clientID...) }

// DialOn connects over d, with an optional client ID.
func (t *T) DialOn(d Driver, clientID ...string) Conn {
	c, err := t.TryDialOn(d, clientID...)
	t.check(err, "connect over "+d.Protocol())
	return c
}

// Redial connects over d with a client ID that a connection of this
// scenario has just closed. JMS frees a client ID when close returns; a
// broker that frees it a moment after answering the close refuses an
// immediate reconnection, so a refusal is retried for up to 2s and noted
// (Sluice's STOMP and AMQP front-ends do this: the DISCONNECT receipt and
// the close frame go out before the engine connection closes).
func (t *T) Redial(d Driver, clientID string) Conn {
	deadline := time.Now().Add(2 * time.Second)
	for tries := 1; ; tries++ {
		c, err := t.TryDialOn(d, clientID)
		if err == nil {
			if tries > 1 {
				t.Note("client ID %s was still in use just after its connection closed; connected at try %d", clientID, tries)
			}
			return c
		}
		if !IsRefused(err) || time.Now().After(deadline) {
			t.check(err, "connect again over "+d.Protocol()+" with client ID "+clientID)
		}
		t.Sleep(20 * time.Millisecond)
	}
}

// DialTransacted connects over P for a transacted session (JMS
// createSession(true, …)): the connection a scenario calls Begin on.
func (t *T) DialTransacted() Conn {
	c, err := t.dialWith(t.P, ConnOptions{Transacted: true})
	t.check(err, "connect over "+t.P.Protocol()+" (transacted)")
	return c
}

// TryDialOn connects over d and returns the error instead of failing.
func (t *T) TryDialOn(d Driver, clientID ...string) (Conn, error) {
	o := ConnOptions{}
	if len(clientID) > 0 {
		o.ClientID = clientID[0]
	}
	return t.dialWith(d, o)
}

// dialWith connects over d with o and records the connection to close.
func (t *T) dialWith(d Driver, o ConnOptions) (Conn, error) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	c, err := d.Dial(ctx, o)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.conns = append(t.conns, c)
	t.mu.Unlock()
	return c, nil
}

// closeAll closes every connection the scenario opened.
func (t *T) closeAll() {
	t.mu.Lock()
	cs := t.conns
	t.conns = nil
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); _ = c.Close() }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// Restart restarts the broker: every connection of the scenario is closed
// first; dial again afterwards. The restart is bounded by the scenario's
// timeout (and Options.Restart bounds itself, as RestartCommand does).
func (t *T) Restart() {
	if t.restart == nil {
		panic(stop{status: NotSupported, detail: "the runner cannot restart this broker"})
	}
	t.Step("restart the broker")
	t.closeAll()
	if err := t.restart(t.ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
}

// DeleteDestination deletes d through the broker's admin API.
func (t *T) DeleteDestination(d Dest) {
	if t.admin == nil {
		panic(stop{status: NotSupported, detail: "no admin API"})
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	t.check(t.admin.DeleteDestination(ctx, d), "delete "+d.String())
}

// Send sends m to d on c, failing the scenario if it is refused.
func (t *T) Send(c Conn, d Dest, m *Message) {
	t.check(t.TrySend(c, d, m, nil), "send to "+d.String())
}

// SendIn sends m to d inside tx.
func (t *T) SendIn(c Conn, tx Tx, d Dest, m *Message) {
	t.check(t.TrySend(c, d, m, tx), "send to "+d.String()+" in a transaction")
}

// TrySend sends and returns the error.
func (t *T) TrySend(c Conn, d Dest, m *Message, tx Tx) error {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(15*time.Second))
	defer cancel()
	return c.Send(ctx, d, m, tx)
}

// Text sends text messages with the given bodies.
func (t *T) Text(c Conn, d Dest, bodies ...string) {
	for _, b := range bodies {
		t.Send(c, d, &Message{Body: b})
	}
}

// Subscribe creates a consumer, failing the scenario if it is refused.
func (t *T) Subscribe(c Conn, d Dest, o SubOptions) Sub {
	s, err := t.TrySubscribe(c, d, o)
	t.check(err, "subscribe to "+d.String())
	return s
}

// TrySubscribe creates a consumer and returns the error.
func (t *T) TrySubscribe(c Conn, d Dest, o SubOptions) (Sub, error) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	return c.Subscribe(ctx, d, o)
}

// Temporary creates a temporary destination with a consumer.
func (t *T) Temporary(c Conn, kind Kind) (Sub, Dest) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	s, d, err := c.Temporary(ctx, kind)
	t.check(err, "create a "+kind.String())
	return s, d
}

// Begin starts a transaction.
func (t *T) Begin(c Conn) Tx {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	tx, err := c.Begin(ctx)
	t.check(err, "begin")
	return tx
}

// Commit commits tx.
func (t *T) Commit(tx Tx) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	t.check(tx.Commit(ctx), "commit")
}

// Rollback rolls tx back.
func (t *T) Rollback(tx Tx) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	t.check(tx.Rollback(ctx), "rollback")
}

// Browse browses a queue.
func (t *T) Browse(c Conn, d Dest, sel string) []*Received {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(15*time.Second))
	defer cancel()
	ms, err := c.Browse(ctx, d, sel)
	t.check(err, "browse "+d.String())
	return ms
}

// TryBrowse browses a queue and returns the error.
func (t *T) TryBrowse(c Conn, d Dest, sel string) ([]*Received, error) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(5*time.Second))
	defer cancel()
	return c.Browse(ctx, d, sel)
}

// Receive waits for a message (default 5s, scaled by the profile's slack)
// and fails the scenario if none comes.
func (t *T) Receive(s Sub, timeout ...time.Duration) *Received {
	wait := 5 * time.Second
	if len(timeout) > 0 {
		wait = timeout[0]
	}
	m := t.TryReceive(s, t.Within(wait))
	if m == nil {
		t.Fatalf("no message within %s", t.Within(wait))
	}
	return m
}

// TryReceive waits up to timeout for a message; nil when none came.
func (t *T) TryReceive(s Sub, timeout time.Duration) *Received {
	ctx, cancel := context.WithTimeout(t.ctx, timeout+10*time.Second)
	defer cancel()
	m, err := s.Receive(ctx, timeout)
	t.check(err, "receive")
	return m
}

// ReceiveBody receives a message and checks its body.
func (t *T) ReceiveBody(s Sub, body string) *Received {
	m := t.Receive(s)
	if m.Body != body {
		t.Fatalf("received %q, want %q", m.Body, body)
	}
	return m
}

// ReceiveBodies receives len(bodies) messages and checks their bodies in
// order.
func (t *T) ReceiveBodies(s Sub, bodies ...string) []*Received {
	var got []string
	var ms []*Received
	for range bodies {
		m := t.TryReceive(s, t.Within(5*time.Second))
		if m == nil {
			t.Fatalf("received %q, then nothing; want %q", got, bodies)
		}
		got = append(got, m.Body)
		ms = append(ms, m)
	}
	if strings.Join(got, "\x00") != strings.Join(bodies, "\x00") {
		t.Fatalf("received %q, want %q", got, bodies)
	}
	return ms
}

// ReceiveSet receives len(bodies) messages and checks their bodies in any
// order.
func (t *T) ReceiveSet(s Sub, bodies ...string) []*Received {
	var got []string
	var ms []*Received
	for range bodies {
		m := t.TryReceive(s, t.Within(5*time.Second))
		if m == nil {
			break
		}
		got = append(got, m.Body)
		ms = append(ms, m)
	}
	a, b := append([]string(nil), got...), append([]string(nil), bodies...)
	sort.Strings(a)
	sort.Strings(b)
	if strings.Join(a, "\x00") != strings.Join(b, "\x00") {
		t.Fatalf("received %q, want %q (any order)", got, bodies)
	}
	return ms
}

// NoMessage checks that nothing arrives within wait (default: Quiet).
func (t *T) NoMessage(s Sub, wait ...time.Duration) {
	w := t.quiet
	if len(wait) > 0 {
		w = wait[0]
	}
	if m := t.TryReceive(s, w); m != nil {
		t.Fatalf("unexpected message %q (redelivered=%v)", m.Body, m.Redelivered)
	}
}

// Ack acknowledges m.
func (t *T) Ack(s Sub, m *Received) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	t.check(s.Ack(ctx, m, nil), "acknowledge")
}

// AckIn acknowledges m inside tx.
func (t *T) AckIn(s Sub, m *Received, tx Tx) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	t.check(s.Ack(ctx, m, tx), "acknowledge in a transaction")
}

// Settle ends m's delivery with outcome o.
func (t *T) Settle(s Sub, m *Received, o Outcome) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	t.check(s.Settle(ctx, m, o), "settle")
}

// Recover recovers the consumer's session.
func (t *T) Recover(s Sub) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	t.check(s.Recover(ctx), "recover")
}

// CloseSub closes a consumer.
func (t *T) CloseSub(s Sub) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	t.check(s.Close(ctx), "close consumer")
}

// Unsubscribe deletes a durable subscription.
func (t *T) Unsubscribe(c Conn, topic Dest, name, sel string) {
	ctx, cancel := context.WithTimeout(t.ctx, t.Within(10*time.Second))
	defer cancel()
	t.check(c.Unsubscribe(ctx, topic, name, sel), "unsubscribe "+name)
}

// Close closes a connection.
func (t *T) Close(c Conn) {
	t.check(c.Close(), "close connection")
}

// Expect fails the scenario unless cond holds.
func (t *T) Expect(cond bool, format string, args ...any) {
	if !cond {
		t.Fatalf(format, args...)
	}
}

// ExpectRefused fails the scenario unless err is the broker refusing.
func (t *T) ExpectRefused(err error, what string) {
	var ne *NotExpressibleError
	if errors.As(err, &ne) {
		panic(stop{status: NotExpressibleStatus, detail: ne.Reason})
	}
	if err == nil {
		t.Fatalf("%s was accepted; want it refused", what)
	}
	if !IsRefused(err) {
		t.Fatalf("%s: %v; want the broker to refuse it", what, err)
	}
	t.Note("%s refused: %s", what, oneLine(err.Error(), 160))
}

// Sleep waits d (bounded by the scenario's deadline).
func (t *T) Sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-t.ctx.Done():
		t.Fatalf("scenario deadline passed")
	}
}
