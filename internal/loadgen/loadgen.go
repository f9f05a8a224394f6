// Package loadgen is Sluice's load generator: it drives any STOMP broker
// (through the go-stomp client), any AMQP 1.0 broker (through go-amqp) or
// any AMQP 0-9-1 broker (through amqp091-go, amqp091.go) with a bounded
// scenario and reports the rates, the end-to-end latency
// percentiles and whether every message arrived.
//
// A run has producers and consumers. Every message carries its run ID, its
// producer and sequence number and the wall-clock time it was sent; the
// consumers use them to count each message exactly once per consumer (queue)
// or once per subscriber (topic fan-out), to flag losses and duplicates, and
// to measure latency. Nothing here knows the broker: drivers speak the
// protocol, the runner (Run) does the scenario and the arithmetic.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Scenario is one of the standard scenarios; each sets defaults that the
// options may override.
type Scenario string

const (
	// ScenarioQueue: one producer, one consumer, 1 KiB non-persistent
	// messages through a queue.
	ScenarioQueue Scenario = "queue"
	// ScenarioPersistent: as queue, but persistent and the producer waits
	// for a receipt (a broker confirmation) per message.
	ScenarioPersistent Scenario = "persistent"
	// ScenarioFanout: one producer to a topic with 50 subscribers, 1 KiB.
	ScenarioFanout Scenario = "fanout"
	// ScenarioBacklog fills a queue, then drains it: the producers send
	// every message, persistent and confirmed (receipts, a window of 64),
	// with no consumer attached; only then do the consumers attach and
	// take them all. The report times the two phases apart (see
	// BacklogReport). It needs a message count.
	ScenarioBacklog Scenario = "backlog"
)

// Scenarios lists the standard scenarios.
var Scenarios = []Scenario{ScenarioQueue, ScenarioPersistent, ScenarioFanout, ScenarioBacklog}

// defaultBacklogWindow is the backlog scenario's receipt window.
const defaultBacklogWindow = 64

// AckMode is how consumers acknowledge.
type AckMode string

const (
	AckAuto             AckMode = "auto"              // the broker considers a message acknowledged once sent
	AckClient           AckMode = "client"            // cumulative acknowledgement (every AckEvery messages)
	AckClientIndividual AckMode = "client-individual" // one acknowledgement per message
)

// Options describe a run. Zero fields take the scenario's defaults (see
// Options.Resolve).
type Options struct {
	Scenario Scenario `json:"scenario"`

	// Count is the number of messages sent in all (split across the
	// producers); Duration bounds the sending time instead. One of them is
	// required; with both, sending stops at whichever comes first.
	Count    int           `json:"count"`
	Duration time.Duration `json:"duration_ns"`

	// Rate, when positive, paces the sends: this many messages per second
	// across all producers, evenly spaced (see pacer). Zero sends as fast
	// as the broker takes them. Still bounded by Count or Duration.
	Rate float64 `json:"rate,omitempty"`

	Size      int  `json:"size"`      // body size in bytes (default 1024)
	Producers int  `json:"producers"` // default 1
	Consumers int  `json:"consumers"` // consumers of the queue, or subscribers of the topic (default 1; fanout 50)
	Topic     bool `json:"topic"`     // topic instead of queue (fanout sets it)

	Persistent bool `json:"persistent"` // persistent delivery mode (persistent sets it)
	// Receipts asks for a broker confirmation of every send; the producer
	// keeps at most ReceiptWindow of them outstanding (default 1: wait for
	// each before the next send).
	Receipts      bool `json:"receipts"`
	ReceiptWindow int  `json:"receipt_window"`

	AckMode  AckMode `json:"ack_mode"`  // default auto
	AckEvery int     `json:"ack_every"` // with AckClient: acknowledge every AckEvery-th message (default 1)
	Prefetch int     `json:"prefetch"`  // consumer prefetch / credit; 0 leaves the broker's default

	// MaxBacklog, when positive, holds producers while more than this many
	// messages are sent but not yet received (by consumer 0 for a topic),
	// so a fast producer cannot fill the broker without bound.
	MaxBacklog int `json:"max_backlog"`

	// Prefix starts the destination name (default "sluicebench"); the
	// scenario and run ID follow, so every run has fresh destinations.
	Prefix string `json:"prefix"`
	// Destination, when set, is used as it is instead.
	Destination string `json:"destination"`

	// DrainTimeout is how long consumers may go without a new message,
	// once sending is done, before the run gives up on the rest (default
	// 10s).
	DrainTimeout time.Duration `json:"drain_timeout_ns"`
	// SetupTimeout bounds connecting and subscribing (default 30s).
	SetupTimeout time.Duration `json:"setup_timeout_ns"`

	// BrokerPID, when positive, is a process whose CPU time (from
	// /proc/PID/stat) is measured over the run.
	BrokerPID int `json:"broker_pid,omitempty"`
	// AfterFill, in the backlog scenario, is a shell command run between
	// the fill and the drain (see runAfterFill): to restart the broker
	// with its backlog, for example.
	AfterFill string `json:"after_fill,omitempty"`

	// Label names the broker in the report (default: the driver's Name).
	Label string `json:"label,omitempty"`

	// RunID tells this run's messages apart from leftovers of earlier
	// runs; default: a random one.
	RunID string `json:"run_id"`
}

