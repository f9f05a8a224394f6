package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// crashLedger is what the clients of TestAMQP091SIGKILLLosesNothingConfirmed
// saw, across every broker process.
type crashLedger struct {
	mu        sync.Mutex
	confirmed map[string]bool // publisher confirms received
	delivered map[string]int  // deliveries per message ID
	unflagged []string        // a second delivery without the redelivered flag
}

func (l *crashLedger) confirm(id string) {
	l.mu.Lock()
	l.confirmed[id] = true
	l.mu.Unlock()
}

func (l *crashLedger) deliver(id string, redelivered bool) {
	l.mu.Lock()
	if l.delivered[id] > 0 && !redelivered {
		l.unflagged = append(l.unflagged, id)
	}
	l.delivered[id]++
	l.mu.Unlock()
}

func (l *crashLedger) confirms() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.confirmed)
}

// A broker SIGKILLed while a producer publishes persistent messages with
// confirms over AMQP 0-9-1 and a consumer acknowledges them loses no
// confirmed message, and delivers none a second time without the
// redelivered flag: three kills in a row, then a drain.
func TestAMQP091SIGKILLLosesNothingConfirmed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills broker processes")
	}
	dir := t.TempDir()
	addr, admin := freeAddr(t), freeAddr(t)
	type process struct {
		cmd  *exec.Cmd
		done chan error
	}
	start := func() process {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMainProcess$")
		cmd.Env = append(os.Environ(), "SLUICE_TEST_MAIN_ARGS="+strings.Join([]string{"serve", "--data", dir,
			"--stomp", "", "--amqp", addr, "--admin", admin, "--websocket", ""}, "\n"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		waitReady(t, admin, done)
		return process{cmd, done}
	}
	kill := func(p process, sig syscall.Signal) {
		_ = p.cmd.Process.Signal(sig)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatal("the broker did not exit")
		}
	}
	const queue = "crash091"
	ledger := &crashLedger{confirmed: map[string]bool{}, delivered: map[string]int{}}
	dial := func() (*amqp.Connection, *amqp.Channel) {
		conn, err := amqp.Dial("amqp://guest:guest@" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		return conn, ch
	}
	// consume acknowledges every delivery until the connection ends.
	consume := func(ch *amqp.Channel, idle time.Duration) {
		if err := ch.Qos(50, 0, false); err != nil {
			return
		}
		ds, err := ch.Consume(queue, "", false, false, false, false, nil)
		if err != nil {
			return
		}
		for {
			select {
			case d, ok := <-ds:
				if !ok {
					return
				}
				ledger.deliver(d.MessageId, d.Redelivered)
				_ = d.Ack(false)
			case <-time.After(idle):
				return
			}
		}
	}
	for round := 0; round < 3; round++ {
		broker := start()
		pconn, pch := dial()
		cconn, cch := dial()
		stop := make(chan struct{}) // closed once the broker is killed
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			consume(cch, time.Minute)
		}()
		go func() {
			defer wg.Done()
			if err := pch.Confirm(false); err != nil {
				return
			}
			acks := pch.NotifyPublish(make(chan amqp.Confirmation, 256))
			ids := map[uint64]string{}
			var tag uint64
			window := make(chan struct{}, 64)
			var mu sync.Mutex
			go func() {
				for c := range acks {
					mu.Lock()
					id := ids[c.DeliveryTag]
					delete(ids, c.DeliveryTag)
					mu.Unlock()
					if c.Ack {
						ledger.confirm(id)
					}
					<-window
				}
			}()
			for i := 0; i < 100000; i++ {
				select {
				case window <- struct{}{}:
				case <-stop:
					return
				}
				id := fmt.Sprintf("r%d-%d", round, i)
				mu.Lock()
				tag++
				ids[tag] = id
				mu.Unlock()
				err := pch.PublishWithContext(context.Background(), "", queue, false, false, amqp.Publishing{
					DeliveryMode: amqp.Persistent, MessageId: id, Body: []byte(id)})
				if err != nil {
					return // the broker was killed
				}
			}
		}()
		// Kill once a good number more were confirmed.
		target := ledger.confirms() + 1500
		for i := 0; ledger.confirms() < target; i++ {
			if i == 3000 {
				t.Fatalf("round %d: %d confirms after 30 s, want %d", round, ledger.confirms(), target)
			}
			time.Sleep(10 * time.Millisecond)
		}
		kill(broker, syscall.SIGKILL)
		close(stop)
		_ = pconn.Close()
		_ = cconn.Close()
		wg.Wait()
	}
	broker := start()
	defer kill(broker, syscall.SIGTERM)
	conn, ch := dial()
	consume(ch, 3*time.Second)
	_ = conn.Close()

	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	var lost []string
	for id := range ledger.confirmed {
		if ledger.delivered[id] == 0 {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d confirmed messages never delivered, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	if len(ledger.unflagged) > 0 {
		t.Errorf("%d messages delivered again without the redelivered flag, e.g. %v", len(ledger.unflagged), ledger.unflagged[:min(5, len(ledger.unflagged))])
	}
	t.Logf("%d confirmed, %d delivered", len(ledger.confirmed), len(ledger.delivered))
}
