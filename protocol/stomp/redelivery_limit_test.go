package stomp_test

import (
	"fmt"
	"testing"
	"time"

	gostomp "github.com/go-stomp/stomp/v3"
	stompframe "github.com/go-stomp/stomp/v3/frame"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/stomp"
)

// TestPerMessageRedeliveryLimitHeaders: a SEND carries the message's
// redelivery limit (WebLogic's JMSRedeliveryLimit) as sluice-redelivery-limit,
// or, as WebLogic applications moved to STOMP do, as JMSRedeliveryLimit or
// JMS_BEA_RedeliveryLimit; sluice-redelivery-limit wins, then
// JMSRedeliveryLimit. The limit shows in the MESSAGE frame and decides how
// many NACKs the message survives before it goes to the error destination.
func TestPerMessageRedeliveryLimitHeaders(t *testing.T) {
	tests := []struct {
		name       string
		headers    []string // name, value pairs
		deliveries int      // deliveries before the error destination
	}{
		{"sluice-redelivery-limit", []string{"sluice-redelivery-limit", "1"}, 2},
		{"JMSRedeliveryLimit", []string{"JMSRedeliveryLimit", "1"}, 2},
		{"JMS_BEA_RedeliveryLimit", []string{"JMS_BEA_RedeliveryLimit", "0"}, 1},
		{"sluice-redelivery-limit wins", []string{"JMSRedeliveryLimit", "2", "sluice-redelivery-limit", "0", "JMS_BEA_RedeliveryLimit", "2"}, 1},
		{"JMSRedeliveryLimit wins over JMS_BEA_RedeliveryLimit", []string{"JMS_BEA_RedeliveryLimit", "2", "JMSRedeliveryLimit", "0"}, 1},
	}
	pol := engine.DefaultPolicy()
	pol.ErrorDestination = message.Destination{Kind: message.Queue, Name: "dlq"}
	policy := func(d message.Destination) engine.Policy {
		if d.Name == "dlq" {
			return engine.DefaultPolicy()
		}
		return pol
	}
	addr, _ := startServer(t, engine.Config{Policy: policy}, stomp.Options{})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			q := fmt.Sprintf("/queue/limit.%d", i)
			sub, err := c.Subscribe(q, gostomp.AckClientIndividual)
			if err != nil {
				t.Fatal(err)
			}
			dlq, err := c.Subscribe("/queue/dlq", gostomp.AckAuto)
			if err != nil {
				t.Fatal(err)
			}
			send := []func(*stompframe.Frame) error{gostomp.SendOpt.Receipt}
			for j := 0; j < len(tt.headers); j += 2 {
				send = append(send, gostomp.SendOpt.Header(tt.headers[j], tt.headers[j+1]))
			}
			if err := c.Send(q, "text/plain", []byte(tt.name), send...); err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= tt.deliveries; n++ {
				m := next(t, sub)
				if got, want := m.Header.Get("sluice-redelivery-limit"), fmt.Sprint(tt.deliveries-1); got != want {
					t.Errorf("delivery %d: sluice-redelivery-limit %q, want %q", n, got, want)
				}
				for _, h := range []string{"JMSRedeliveryLimit", "JMS_BEA_RedeliveryLimit"} {
					if v := m.Header.Get(h); v != "" {
						t.Errorf("delivery %d carries %s: %q as a property", n, h, v)
					}
				}
				if err := c.Nack(m); err != nil {
					t.Fatal(err)
				}
			}
			if d := next(t, dlq); string(d.Body) != tt.name {
				t.Fatalf("error destination got %q", d.Body)
			}
			none(t, sub, 50*time.Millisecond)
		})
	}
}
