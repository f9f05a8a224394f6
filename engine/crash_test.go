package engine_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
)

// The crash test runs the broker in a child process (this test binary,
// re-executed), loads it with producers and a consumer, kills it with
// SIGKILL, restarts it and drains the queue. The child reports on stdout
// every send the engine confirmed, every delivery and every acknowledgement
// the engine confirmed; the parent checks that no confirmed send is lost and
// that a message delivered twice is flagged redelivered the second time.

const crashEnv = "SLUICE_CRASH_CHILD"

// crashAckEnv set to "confirm" makes the child acknowledge with
// AcknowledgeConfirm: it reports TAKEN when a batch is acknowledged and
// ACKED once that is durable.
const crashAckEnv = "SLUICE_CRASH_ACK"

// crashWindowEnv sets the child's in-memory window of ready messages: a
// small one keeps most of the backlog paged out, in the store only.
const crashWindowEnv = "SLUICE_CRASH_WINDOW"

func TestCrashChild(t *testing.T) {
	mode := os.Getenv(crashEnv)
	if mode == "" {
		t.Skip("helper process for TestCrashSIGKILL")
	}
	window, _ := strconv.Atoi(os.Getenv(crashWindowEnv))
	b, st, say := crashChildBroker(t, engine.Config{WindowMessages: window})
	conn, _ := b.Connect(engine.ConnectionOptions{})
	ctx := context.Background()
	if mode == "load" {
		crashLoad(conn, 8, say)
	}
	s, _ := conn.CreateSession(engine.ClientAcknowledge)
	c, _ := s.CreateConsumer(queueA, engine.ConsumerOptions{Prefetch: 50})
	_ = conn.Start()
	idle := 0
	var batch []string
	var last uint64
	confirmAcks := os.Getenv(crashAckEnv) == "confirm"
	ack := func() {
		if len(batch) == 0 {
			return
		}
		// CLIENT_ACKNOWLEDGE is cumulative: one call acknowledges the batch.
		if confirmAcks {
			// Acknowledged at once, durable later: report both.
			conf, err := s.AcknowledgeConfirm(last)
			if err != nil {
				say("ERR ack %v", err)
				os.Exit(2)
			}
			ids := slices.Clone(batch)
			for _, id := range ids {
				say("TAKEN %s", id)
			}
			go func() {
				if err := conf.Wait(ctx); err != nil {
					say("ERR ack %v", err)
					return
				}
				for _, id := range ids {
					say("ACKED %s", id)
				}
			}()
			batch = batch[:0]
			return
		}
		if err := s.Acknowledge(ctx, last); err != nil {
			say("ERR ack %v", err)
			os.Exit(2)
		}
		for _, id := range batch {
			say("ACKED %s", id)
		}
		batch = batch[:0]
	}
	for {
		d, ok, err := c.ReceiveTimeout(300 * time.Millisecond)
		if err != nil {
			say("ERR receive %v", err)
			os.Exit(2)
		}
		if !ok {
			ack()
			idle++
			if mode == "drain" && idle > 3 {
				say("DONE")
				_ = b.Close()
				_ = st.Close()
				os.Exit(0)
			}
			continue
		}
		idle = 0
		say("RECV %s %v", d.Msg.Body.Data, d.Redelivered)
		batch = append(batch, string(d.Msg.Body.Data))
		last = d.Tag
		if len(batch) == 25 {
			ack()
			if window > 0 && mode == "load" {
				// Fall behind the producers, so that a backlog builds up
				// and is paged out.
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
}

type crashLog struct {
	sent     map[string]bool
	acked    map[string]bool // acknowledged durably
	taken    map[string]bool // acknowledged, perhaps not durably yet (AcknowledgeConfirm)
	settled  map[string]bool // taken or acked
	received map[string]int
	back     int // received again after the restart though acknowledged before the kill
	errs     []string
	done     bool
}

func newCrashLog() *crashLog {
	return &crashLog{sent: map[string]bool{}, acked: map[string]bool{}, taken: map[string]bool{}, settled: map[string]bool{}, received: map[string]int{}}
}

// runCrashChild runs a child broker in mode; with killAfter > 0 it is
// SIGKILLed once it has acknowledged that many messages and at least
// minBacklog of the confirmed sends are still unacknowledged.
func runCrashChild(t *testing.T, dir, mode, ack string, window, killAfter, minBacklog int, log *crashLog) {
	t.Helper()
	child := startCrashChild(t, "TestCrashChild", crashEnv+"="+mode, crashDirEnv+"="+dir, crashAckEnv+"="+ack, crashWindowEnv+"="+strconv.Itoa(window))
	inRun := map[string]bool{} // acknowledged in this run: never delivered again by it
	sc := child.lines
	acks := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "SENT":
			log.sent[f[1]] = true
		case "RECV":
			redelivered, _ := strconv.ParseBool(f[2])
			id := f[1]
			switch {
			case log.received[id] > 0 && !redelivered:
				log.errs = append(log.errs, "message "+id+" delivered again without the redelivered flag")
			case log.acked[id]:
				log.errs = append(log.errs, "message "+id+" delivered again though its acknowledgement was durable")
			case inRun[id]:
				log.errs = append(log.errs, "message "+id+" delivered again by the broker that took its acknowledgement")
			case log.taken[id]:
				log.back++
			}
			log.received[id]++
		case "TAKEN":
			log.settled[f[1]] = true
			log.taken[f[1]] = true
			inRun[f[1]] = true
			// Kill while acknowledgements are on their way to the disk.
			acks++
			if killAfter > 0 && acks >= killAfter && len(log.sent)-len(log.settled) >= minBacklog {
				child.kill()
			}
		case "ACKED":
			log.settled[f[1]] = true
			log.acked[f[1]] = true
			inRun[f[1]] = true
			if ack == "confirm" {
				continue
			}
			acks++
			if killAfter > 0 && acks >= killAfter && len(log.sent)-len(log.settled) >= minBacklog {
				child.kill()
			}
		case "DONE":
			log.done = true
		case "ERR":
			log.errs = append(log.errs, sc.Text())
		}
	}
	child.wait(t, killAfter > 0)
}

// TestCrashSIGKILL kills a loaded broker and drains it after a restart: no
// confirmed send is lost, no message is delivered again unflagged, and no
// message whose acknowledgement was durable comes back. With acknowledgements
// that do not wait for the store (AcknowledgeConfirm), those not yet durable
// at the kill may come back, always flagged redelivered.
func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	for _, ack := range []string{"sync", "confirm"} {
		t.Run(ack, func(t *testing.T) { crashSIGKILL(t, ack, 0) })
	}
	// With a window of 64 the backlog is mostly paged out when the broker
	// is killed, while loading, and killed again in the middle of the
	// drain after the restart.
	for _, ack := range []string{"sync", "confirm"} {
		t.Run("paged-"+ack, func(t *testing.T) { crashSIGKILL(t, ack, 64) })
	}
}

