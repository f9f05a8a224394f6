package amqp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
)

// TestPerMessageRedeliveryLimitProperties: the message's redelivery limit
// (WebLogic's JMSRedeliveryLimit) travels as the x-opt-sluice-redelivery-limit
// annotation or, as WebLogic applications on Qpid JMS set it, as the
// application property JMSRedeliveryLimit or JMS_BEA_RedeliveryLimit; the
// annotation wins, then JMSRedeliveryLimit. The limit is on each delivery's
// annotation and decides how many failed deliveries the message survives.
func TestPerMessageRedeliveryLimitProperties(t *testing.T) {
	tests := []struct {
		name       string
		ann        amqp.Annotations
		props      map[string]any
		deliveries int // deliveries before the error destination
	}{
		{"annotation", amqp.Annotations{"x-opt-sluice-redelivery-limit": int32(1)}, nil, 2},
		{"JMSRedeliveryLimit", nil, map[string]any{"JMSRedeliveryLimit": int32(1)}, 2},
		{"JMS_BEA_RedeliveryLimit", nil, map[string]any{"JMS_BEA_RedeliveryLimit": int64(0)}, 1},
		{"JMS_BEA_RedeliveryLimit as a string", nil, map[string]any{"JMS_BEA_RedeliveryLimit": "1"}, 2},
		{"the annotation wins", amqp.Annotations{"x-opt-sluice-redelivery-limit": int32(0)},
			map[string]any{"JMSRedeliveryLimit": int32(2), "JMS_BEA_RedeliveryLimit": int32(2)}, 1},
		{"JMSRedeliveryLimit wins over JMS_BEA_RedeliveryLimit", nil,
			map[string]any{"JMS_BEA_RedeliveryLimit": int32(2), "JMSRedeliveryLimit": int16(0)}, 1},
	}
	dlq := message.Destination{Kind: message.Queue, Name: "limit.DLQ"}
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{Policy: func(d message.Destination) engine.Policy {
		p := engine.DefaultPolicy()
		if d != dlq {
			p.ErrorDestination = dlq
		}
		return p
	}})
	s := session(t, ts.dial(t, nil))
	dead := receiver(t, s, dlq.Name, nil)
	ctx := context.Background()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := fmt.Sprintf("limit.%d", i)
			m := text(tt.name)
			m.Annotations, m.ApplicationProperties = tt.ann, tt.props
			send(t, sender(t, s, q, nil), m)
			r := receiver(t, s, q, nil)
			for n := 1; n <= tt.deliveries; n++ {
				got := recv(t, r)
				if v := got.Annotations["x-opt-sluice-redelivery-limit"]; v != int32(tt.deliveries-1) {
					t.Errorf("delivery %d: x-opt-sluice-redelivery-limit %v (%T), want %d", n, v, v, tt.deliveries-1)
				}
				for _, p := range []string{"JMSRedeliveryLimit", "JMS_BEA_RedeliveryLimit"} {
					if v, ok := got.ApplicationProperties[p]; ok {
						t.Errorf("delivery %d carries %s = %v as a property", n, p, v)
					}
				}
				if err := r.ModifyMessage(ctx, got, &amqp.ModifyMessageOptions{DeliveryFailed: true}); err != nil {
					t.Fatal(err)
				}
			}
			d := recv(t, dead)
			if d.Value != tt.name {
				t.Fatalf("error destination got %v", d.Value)
			}
			accept(t, dead, d)
			recvNone(t, r, 50*time.Millisecond)
		})
	}
}
