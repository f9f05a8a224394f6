package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// A redelivery delay and a time-to-deliver hold across SIGKILL: messages a
// consumer failed (NACKed) with a redelivery delay, and messages sent with a
// delivery time, are not delivered before their time after the restart,
// and none is lost.

const crashDelayEnv = "SLUICE_CRASH_DELAY_CHILD"

func TestCrashDelayChild(t *testing.T) {
	mode := os.Getenv(crashDelayEnv)
	if mode == "" {
		t.Skip("helper process for TestCrashSIGKILLDelays")
	}
	st, _ := openDurable(t, os.Getenv("SLUICE_CRASH_DIR"))
	b, err := engine.New(context.Background(), engine.Config{Store: st, AutoCreate: true, ConsumeBeforeStore: true})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	ctx := context.Background()
	conn, _ := b.Connect(engine.ConnectionOptions{})
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...); out.Flush() }
	if mode == "load" {
		ps, _ := conn.CreateSession(engine.AutoAcknowledge)
		p, _ := ps.CreateProducer(queueA)
		const n = 200
		for i := 0; i < n; i++ {
			o := engine.SendOptions{}
			if i%2 == 1 { // odd ones: a delivery time 3 s ahead
				o = engine.SendOptions{Set: engine.SetDeliveryTime, DeliveryTime: time.Now().Add(3 * time.Second).UnixMilli()}
			}
			m := &message.Message{Body: message.Body{Kind: message.BodyText, Data: []byte(strconv.Itoa(i))}}
			if err := p.Send(ctx, m, o); err != nil {
				say("ERR %v", err)
				os.Exit(2)
			}
			if i%2 == 1 {
				say("DUE %d %d", i, m.DeliveryTime)
			} else {
				say("SENT %d", i)
			}
		}
		// Even ones: received and failed with a 3 s redelivery delay.
		s, _ := conn.CreateSession(engine.IndividualAcknowledge)
		s.SetRedeliveryDelay(3 * time.Second)
		c, _ := s.CreateConsumer(queueA, engine.ConsumerOptions{Prefetch: 10})
		_ = conn.Start()
		for failed := 0; failed < n/2; {
			d, ok, err := c.ReceiveTimeout(5 * time.Second)
			if err != nil || !ok {
				say("ERR receive %v %v", ok, err)
				os.Exit(2)
			}
			if err := s.Settle(ctx, d.Tag, engine.Failed); err != nil {
				say("ERR settle %v", err)
				os.Exit(2)
			}
			say("DUE %s %d", d.Msg.Body.Data, time.Now().Add(3*time.Second).UnixMilli())
			failed++
		}
		say("READY")
		time.Sleep(time.Minute)
		return
	}
	s, _ := conn.CreateSession(engine.AutoAcknowledge)
	c, _ := s.CreateConsumer(queueA, engine.ConsumerOptions{})
	_ = conn.Start()
	for {
		d, ok, err := c.ReceiveTimeout(6 * time.Second)
		if err != nil {
			say("ERR %v", err)
			os.Exit(2)
		}
		if !ok {
			say("DONE")
			_ = b.Close()
			_ = st.Close()
			return
		}
		say("GOT %s %d", d.Msg.Body.Data, time.Now().UnixMilli())
	}
}

func TestCrashSIGKILLDelays(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	dir := t.TempDir()
	due := map[string]int64{}
	got := map[string]int64{}
	run := func(mode string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDelayChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDelayEnv+"="+mode, "SLUICE_CRASH_DIR="+dir)
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
		defer timer.Stop()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 0:
			case f[0] == "ERR":
				_ = cmd.Process.Kill()
				t.Fatal(sc.Text())
			case f[0] == "DUE" && len(f) == 3:
				due[f[1]], _ = strconv.ParseInt(f[2], 10, 64)
			case f[0] == "GOT" && len(f) == 3:
				if _, dup := got[f[1]]; dup {
					t.Errorf("message %s delivered twice after the restart", f[1])
				}
				got[f[1]], _ = strconv.ParseInt(f[2], 10, 64)
			case f[0] == "READY":
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		_ = cmd.Wait()
	}
	run("load")
	if len(due) != 200 {
		t.Fatalf("%d messages delayed before the kill, want 200", len(due))
	}
	run("drain")
	for id, at := range due {
		when, ok := got[id]
		if !ok {
			t.Errorf("message %s lost", id)
			continue
		}
		// The clock is read after the delay was granted: allow for that.
		if when < at-100 {
			t.Errorf("message %s delivered %d ms before its time", id, at-when)
		}
	}
}