func crashSIGKILL(t *testing.T, ack string, window int) {
	dir := t.TempDir()
	log := newCrashLog()
	backlog := 0
	if window > 0 {
		// Kill only once thousands wait, most of them paged out.
		backlog = 4000
	}
	runCrashChild(t, dir, "load", ack, window, 3000, backlog, log)
	if len(log.sent) == 0 {
		t.Fatal("no send was confirmed before the kill")
	}
	if window > 0 {
		// Then again in the middle of the drain after the restart.
		left := len(log.sent) - len(log.settled)
		runCrashChild(t, dir, "drain", ack, window, left/2, 0, log)
	}
	runCrashChild(t, dir, "drain", ack, window, 0, 0, log)
	if !log.done {
		t.Fatal("the restarted broker did not finish draining")
	}
	for _, e := range log.errs {
		t.Error(e)
	}
	lost := 0
	for id := range log.sent {
		if log.received[id] == 0 {
			lost++
			if lost < 10 {
				t.Errorf("confirmed message %s lost", id)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d confirmed messages lost", lost, len(log.sent))
	}
	t.Logf("%d sends confirmed, %d acknowledged durably before the kill, all received after restart; %d acknowledged but not yet durable came back flagged redelivered",
		len(log.sent), len(log.acked), log.back)
}
