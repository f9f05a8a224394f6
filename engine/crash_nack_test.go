package engine_test

import (
	"context"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
)

// The NACK crash test: a broker whose consumer NACKs half of what it is
// delivered (without waiting for the store: SettleConfirm) and
// acknowledges the rest (AcknowledgeConfirm), with a redelivery delay so
// that every NACK writes a record, is killed with SIGKILL under load and
// drained after a restart.

const crashNackEnv = "SLUICE_CRASH_NACK_CHILD"

// nackFirst says whether the consumer NACKs the first delivery of id.
func nackFirst(id string) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return h.Sum32()%2 == 0
}

func TestCrashNackChild(t *testing.T) {
	mode := os.Getenv(crashNackEnv)
	if mode == "" {
		t.Skip("helper process for TestCrashSIGKILLNack")
	}
	b, st, say := crashChildBroker(t, engine.Config{})
	conn, _ := b.Connect(engine.ConnectionOptions{})
	ctx := context.Background()
	if mode == "load" {
		crashLoad(conn, 4, say)
	}
	s, _ := conn.CreateSession(engine.IndividualAcknowledge)
	s.SetRedeliveryDelay(5 * time.Millisecond)
	c, _ := s.CreateConsumer(queueA, engine.ConsumerOptions{Prefetch: 50})
	_ = conn.Start()
	idle := 0
	for {
		d, ok, err := c.ReceiveTimeout(300 * time.Millisecond)
		if err != nil {
			say("ERR receive %v", err)
			os.Exit(2)
		}
		if !ok {
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
		id := string(d.Msg.Body.Data)
		say("RECV %s %v %d", id, d.Redelivered, d.DeliveryCount)
		if mode == "drain" {
			if err := s.Acknowledge(ctx, d.Tag); err != nil {
				say("ERR ack %v", err)
				os.Exit(2)
			}
			continue
		}
		if d.DeliveryCount == 1 && nackFirst(id) {
			conf, err := s.SettleConfirm(d.Tag, engine.Failed)
			if err != nil {
				say("ERR nack %v", err)
				os.Exit(2)
			}
			say("NACKED %s", id)
			go func() {
				if err := conf.Wait(ctx); err == nil {
					say("NACKDURABLE %s", id)
				}
			}()
			continue
		}
		conf, err := s.AcknowledgeConfirm(d.Tag)
		if err != nil {
			say("ERR ack %v", err)
			os.Exit(2)
		}
		say("TAKEN %s", id)
		go func() {
			if err := conf.Wait(ctx); err == nil {
				say("ACKED %s", id)
			}
		}()
	}
}

// nackRun is what the parent learns from one child.
type nackRun struct {
	recv     map[string][]bool // per id, the redelivered flag of each delivery
	counts   map[string][]int  // and its delivery count
	nacked   map[string]bool
	durable  map[string]bool // NACK records durable
	acked    map[string]bool // acknowledgement durable
	taken    map[string]bool
	errs     []string
	done     bool
	killedAt int
}

func runNackChild(t *testing.T, dir, mode string, killAfter int, sent map[string]bool) *nackRun {
	t.Helper()
	child := startCrashChild(t, "TestCrashNackChild", crashNackEnv+"="+mode, crashDirEnv+"="+dir)
	run := &nackRun{recv: map[string][]bool{}, counts: map[string][]int{}, nacked: map[string]bool{},
		durable: map[string]bool{}, acked: map[string]bool{}, taken: map[string]bool{}}
	sc := child.lines
	nacks := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "SENT":
			sent[f[1]] = true
		case "RECV":
			red, _ := strconv.ParseBool(f[2])
			n, _ := strconv.Atoi(f[3])
			run.recv[f[1]] = append(run.recv[f[1]], red)
			run.counts[f[1]] = append(run.counts[f[1]], n)
		case "NACKED":
			run.nacked[f[1]] = true
			// Kill while NACK records are on their way to the disk.
			nacks++
			if killAfter > 0 && nacks >= killAfter {
				child.kill()
			}
		case "NACKDURABLE":
			run.durable[f[1]] = true
		case "TAKEN":
			run.taken[f[1]] = true
		case "ACKED":
			run.acked[f[1]] = true
		case "DONE":
			run.done = true
		case "ERR":
			run.errs = append(run.errs, sc.Text())
		}
	}
	child.wait(t, killAfter > 0)
	return run
}

// TestCrashSIGKILLNack: after a SIGKILL amid NACKs and acknowledgements
// that do not wait for the store, every message not acknowledged comes
// back after the restart (one whose acknowledgement was not yet durable
// may), a message delivered before
// the kill comes back flagged redelivered, and a message NACKed before the
// kill comes back with a delivery count above one; none whose
// acknowledgement was durable comes back.
func TestCrashSIGKILLNack(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	dir := t.TempDir()
	sent := map[string]bool{}
	load := runNackChild(t, dir, "load", 1500, sent)
	if len(sent) == 0 || len(load.nacked) == 0 {
		t.Fatalf("before the kill: %d sends confirmed, %d NACKs", len(sent), len(load.nacked))
	}
	drain := runNackChild(t, dir, "drain", 0, sent)
	if !drain.done {
		t.Fatal("the restarted broker did not finish draining")
	}
	for _, e := range append(load.errs, drain.errs...) {
		t.Error(e)
	}
	bad := 0
	fail := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	back, nackedBack := 0, 0
	for id := range sent {
		again := drain.recv[id]
		switch {
		case load.acked[id] && len(again) > 0:
			fail("message %s came back though its acknowledgement was durable", id)
		case !load.taken[id] && len(again) == 0:
			// An acknowledgement taken but not yet reported durable may
			// have reached the disk before the kill: only a message never
			// acknowledged must come back.
			fail("message %s, never acknowledged, did not come back", id)
		}
		if len(again) == 0 {
			continue
		}
		back++
		if len(load.recv[id]) > 0 && !again[0] {
			fail("message %s, delivered before the kill, came back unflagged", id)
		}
		if load.nacked[id] {
			nackedBack++
			if c := drain.counts[id][0]; c < 2 {
				fail("message %s, NACKed before the kill, came back with delivery count %d", id, c)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d violations", bad)
	}
	t.Logf("%d sends confirmed, %d NACKed (%d durably) and %d acknowledged durably before the kill; %d came back, %d of them NACKed",
		len(sent), len(load.nacked), len(load.durable), len(load.acked), back, nackedBack)
}
