package loadgen

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
)

// InProcess is a Sluice broker started inside this process for a
// benchmark: a temporary data directory, STOMP (and AMQP 1.0 when asked)
// on 127.0.0.1:0, no admin listener.
type InProcess struct {
	Broker *broker.Broker
	dir    string
	owned  bool
}

// StartInProcess starts a Sluice broker with its data in dir (a new
// temporary directory when dir is "", removed by Stop) and STOMP on
// 127.0.0.1:0.
func StartInProcess(ctx context.Context, dir string, log *slog.Logger) (*InProcess, error) {
	return StartInProcessAt(ctx, dir, "127.0.0.1:0", "", log)
}

// StartInProcessAt is StartInProcess with STOMP on stompAddr and AMQP 1.0
// on amqpAddr ("" disables either).
func StartInProcessAt(ctx context.Context, dir, stompAddr, amqpAddr string, log *slog.Logger) (*InProcess, error) {
	owned := false
	if dir == "" {
		d, err := os.MkdirTemp("", "sluice-bench-")
		if err != nil {
			return nil, err
		}
		dir, owned = d, true
	}
	cfg := config.Default()
	cfg.Data = dir
	cfg.Listeners = config.Listeners{STOMP: stompAddr, AMQP: amqpAddr}
	cfg.LogLevel = "warn"
	b, err := broker.Start(ctx, cfg, log)
	if err != nil {
		if owned {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("start in-process sluice: %w", err)
	}
	return &InProcess{Broker: b, dir: dir, owned: owned}, nil
}

// STOMPAddr is the bound STOMP address ("" when disabled).
func (p *InProcess) STOMPAddr() string { return addrString(p.Broker.Addr("stomp")) }

// AMQPAddr is the bound AMQP 1.0 address ("" when disabled).
func (p *InProcess) AMQPAddr() string { return addrString(p.Broker.Addr("amqp")) }

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// Stop shuts the broker down and removes its temporary data directory.
func (p *InProcess) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := p.Broker.Shutdown(ctx)
	if p.owned {
		_ = os.RemoveAll(p.dir)
	}
	return err
}