// Resolve fills the scenario defaults into o and checks it.
func (o *Options) Resolve() error {
	switch o.Scenario {
	case "":
		o.Scenario = ScenarioQueue
	case ScenarioQueue:
	case ScenarioPersistent:
		o.Persistent = true
		o.Receipts = true
	case ScenarioFanout:
		o.Topic = true
		if o.Consumers == 0 {
			o.Consumers = 50
		}
	case ScenarioBacklog:
		o.Persistent = true
		o.Receipts = true
		if o.ReceiptWindow <= 0 {
			o.ReceiptWindow = defaultBacklogWindow
		}
		if o.Count <= 0 || o.Duration != 0 {
			return errors.New("the backlog scenario fills a queue with a message count, not for a duration")
		}
		if o.Topic {
			return errors.New("the backlog scenario fills a queue: a topic keeps nothing for subscribers not yet attached")
		}
		if o.MaxBacklog != 0 {
			return errors.New("the backlog scenario has no consumer while it fills: max-backlog would stop it")
		}
		if o.Rate != 0 {
			return errors.New("the backlog scenario fills as fast as the broker confirms: it takes no rate")
		}
	default:
		return fmt.Errorf("scenario %q: want queue, persistent, fanout or backlog", o.Scenario)
	}
	if o.Count < 0 || o.Duration < 0 || o.Rate < 0 {
		return errors.New("count, duration and rate must not be negative")
	}
	if o.Count == 0 && o.Duration == 0 {
		return errors.New("give a message count or a duration: runs are bounded")
	}
	if o.Size == 0 {
		o.Size = 1024
	}
	if o.Size < 0 {
		return errors.New("size must not be negative")
	}
	if o.Producers == 0 {
		o.Producers = 1
	}
	if o.Consumers == 0 {
		o.Consumers = 1
	}
	if o.Producers < 0 || o.Consumers < 0 {
		return errors.New("producers and consumers must be positive")
	}
	if o.Count > 0 && o.Count < o.Producers {
		return fmt.Errorf("count %d is smaller than the %d producers", o.Count, o.Producers)
	}
	if o.ReceiptWindow <= 0 {
		o.ReceiptWindow = 1
	}
	switch o.AckMode {
	case "":
		o.AckMode = AckAuto
	case AckAuto, AckClient, AckClientIndividual:
	default:
		return fmt.Errorf("ack mode %q: want auto, client or client-individual", o.AckMode)
	}
	if o.AckEvery <= 0 {
		o.AckEvery = 1
	}
	if o.Prefetch < 0 || o.MaxBacklog < 0 {
		return errors.New("prefetch and max-backlog must not be negative")
	}
	if o.Prefix == "" {
		o.Prefix = "sluicebench"
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 10 * time.Second
	}
	if o.SetupTimeout <= 0 {
		o.SetupTimeout = 30 * time.Second
	}
	if o.RunID == "" {
		o.RunID = newRunID()
	}
	if strings.ContainsAny(o.RunID, "./: \n") {
		return fmt.Errorf("run ID %q must not contain '.', '/', ':' or spaces", o.RunID)
	}
	if o.Destination == "" {
		o.Destination = o.Prefix + "." + string(o.Scenario) + "." + o.RunID
	}
	return nil
}

