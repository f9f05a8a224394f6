package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ScenarioSlow: a subscriber that subscribes, then never reads its socket,
// while the producers send Count messages of Size bytes to its queue
// (STOMP only). With BrokerPID the report gives the broker's RSS before,
// at its peak during and after the run: what a consumer that reads
// nothing costs the broker. The producers send with receipts (a window of
// ReceiptWindow); a broker that holds them (flow control) is waited for,
// up to DrainTimeout without progress.
const ScenarioSlow Scenario = "slow"

// SlowReport is the report of the slow scenario.
type SlowReport struct {
	Label      string        `json:"label"`
	Options    Options       `json:"options"`
	Sent       int           `json:"sent"`
	Bytes      int64         `json:"bytes"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	Stalled    bool          `json:"stalled"` // the producers made no progress for DrainTimeout
	RSSBefore  int64         `json:"rss_before_bytes,omitempty"`
	RSSPeak    int64         `json:"rss_peak_bytes,omitempty"`
	RSSAfter   int64         `json:"rss_after_bytes,omitempty"`
	RSSGrowth  int64         `json:"rss_growth_bytes,omitempty"` // peak less before
	Errors     []string      `json:"errors,omitempty"`
	receiptsOK bool
}

// OK reports whether every message was sent and confirmed.
func (r *SlowReport) OK() bool { return r.receiptsOK && len(r.Errors) == 0 }

// Write prints the report as text, or as JSON.
func (r *SlowReport) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	mib := func(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	fmt.Fprintf(w, "slow consumer: %s\n", r.Label)
	fmt.Fprintf(w, "  sent       %d messages of %d bytes (%s) in %s, %d producer(s)\n", r.Sent, r.Options.Size, mib(r.Bytes), r.Elapsed.Round(time.Millisecond), r.Options.Producers)
	if r.Stalled {
		fmt.Fprintf(w, "  stalled    the producers got no receipt for %s (held by the broker's flow control?)\n", r.Options.DrainTimeout)
	}
	if r.Options.BrokerPID > 0 {
		fmt.Fprintf(w, "  broker RSS before %s, peak %s, after %s: grew by %s\n", mib(r.RSSBefore), mib(r.RSSPeak), mib(r.RSSAfter), mib(r.RSSGrowth))
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  error      %s\n", e)
	}
	return nil
}

// RunSlow runs the slow scenario against the STOMP broker at addr; login,
// passcode and host go in CONNECT.
func RunSlow(ctx context.Context, addr, login, passcode, host string, o Options) (*SlowReport, error) {
	if o.Count <= 0 {
		return nil, errors.New("the slow scenario needs --count")
	}
	o.Size = max(o.Size, 1)
	o.Producers = max(o.Producers, 1)
	o.ReceiptWindow = max(o.ReceiptWindow, 1)
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 10 * time.Second
	}
	if o.RunID == "" {
		o.RunID = strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	if o.Destination == "" {
		o.Destination = o.Prefix + ".slow." + o.RunID
	}
	rep := &SlowReport{Label: o.Label, Options: o}
	if rep.Label == "" {
		rep.Label = "stomp " + addr
	}
	dest := "/queue/" + o.Destination
	connect := func() (net.Conn, *bufio.Reader, error) {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			return nil, nil, err
		}
		f := "CONNECT\naccept-version:1.2\nheart-beat:0,0\n"
		if host != "" {
			f += "host:" + host + "\n"
		}
		if login != "" {
			f += "login:" + login + "\npasscode:" + passcode + "\n"
		}
		if _, err := io.WriteString(nc, f+"\n\x00"); err != nil {
			nc.Close()
			return nil, nil, err
		}
		rd := bufio.NewReader(nc)
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		cmd, err := readFrameCommand(rd)
		if err != nil || cmd != "CONNECTED" {
			nc.Close()
			return nil, nil, fmt.Errorf("connect %s: %q %v", addr, cmd, err)
		}
		_ = nc.SetReadDeadline(time.Time{})
		return nc, rd, nil
	}

	// The subscriber: subscribed (confirmed by a receipt), then never read.
	sub, subRd, err := connect()
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	ack := string(o.AckMode)
	if ack == "" {
		ack = "auto"
	}
	sf := "SUBSCRIBE\nid:slow\ndestination:" + dest + "\nack:" + ack + "\nreceipt:sub\n"
	if o.Prefetch > 0 {
		sf += "activemq.prefetchSize:" + strconv.Itoa(o.Prefetch) + "\n"
	}
	if _, err := io.WriteString(sub, sf+"\n\x00"); err != nil {
		return nil, err
	}
	_ = sub.SetReadDeadline(time.Now().Add(10 * time.Second))
	if cmd, err := readFrameCommand(subRd); err != nil || cmd != "RECEIPT" {
		return nil, fmt.Errorf("subscribe: %q %v", cmd, err)
	}

	if o.BrokerPID > 0 {
		rep.RSSBefore = slowRSS(o.BrokerPID, rep)
		rep.RSSPeak = rep.RSSBefore
	}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		if o.BrokerPID <= 0 {
			return
		}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
				if n, err := ProcessRSS(o.BrokerPID); err == nil && n > rep.RSSPeak {
					rep.RSSPeak = n
				}
			}
		}
	}()

	start := time.Now()
	type result struct {
		sent    int
		stalled bool
		err     error
	}
	results := make(chan result, o.Producers)
	body := bytes.Repeat([]byte("x"), o.Size)
	persistent := strconv.FormatBool(o.Persistent)
	for p := range o.Producers {
		n := o.Count / o.Producers
		if p < o.Count%o.Producers {
			n++
		}
		go func() {
			sent, stalled, err := slowProduce(connect, dest, persistent, body, n, o.ReceiptWindow, o.DrainTimeout)
			results <- result{sent, stalled, err}
		}()
	}
	rep.receiptsOK = true
	for range o.Producers {
		r := <-results
		rep.Sent += r.sent
		if r.stalled {
			rep.Stalled = true
			rep.receiptsOK = false
		}
		if r.err != nil {
			rep.Errors = append(rep.Errors, r.err.Error())
		}
	}
	rep.Elapsed = time.Since(start)
	rep.Bytes = int64(rep.Sent) * int64(o.Size)
	if rep.Sent != o.Count {
		rep.receiptsOK = false
	}
	// Let the broker settle (its garbage collector, its writer) before the
	// last sample.
	if o.BrokerPID > 0 {
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
	}
	stopSampling()
	<-sampled
	if o.BrokerPID > 0 {
		rep.RSSAfter = slowRSS(o.BrokerPID, rep)
		rep.RSSPeak = max(rep.RSSPeak, rep.RSSAfter)
		rep.RSSGrowth = rep.RSSPeak - rep.RSSBefore
	}
	return rep, nil
}

// slowRSS is ProcessRSS of pid, or 0 with the error noted in rep.
func slowRSS(pid int, rep *SlowReport) int64 {
	n, err := ProcessRSS(pid)
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("broker RSS of pid %d: %v", pid, err))
	}
	return n
}

// slowProduce sends n messages with receipts on a connection of its own,
// at most window unconfirmed, and reports how many were confirmed; stalled
// when no receipt came for idle.
func slowProduce(connect func() (net.Conn, *bufio.Reader, error), dest, persistent string, body []byte, n, window int, idle time.Duration) (int, bool, error) {
	nc, rd, err := connect()
	if err != nil {
		return 0, false, err
	}
	defer nc.Close()
	receipts := make(chan error, window)
	go func() {
		for {
			_ = nc.SetReadDeadline(time.Now().Add(idle))
			cmd, err := readFrameCommand(rd)
			if err == nil && cmd != "RECEIPT" {
				err = fmt.Errorf("the broker sent %s", cmd)
			}
			receipts <- err
			if err != nil {
				return
			}
		}
	}()
	head := "SEND\ndestination:" + dest + "\npersistent:" + persistent + "\ncontent-length:" + strconv.Itoa(len(body)) + "\nreceipt:"
	w := bufio.NewWriterSize(nc, 64<<10)
	confirmed, outstanding := 0, 0
	wait := func() (bool, error) {
		if err := <-receipts; err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return true, nil
			}
			return false, err
		}
		confirmed++
		outstanding--
		return false, nil
	}
	for i := range n {
		for outstanding >= window {
			if stalled, err := wait(); stalled || err != nil {
				return confirmed, stalled, err
			}
		}
		fmt.Fprintf(w, "%s%d\n\n", head, i)
		w.Write(body)
		w.WriteByte(0)
		if err := w.Flush(); err != nil {
			return confirmed, false, fmt.Errorf("send: %w", err)
		}
		outstanding++
	}
	for outstanding > 0 {
		if stalled, err := wait(); stalled || err != nil {
			return confirmed, stalled, err
		}
	}
	return confirmed, false, nil
}

// readFrameCommand reads one STOMP frame and returns its command, skipping
// heart-beat EOLs; the headers and body are read and dropped (a
// content-length is honoured).
func readFrameCommand(rd *bufio.Reader) (string, error) {
	var cmd string
	for cmd == "" {
		line, err := rd.ReadString('\n')
		if err != nil {
			return "", err
		}
		cmd = strings.TrimRight(line, "\r\n")
	}
	length := -1
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "content-length:"); ok {
			length, _ = strconv.Atoi(v)
		}
	}
	if length >= 0 {
		if _, err := rd.Discard(length + 1); err != nil {
			return "", err
		}
		return cmd, nil
	}
	if _, err := rd.ReadString(0); err != nil {
		return "", err
	}
	return cmd, nil
}
