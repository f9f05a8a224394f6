package stomp_test

import (
	"fmt"
	"testing"

	gostomp "github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/stomp"
)

// BenchmarkQueueThroughput sends 1 KiB non-persistent messages from one
// go-stomp producer to one auto-acknowledging go-stomp consumer over
// loopback TCP.
func BenchmarkQueueThroughput(b *testing.B) {
	t := &testing.T{}
	addr, _ := startServer(t, engine.Config{}, stomp.Options{})
	prod, err := gostomp.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Disconnect()
	cons, err := gostomp.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Disconnect()
	dest := fmt.Sprintf("/queue/bench-%d", b.N)
	sub, err := cons.Subscribe(dest, gostomp.AckAuto)
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 1024)
	b.SetBytes(1024)
	b.ResetTimer()
	go func() {
		for i := 0; i < b.N; i++ {
			if err := prod.Send(dest, "application/octet-stream", body); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	for i := 0; i < b.N; i++ {
		m := <-sub.C
		if m.Err != nil {
			b.Fatal(m.Err)
		}
	}
}