func newRunID() string {
	return fmt.Sprintf("%x%04x", time.Now().UnixMilli()&0xffffffffff, os.Getpid()&0xffff)
}

// Msg is what a message carries for the runner.
type Msg struct {
	Run      string // run ID
	Producer int
	Seq      uint64 // 0, 1, 2, … per producer
	Sent     int64  // Unix nanoseconds at send
	Probe    bool   // a warm-up probe, not counted
	// Confirm asks the driver to have this send confirmed by the broker
	// before Send (or Flush) returns, even without receipts: producers set
	// it on their last message.
	Confirm bool
}

// Handler receives a consumer's messages, one at a time, from the
// consumer's own goroutine. A non-nil err means the consumer failed and
// delivers nothing more.
type Handler func(m Msg, err error)

// Driver speaks one protocol to one broker.
type Driver interface {
	// Name describes the target, e.g. "stomp 127.0.0.1:61613".
	Name() string
	// Protocol names the protocol and client, for grouping reports:
	// "stomp", "stomp/lean", "amqp".
	Protocol() string
	// NewProducer connects a producer for the destination of o.
	NewProducer(ctx context.Context, o *Options, idx int) (Producer, error)
	// NewConsumer connects and subscribes a consumer; once it returns,
	// messages go to h.
	NewConsumer(ctx context.Context, o *Options, idx int, h Handler) (Consumer, error)
}

// Producer sends messages.
type Producer interface {
	// Send sends m; with receipts it may return before the confirmation
	// when the window allows, and Flush waits for the rest.
	Send(ctx context.Context, m Msg, body []byte) error
	// Flush waits until every send is confirmed (a no-op without receipts).
	Flush(ctx context.Context) error
	Close() error
}

// Consumer receives messages until closed.
type Consumer interface {
	Close() error
}

// consumerState is one consumer's bookkeeping, touched only by its own
// goroutine until the run ends.
type consumerState struct {
	seen      [][]uint64 // per producer: a bit per sequence number
	received  atomic.Int64
	dups      int64
	foreign   int64
	probes    atomic.Int64
	lat       Histogram
	last      atomic.Int64 // Unix nanos of the last counted message
	err       atomic.Pointer[error]
	done      chan struct{} // closed when the consumer has all it expects
	doneOnce  sync.Once
	releaseBL bool // releases backlog tokens
	// mu is held while a message is counted; the runner takes it after
	// setting stopped, so no count changes once it reads the state.
	mu      sync.Mutex
	stopped bool
}

