package main

// Helpers of the black-box cluster tests (cluster_*_test.go): broker
// processes, a producer and a consumer with failover lists, and the
// ledger of what they saw.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
)

// blackNode is one `sluice serve` process of a cluster.
type blackNode struct {
	id, conf, data, stomp, admin string
	amqp                         string // set by the tests that speak AMQP
	// netns, when set, is the network namespace the process runs in
	// (`ip netns exec`, which execs it: the process is the broker).
	netns string
	// token, when set, is the bearer token of the admin API.
	token string
	cmd   *exec.Cmd
	done  chan error
}

func (n *blackNode) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainProcess$")
	if n.netns != "" {
		cmd = exec.Command("ip", "netns", "exec", n.netns, os.Args[0], "-test.run=^TestMainProcess$")
	}
	cmd.Env = append(os.Environ(), "SLUICE_TEST_MAIN_ARGS="+strings.Join([]string{"serve", "--config", n.conf, "--data", n.data}, "\n"))
	log, err := os.OpenFile(n.data+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.cmd, n.done = cmd, make(chan error, 1)
	go func() { n.done <- cmd.Wait(); log.Close() }()
}

func (n *blackNode) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(sig)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		// A stack dump in its log, for the report, then the end.
		_ = n.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-n.done:
		case <-time.After(5 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.done
		}
		t.Errorf("%s did not exit within 30 s of %v (its goroutines are in its log)", n.id, sig)
	}
	n.cmd = nil
}

func (n *blackNode) ready() bool {
	if n.cmd == nil {
		return false
	}
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + n.admin + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// blackLedger is what the producer saw.
type blackLedger struct {
	mu        sync.Mutex
	confirmed []string
	last      time.Time // of the latest confirmation
}

func (l *blackLedger) add(body string) {
	l.mu.Lock()
	l.confirmed = append(l.confirmed, body)
	l.last = time.Now()
	l.mu.Unlock()
}

func (l *blackLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.confirmed)
}

