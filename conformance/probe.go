package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Probe dials each candidate driver once: those that connect go into
// available, the others into unavailable with "<PROTOCOL> listener not
// available at ADDR: why". This is how the runner learns which protocols the
// broker under test serves.
func Probe(ctx context.Context, candidates map[string]Driver, available map[string]Driver, unavailable map[string]string) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for proto, d := range candidates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			c, err := d.Dial(pctx, ConnOptions{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unavailable[proto] = fmt.Sprintf("%s listener not available at %s: %s", protoLabel(proto), d.Addr(), oneLine(err.Error(), 200))
				return
			}
			_ = c.Close()
			available[proto] = d
		}()
	}
	wg.Wait()
}

// protoLabel is a protocol's name in messages: STOMP, AMQP (1.0), AMQP 0-9-1.
func protoLabel(proto string) string {
	if proto == "amqp091" {
		return "AMQP 0-9-1"
	}
	return strings.ToUpper(proto)
}