// Run runs one scenario with driver d and returns its report. Errors that
// prevent the run (connecting, subscribing) are returned; errors during
// the run are counted in the report.
func Run(ctx context.Context, d Driver, o Options) (*Report, error) {
	if err := o.Resolve(); err != nil {
		return nil, err
	}
	rep := &Report{Label: o.Label, Target: d.Name(), Protocol: d.Protocol(), Options: o, LoadBefore: loadAvg()}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Consumers first, so that nothing is published to a topic with no
	// subscribers; in the backlog scenario, after the fill.
	fillFirst := o.Scenario == ScenarioBacklog
	setupCtx, setupCancel := context.WithTimeout(ctx, o.SetupTimeout)
	defer setupCancel()
	var backlog chan struct{}
	if o.MaxBacklog > 0 {
		backlog = make(chan struct{}, o.MaxBacklog)
	}
	var totalReceived atomic.Int64
	var expected atomic.Int64 // messages each consumer (topic) or all consumers (queue) must see; -1 until known
	expected.Store(-1)
	if o.Count > 0 && o.Duration == 0 {
		expected.Store(int64(o.Count))
	}
	progress := make(chan struct{}, 1)
	states := make([]*consumerState, o.Consumers)
	consumers := make([]Consumer, 0, o.Consumers)
	var attachConsumer func(ctx context.Context, i int) error
	closeAll := func() {
		for _, c := range consumers {
			_ = c.Close()
		}
	}
	defer closeAll()
	attach := func(ctx context.Context) error {
		for i := range states {
			if err := attachConsumer(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	attachConsumer = func(ctx context.Context, i int) error {
		st := &consumerState{seen: make([][]uint64, o.Producers), done: make(chan struct{})}
		st.releaseBL = backlog != nil && (!o.Topic || i == 0)
		if n := expected.Load(); n > 0 {
			per := (n + int64(o.Producers) - 1) / int64(o.Producers)
			for p := range st.seen {
				st.seen[p] = make([]uint64, (per+63)/64)
			}
		}
		states[i] = st
		h := func(m Msg, err error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			if st.stopped {
				return
			}
			if err != nil {
				if st.err.Load() == nil {
					st.err.Store(&err)
				}
				st.doneOnce.Do(func() { close(st.done) })
				return
			}
			if m.Probe {
				st.probes.Add(1)
				return
			}
			if m.Run != o.RunID || m.Producer < 0 || m.Producer >= o.Producers {
				st.foreign++
				return
			}
			now := time.Now().UnixNano()
			words := st.seen[m.Producer]
			w, bit := m.Seq/64, uint64(1)<<(m.Seq%64)
			if w >= uint64(len(words)) {
				grown := make([]uint64, max(w+1, uint64(2*len(words))))
				copy(grown, words)
				words, st.seen[m.Producer] = grown, grown
			}
			if words[w]&bit != 0 {
				st.dups++
			}
			words[w] |= bit
			st.lat.Record(time.Duration(now - m.Sent))
			st.last.Store(now)
			n := st.received.Add(1)
			if st.releaseBL {
				select {
				case <-backlog:
				default:
				}
			}
			if !o.Topic {
				n = totalReceived.Add(1)
			}
			select {
			case progress <- struct{}{}:
			default:
			}
			if e := expected.Load(); e >= 0 && n >= e {
				if o.Topic {
					st.doneOnce.Do(func() { close(st.done) })
				}
			}
		}
		c, err := d.NewConsumer(ctx, &o, i, h)
		if err != nil {
			return fmt.Errorf("consumer %d: %w", i, err)
		}
		consumers = append(consumers, c)
		return nil
	}
	if !fillFirst {
		if err := attach(setupCtx); err != nil {
			return nil, err
		}
	}
	producers := make([]Producer, 0, o.Producers)
	defer func() {
		for _, p := range producers {
			_ = p.Close()
		}
	}()
	for i := 0; i < o.Producers; i++ {
		p, err := d.NewProducer(setupCtx, &o, i)
		if err != nil {
			return nil, fmt.Errorf("producer %d: %w", i, err)
		}
		producers = append(producers, p)
	}
	if o.Topic {
		// Warm up: probe until every subscriber has seen a probe, so the
		// broker has bound every subscription before the measured run.
		if err := probe(setupCtx, producers[0], states, &o); err != nil {
			return nil, err
		}
	}
	brokerBefore, brokerErr := 0.0, error(nil)
	if o.BrokerPID > 0 {
		brokerBefore, brokerErr = ProcessCPU(o.BrokerPID)
	}
	var bl *BacklogReport
	if fillFirst {
		bl = &BacklogReport{}
		rep.Backlog = bl
		if o.BrokerPID > 0 {
			bl.RSSBeforeFill = brokerRSS(o.BrokerPID, rep)
		}
	}
	selfBefore := selfCPU()

	body := make([]byte, o.Size)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	start := time.Now()
	var deadline time.Time
	if o.Duration > 0 {
		deadline = start.Add(o.Duration)
	}
	sent := make([]int64, o.Producers)
	sendErrs := make([]error, o.Producers)
	pacers := make([]*pacer, o.Producers)
	var pwg sync.WaitGroup
	for i, p := range producers {
		n := -1
		if o.Count > 0 {
			n = o.Count / o.Producers
			if i < o.Count%o.Producers {
				n++
			}
		}
		pace := newPacer(start, o.Rate, o.Producers, i)
		pacers[i] = pace
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			var seq uint64
			for n < 0 || int(seq) < n {
				if pace != nil {
					if err := pace.wait(ctx, seq); err != nil {
						sendErrs[i] = err
						break
					}
				}
				// The last message asks for a confirmation, so the send
				// time covers the broker having taken every message.
				last := n >= 0 && int(seq) == n-1
				if !deadline.IsZero() && time.Now().After(deadline) {
					last = true
				}
				if backlog != nil {
					select {
					case backlog <- struct{}{}:
					case <-ctx.Done():
						sendErrs[i] = ctx.Err()
						return
					}
				}
				m := Msg{Run: o.RunID, Producer: i, Seq: seq, Sent: time.Now().UnixNano(), Confirm: last}
				if err := p.Send(ctx, m, body); err != nil {
					sendErrs[i] = err
					break
				}
				seq++
				sent[i] = int64(seq)
				if last {
					break
				}
			}
			if err := p.Flush(ctx); err != nil && sendErrs[i] == nil {
				sendErrs[i] = err
			}
		}()
	}
	pwg.Wait()
	sendEnd := time.Now()
	for _, pace := range pacers {
		if pace != nil {
			rep.PaceBehind += pace.behind
			rep.PaceMaxBehindMs = max(rep.PaceMaxBehindMs, float64(pace.maxBehind.Microseconds())/1000)
		}
	}
	var totalSent int64
	for i, n := range sent {
		totalSent += n
		if sendErrs[i] != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("producer %d: %v", i, sendErrs[i]))
		}
	}
	expected.Store(totalSent)
	var drainStart time.Time
	drainCPUBefore, drainCPUErr := 0.0, error(nil)
	if fillFirst {
		// The fill is confirmed: measure it, then attach the consumers.
		bl.FillSeconds = sendEnd.Sub(start).Seconds()
		if o.BrokerPID > 0 {
			cpu, err := ProcessCPU(o.BrokerPID)
			if err == nil && brokerErr == nil {
				bl.FillBrokerCPU = cpu - brokerBefore
			}
			bl.RSSAfterFill = brokerRSS(o.BrokerPID, rep)
		}
		if o.AfterFill != "" {
			pid, took, err := runAfterFill(ctx, &o, o.Destination)
			if err != nil {
				return nil, err
			}
			bl.AfterFillSeconds = took.Seconds()
			if pid > 0 {
				o.BrokerPID = pid
				rep.Options.BrokerPID = pid
				if cpu, err := ProcessCPU(pid); err == nil {
					brokerBefore, brokerErr = cpu, nil
				}
				bl.RSSAfterRestart = brokerRSS(pid, rep)
			}
		}
		drainStart = time.Now()
		if o.BrokerPID > 0 {
			drainCPUBefore, drainCPUErr = ProcessCPU(o.BrokerPID)
		}
		attachCtx, attachCancel := context.WithTimeout(ctx, o.SetupTimeout)
		err := attach(attachCtx)
		attachCancel()
		if err != nil {
			return nil, fmt.Errorf("after the fill of %d messages: %w", totalSent, err)
		}
	}
	// Consumers that already have everything (count known late in
	// duration mode) are done now.
	for _, st := range states {
		if o.Topic && st.received.Load() >= totalSent {
			st.doneOnce.Do(func() { close(st.done) })
		}
	}
	// Drain: wait until every message arrived, or nothing arrives for
	// DrainTimeout.
	allDone := func() bool {
		if !o.Topic && totalReceived.Load() >= totalSent {
			return true
		}
		for _, st := range states {
			if o.Topic {
				select {
				case <-st.done:
					continue
				default:
					return false
				}
			}
			if st.err.Load() == nil {
				return false
			}
		}
		return true // topic: every subscriber has all; queue: every consumer failed
	}
	idle := time.NewTimer(o.DrainTimeout)
	defer idle.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timedOut := false
drain:
	for !allDone() {
		select {
		case <-progress:
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(o.DrainTimeout)
		case <-tick.C:
		case <-idle.C:
			timedOut = true
			break drain
		case <-ctx.Done():
			rep.Errors = append(rep.Errors, ctx.Err().Error())
			break drain
		}
	}
	end := time.Now()
	if o.BrokerPID > 0 {
		after, err := ProcessCPU(o.BrokerPID)
		if brokerErr == nil {
			brokerErr = err
		}
		if brokerErr != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("broker CPU of pid %d: %v", o.BrokerPID, brokerErr))
		} else {
			rep.BrokerCPU = after - brokerBefore
			if bl != nil && drainCPUErr == nil {
				bl.DrainBrokerCPU = after - drainCPUBefore
			}
		}
		if bl != nil {
			bl.RSSAfterDrain = brokerRSS(o.BrokerPID, rep)
		}
	}
	rep.ClientCPU = selfCPU() - selfBefore
	rep.LoadAfter = loadAvg()

	// Stop counting before closing anything: a consumer that closes hands
	// its unacknowledged messages back, and the others must not count
	// them again.
	for _, st := range states {
		st.mu.Lock()
		st.stopped = true
		st.mu.Unlock()
	}
	closeAll()
	consumers = nil

	rep.Sent = totalSent
	rep.SendSeconds = sendEnd.Sub(start).Seconds()
	var lastRecv int64
	var hist Histogram
	perProducer := make([][]uint64, o.Producers)
	for i, st := range states {
		rep.Received += st.received.Load()
		rep.Duplicates += st.dups
		rep.Foreign += st.foreign
		hist.Merge(&st.lat)
		if l := st.last.Load(); l > lastRecv {
			lastRecv = l
		}
		if e := st.err.Load(); e != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("consumer %d: %v", i, *e))
		}
		if o.Topic {
			uniq := popcount(st.seen)
			if missing := totalSent - uniq; missing > 0 {
				rep.Missing += missing
				rep.Errors = append(rep.Errors, fmt.Sprintf("subscriber %d: %d of %d messages missing", i, missing, totalSent))
			}
		} else {
			for p, words := range st.seen {
				if len(words) > len(perProducer[p]) {
					grown := make([]uint64, len(words))
					copy(grown, perProducer[p])
					perProducer[p] = grown
				}
				for w, v := range words {
					if perProducer[p][w]&v != 0 {
						rep.Duplicates += int64(bits.OnesCount64(perProducer[p][w] & v))
					}
					perProducer[p][w] |= v
				}
			}
		}
	}
	if !o.Topic {
		if missing := totalSent - popcount(perProducer); missing > 0 {
			rep.Missing = missing
			rep.Errors = append(rep.Errors, fmt.Sprintf("%d of %d messages missing", missing, totalSent))
		}
	}
	if timedOut && rep.Missing == 0 {
		rep.Errors = append(rep.Errors, fmt.Sprintf("no message for %s while draining", o.DrainTimeout))
	}
	if lastRecv > 0 {
		rep.ReceiveSeconds = time.Duration(lastRecv - start.UnixNano()).Seconds()
		if bl != nil {
			bl.DrainSeconds = time.Duration(lastRecv - drainStart.UnixNano()).Seconds()
		}
	}
	rep.Seconds = end.Sub(start).Seconds()
	rep.Latency = hist.Summary()
	rep.finish()
	return rep, nil
}