func waitCond(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// status is the node's /api/cluster answer.
func (n *blackNode) status() (admClusterStatus, error) {
	var st admClusterStatus
	c := &http.Client{Timeout: 2 * time.Second}
	req, err := http.NewRequest(http.MethodGet, "http://"+n.admin+"/api/cluster", nil)
	if err != nil {
		return st, err
	}
	if n.token != "" {
		req.Header.Set("Authorization", "Bearer "+n.token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s /api/cluster: %s", n.id, resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// logTails logs the end of each node's log if t failed.
func logTails(t *testing.T, nodes []*blackNode) {
	if !t.Failed() {
		return
	}
	for _, n := range nodes {
		b, _ := os.ReadFile(n.data + ".log")
		t.Logf("%s log (tail):\n%s", n.id, tail(string(b), 3000))
	}
}

// leaderOf waits up to d for a node of nodes whose /readyz says ready
// (the leader) and returns its index.
func leaderOf(t *testing.T, nodes []*blackNode, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for i, n := range nodes {
			if n.ready() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no node ready within %v", d)
	return -1
}

// confirmation is one send confirmed by a receipt.
type confirmation struct {
	body, addr string // addr: the STOMP address that confirmed it
	at         time.Time
}

// delivery is one message a consumer received.
type delivery struct {
	body        string
	redelivered bool
}

// clusterLoad is a STOMP producer sending persistent messages with
// receipts and a consumer acknowledging each message, both with a
// failover list, and what they saw. Sends are never repeated: a send
// without its receipt is not confirmed and is forgotten.
type clusterLoad struct {
	queue string
	addrs func() []string // the STOMP addresses to try, in turn

	mu        sync.Mutex
	confirmed []confirmation
	delivered []delivery
	failures  []time.Time // of sends that failed

	stopProd, stopCons chan struct{}
	prodDone, consDone chan struct{}

	// What the producer and the consumer did last, for a failed test.
	prodAt, consAt atomic.Value // string
}

// note records what the producer (or the consumer) is doing.
func (l *clusterLoad) note(v *atomic.Value, format string, args ...any) {
	v.Store(time.Now().Format("15:04:05.000") + " " + fmt.Sprintf(format, args...))
}

// describe says what the load did last.
func (l *clusterLoad) describe() string {
	get := func(v *atomic.Value) string { s, _ := v.Load().(string); return s }
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("load: %d confirmed, %d failed, %d delivered; producer last: %s; consumer last: %s",
		len(l.confirmed), len(l.failures), len(l.delivered), get(&l.prodAt), get(&l.consAt))
}

// sendTimeout bounds a send's wait for its receipt: past it the
// connection is dropped and the send counts as failed. It is well under
// the 10 s the tests give a new leader to confirm a send: go-stomp can
// leave a send waiting for ever when the broker closes the connection as
// the next SEND is queued (the likelier the faster sends are confirmed),
// and the producer must be free to move on to the new leader in time.
const sendTimeout = 4 * time.Second

// startLoad starts the producer (prefix p-) and, with consume, the
// consumer.
func startLoad(queue string, addrs func() []string, consume bool) *clusterLoad {
	l := &clusterLoad{queue: queue, addrs: addrs, stopProd: make(chan struct{}), stopCons: make(chan struct{}),
		prodDone: make(chan struct{}), consDone: make(chan struct{})}
	go l.produce()
	if consume {
		go l.consume()
	} else {
		close(l.consDone)
	}
	return l
}

func stopped(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (l *clusterLoad) produce() {
	defer close(l.prodDone)
	seq := 0
	for k := 0; !stopped(l.stopProd); k++ {
		addrs := l.addrs()
		addr := addrs[k%len(addrs)]
		conn, err := stomp.Dial("tcp", addr, stomp.ConnOpt.HeartBeat(0, 0))
		if err != nil {
			l.note(&l.prodAt, "dial %s: %v", addr, err)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for !stopped(l.stopProd) {
			seq++
			l.note(&l.prodAt, "sending p-%07d to %s", seq, addr)
			if err := sendOne(conn, l.queue, fmt.Sprintf("p-%07d", seq)); err != nil {
				l.note(&l.prodAt, "send of p-%07d to %s failed: %v", seq, addr, err)
				l.failed()
				break
			}
			l.confirm(fmt.Sprintf("p-%07d", seq), addr)
		}
		go func() { _ = conn.MustDisconnect() }() // may block behind a send left behind (sendOne)
	}
}

// sendOne sends a persistent message with a receipt, bounded by
// sendTimeout. go-stomp's Send can wait for ever when the connection
// drops while its frame is still queued (nothing answers the receipt's
// channel then, and its MustDisconnect can block on the same mutex), so
// a send that outlives the bound is left behind, its connection closed
// in the background, and counted as failed.
func sendOne(conn *stomp.Conn, queue, body string) error {
	done := make(chan error, 1)
	go func() {
		done <- conn.Send(queue, "text/plain", []byte(body), stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true"))
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(sendTimeout):
		go func() { _ = conn.MustDisconnect() }()
		return fmt.Errorf("send of %s: no receipt within %v", body, sendTimeout)
	}
}

func (l *clusterLoad) confirm(body, addr string) {
	l.mu.Lock()
	l.confirmed = append(l.confirmed, confirmation{body: body, addr: addr, at: time.Now()})
	l.mu.Unlock()
}

func (l *clusterLoad) failed() {
	l.mu.Lock()
	l.failures = append(l.failures, time.Now())
	l.mu.Unlock()
}

// pin sends to addr only, bodies prefix-N, until a send fails or stop;
// it returns when the first send fails (with the time) or on stop.
func (l *clusterLoad) pin(addr, prefix string, stop chan struct{}) (failedAt time.Time, err error) {
	conn, err := stomp.Dial("tcp", addr, stomp.ConnOpt.HeartBeat(0, 0))
	if err != nil {
		return time.Now(), err
	}
	defer func() { go func() { _ = conn.MustDisconnect() }() }()
	for j := 0; !stopped(stop); j++ {
		body := fmt.Sprintf("%s-%06d", prefix, j)
		if err := sendOne(conn, l.queue, body); err != nil {
			return time.Now(), err
		}
		l.confirm(body, addr)
	}
	return time.Time{}, nil
}

func (l *clusterLoad) consume() {
	defer close(l.consDone)
	for k := 0; !stopped(l.stopCons); k++ {
		addrs := l.addrs()
		// Both channels above the prefetch: an Ack blocked on a full write
		// channel after the connection dropped would hold go-stomp's
		// close mutex for ever.
		addr := addrs[k%len(addrs)]
		conn, err := stomp.Dial("tcp", addr, stomp.ConnOpt.HeartBeat(0, 0),
			stomp.ConnOpt.ReadChannelCapacity(4096), stomp.ConnOpt.WriteChannelCapacity(4096))
		if err != nil {
			l.note(&l.consAt, "dial %s: %v", addr, err)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		sub, err := conn.Subscribe(l.queue, stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", "64"))
		if err != nil {
			l.note(&l.consAt, "subscribe on %s: %v", addr, err)
			_ = conn.MustDisconnect()
			continue
		}
		l.note(&l.consAt, "receiving from %s", addr)
		l.receive(conn, sub)
		l.note(&l.consAt, "stopped receiving from %s", addr)
		_ = conn.MustDisconnect()
	}
}

// receive records and acknowledges sub's messages until an error or stop.
func (l *clusterLoad) receive(conn *stomp.Conn, sub *stomp.Subscription) {
	for {
		select {
		case <-l.stopCons:
			return
		case m, ok := <-sub.C:
			if !ok || m.Err != nil {
				return
			}
			l.mu.Lock()
			l.delivered = append(l.delivered, delivery{body: string(m.Body), redelivered: m.Header.Get("redelivered") == "true"})
			l.mu.Unlock()
			if err := conn.Ack(m); err != nil {
				return
			}
		}
	}
}

func (l *clusterLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.confirmed)
}

// confirmedSince returns the confirmations at or after from.
func (l *clusterLoad) confirmedSince(from time.Time) []confirmation {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []confirmation
	for _, c := range l.confirmed {
		if !c.at.Before(from) {
			out = append(out, c)
		}
	}
	return out
}

// stopProducer stops the producer and waits for it (bounded by its send
// timeout).
func (l *clusterLoad) stopProducer() {
	if !stopped(l.stopProd) {
		close(l.stopProd)
	}
	<-l.prodDone
}

// stop stops the producer and the consumer and waits for them.
func (l *clusterLoad) stop() {
	l.stopProducer()
	if !stopped(l.stopCons) {
		close(l.stopCons)
	}
	<-l.consDone
}

// finish stops the producer, has the consumer (started if the load had
// none) take messages until every confirmed one has been delivered
// (bounded by d), stops it, and checks what a user would: no confirmed
// message missing, no message delivered twice without redelivered:true.
func (l *clusterLoad) finish(t *testing.T, d time.Duration) {
	t.Helper()
	l.stopProducer()
	if stopped(l.consDone) { // no consumer yet
		l.consDone = make(chan struct{})
		go l.consume()
	}
	want := map[string]bool{}
	l.mu.Lock()
	for _, c := range l.confirmed {
		want[c.body] = true
	}
	l.mu.Unlock()
	missing := func() []string {
		l.mu.Lock()
		defer l.mu.Unlock()
		seen := map[string]bool{}
		for _, dl := range l.delivered {
			seen[dl.body] = true
		}
		var out []string
		for b := range want {
			if !seen[b] {
				out = append(out, b)
			}
		}
		slices.Sort(out)
		return out
	}
	deadline := time.Now().Add(d)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	l.stop()
	if m := missing(); len(m) > 0 {
		t.Errorf("%d of %d confirmed messages never delivered (within %v of the end), e.g. %v", len(m), len(want), d, m[:min(len(m), 5)])
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	times := map[string]int{}
	unflagged, redelivered := 0, 0
	for _, dl := range l.delivered {
		times[dl.body]++
		if times[dl.body] > 1 {
			redelivered++
			if !dl.redelivered {
				unflagged++
				if unflagged <= 5 {
					t.Errorf("%s delivered %d times, this time without redelivered:true", dl.body, times[dl.body])
				}
			}
		}
	}
	if unflagged > 0 {
		t.Errorf("%d deliveries of a message delivered before were not flagged redelivered", unflagged)
	}
	t.Logf("%d sends confirmed (%d failed), %d deliveries of %d distinct messages (%d again, flagged)",
		len(l.confirmed), len(l.failures), len(l.delivered), len(times), redelivered)
}

// medianWorst formats the median and the worst of ds.
func medianWorst(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("median %v, worst %v", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