// probe sends warm-up probes until every subscriber has seen one.
func probe(ctx context.Context, p Producer, states []*consumerState, o *Options) error {
	body := []byte("probe")
	for i := 0; ; i++ {
		if err := p.Send(ctx, Msg{Run: o.RunID, Probe: true, Seq: uint64(i), Sent: time.Now().UnixNano()}, body); err != nil {
			return fmt.Errorf("warm-up probe: %w", err)
		}
		if err := p.Flush(ctx); err != nil {
			return fmt.Errorf("warm-up probe: %w", err)
		}
		deadline := time.Now().Add(100 * time.Millisecond)
		for time.Now().Before(deadline) {
			ready := true
			for i, st := range states {
				if e := st.err.Load(); e != nil {
					return fmt.Errorf("subscriber %d: %w", i, *e)
				}
				if st.probes.Load() == 0 {
					ready = false
					break
				}
			}
			if ready {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("warm-up: not every subscriber received a probe: %w", ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

func popcount(sets [][]uint64) int64 {
	var n int64
	for _, words := range sets {
		for _, w := range words {
			n += int64(bits.OnesCount64(w))
		}
	}
	return n
}

// selfCPU is this process's CPU time so far.
func selfCPU() float64 {
	if runtime.GOOS != "linux" {
		return 0
	}
	cpu, err := ProcessCPU(os.Getpid())
	if err != nil {
		return 0
	}
	return cpu
}
