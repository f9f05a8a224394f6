package conformance_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/conformance"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
)

// inProcess is a Sluice started with the sluice profile's configuration,
// restartable on the same listener addresses.
type inProcess struct {
	t   *testing.T
	cfg config.Config

	mu sync.Mutex
	b  *broker.Broker
}

func startSluice(t *testing.T) *inProcess {
	t.Helper()
	cfg, err := config.Load("profiles/sluice.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	cfg.Listeners = config.Listeners{STOMP: "127.0.0.1:0", AMQP: "127.0.0.1:0", Admin: "127.0.0.1:0"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Restarts bind the addresses the first start got.
	for name, dst := range map[string]*string{"stomp": &cfg.Listeners.STOMP, "amqp": &cfg.Listeners.AMQP, "admin": &cfg.Listeners.Admin} {
		if a := b.Addr(name); a != nil {
			*dst = a.String()
		} else {
			*dst = ""
		}
	}
	p := &inProcess{t: t, cfg: cfg, b: b}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.b != nil {
			_ = p.b.Shutdown(ctx)
		}
	})
	return p
}

func (p *inProcess) restart(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.b.Shutdown(ctx); err != nil {
		return err
	}
	p.b = nil
	var err error
	for i := 0; i < 50; i++ { // the old listeners' ports are free again at once, but be patient
		p.b, err = broker.Start(ctx, p.cfg, nil)
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// options returns the runner options for the protocols this Sluice serves:
// the runner is told which listeners exist, and the others are reported
// unavailable rather than failed.
func (p *inProcess) options() conformance.Options {
	o := conformance.Options{
		Drivers:     map[string]conformance.Driver{},
		Unavailable: map[string]string{},
		Profile:     conformance.SluiceProfile(),
		Restart:     p.restart,
		Parallel:    4,
		Quiet:       250 * time.Millisecond,
		Timeout:     45 * time.Second,
	}
	if a := p.cfg.Listeners.STOMP; a != "" {
		o.Drivers["stomp"] = conformance.NewSTOMP(a, conformance.STOMPOptions{})
	} else {
		o.Unavailable["stomp"] = "STOMP listener not available: the in-process Sluice serves none"
	}
	if a := p.cfg.Listeners.Admin; a != "" {
		admin := conformance.NewSluiceAdmin(a, "", "", "")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := admin.Probe(ctx); err != nil {
			o.NoAdmin = err.Error()
		} else {
			o.Admin = admin
		}
	} else {
		o.NoAdmin = "the in-process Sluice serves no admin listener"
	}
	if a := p.cfg.Listeners.AMQP; a != "" {
		o.Drivers["amqp"] = conformance.NewAMQP(a)
	} else {
		o.Unavailable["amqp"] = "AMQP listener not available: the in-process Sluice serves no AMQP 1.0 listener yet (internal/broker binds none until the protocol/amqp front-end lands)"
	}
	// AMQP 0-9-1 is served on the AMQP port beside AMQP 1.0 (the protocol
	// header says which).
	if a := p.cfg.Listeners.AMQP; a != "" {
		o.Drivers["amqp091"] = conformance.NewAMQP091(a, conformance.AMQP091Options{})
	} else {
		o.Unavailable["amqp091"] = "AMQP 0-9-1 listener not available: the in-process Sluice serves no AMQP listener"
	}
	return o
}

// TestSuiteAgainstInProcessSluice runs every scenario over every protocol
// the in-process Sluice serves. Every cell that can run must pass; the only
// cells allowed not to run are those of protocols Sluice does not serve,
// those a protocol cannot express, and those the sluice profile declares
// unsupported.
func TestSuiteAgainstInProcessSluice(t *testing.T) {
	p := startSluice(t)
	o := p.options()
	if len(o.Drivers) == 0 {
		t.Fatal("the in-process Sluice serves no protocol")
	}
	scenarios, err := conformance.Select(conformance.All(), os.Getenv("CONFORMANCE_ONLY"))
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	o.Progress = &progress
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep := conformance.Run(ctx, scenarios, o)
	var text bytes.Buffer
	_ = rep.WriteText(&text, true)
	t.Logf("conformance matrix against the in-process Sluice (%s):\n%s", time.Duration(rep.Seconds*float64(time.Second)), text.String())
	if f := os.Getenv("CONFORMANCE_REPORT"); f != "" {
		var html bytes.Buffer
		if err := rep.WriteHTML(&html); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, html.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prof := conformance.SluiceProfile()
	lacks := prof.Lacks
	for _, row := range rep.Rows {
		for col, r := range row.Results {
			switch r.Status {
			case conformance.Fail:
				t.Errorf("%s over %s failed: %s", row.ID, col, r.Detail)
			case conformance.NotSupported:
				ok := false
				for _, n := range row.Needs {
					if _, lacked := lacks[n]; lacked || (n == conformance.NeedAdminDelete && o.Admin == nil) {
						ok = true
					}
					for _, proto := range strings.Split(col, "→") {
						if _, lacked := prof.LacksOn[proto][n]; lacked {
							ok = true
						}
					}
				}
				if !ok {
					t.Errorf("%s over %s not supported, but the sluice profile lacks none of its needs: %s", row.ID, col, r.Detail)
				}
			case conformance.Unavailable:
				if _, served := o.Drivers[strings.Split(col, "→")[0]]; served && !strings.Contains(col, "→") {
					t.Errorf("%s over %s unavailable although served: %s", row.ID, col, r.Detail)
				}
			}
		}
	}
	if t.Failed() {
		t.Logf("progress:\n%s", progress.String())
	}
}

// TestAMQPUnavailableIsNotAFailure checks the runner's handling of a
// protocol whose listener does not answer: its cells are "unavailable",
// with the reason, and the run does not fail.
func TestAMQPUnavailableIsNotAFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	o := conformance.Options{Drivers: map[string]conformance.Driver{}, Unavailable: map[string]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conformance.Probe(ctx, map[string]conformance.Driver{"amqp": conformance.NewAMQP(addr)}, o.Drivers, o.Unavailable)
	if _, ok := o.Drivers["amqp"]; ok || !strings.Contains(o.Unavailable["amqp"], "AMQP listener not available") {
		t.Fatalf("probe of a closed port: drivers %v, unavailable %q", o.Drivers, o.Unavailable)
	}
	scenarios, _ := conformance.Select(conformance.All(), "basic/fifo")
	rep := conformance.Run(ctx, scenarios, o)
	if r := rep.Rows[0].Results["amqp"]; r.Status != conformance.Unavailable || rep.Failed() {
		t.Fatalf("cell %+v, failed %v", r, rep.Failed())
	}
}

// TestAMQP091UnavailableIsNotAFailure is the same for AMQP 0-9-1: a port
// that answers nothing makes its cells, and the cross cells with it,
// "unavailable".
func TestAMQP091UnavailableIsNotAFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	o := conformance.Options{Drivers: map[string]conformance.Driver{}, Unavailable: map[string]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conformance.Probe(ctx, map[string]conformance.Driver{"amqp091": conformance.NewAMQP091(addr, conformance.AMQP091Options{})}, o.Drivers, o.Unavailable)
	if _, ok := o.Drivers["amqp091"]; ok || !strings.Contains(o.Unavailable["amqp091"], "AMQP 0-9-1 listener not available") {
		t.Fatalf("probe of a closed port: drivers %v, unavailable %q", o.Drivers, o.Unavailable)
	}
	scenarios, _ := conformance.Select(conformance.All(), "*/headers-and-properties")
	rep := conformance.Run(ctx, scenarios, o)
	for _, col := range []string{"stomp→amqp091", "amqp091→amqp"} {
		if r := rep.Rows[0].Results[col]; r.Status != conformance.Unavailable {
			t.Errorf("cell %s: %+v", col, r)
		}
	}
	if rep.Failed() {
		t.Fatal("the run failed")
	}
}

// TestCloseEndsConsumersFirst checks each driver's Close against the
// contract the scenarios rely on: when Close returns, the broker has no
// consumer of that connection left. go-amqp's Conn.Close does not wait
// for the broker's answer; before the AMQP 1.0 driver ended its
// subscriptions' sessions first, shared/non-durable now and then saw a
// message sent after the close reach a closing consumer.
func TestCloseEndsConsumersFirst(t *testing.T) {
	p := startSluice(t)
	o := p.options()
	for _, proto := range []string{"stomp", "amqp", "amqp091"} {
		d, ok := o.Drivers[proto]
		if !ok {
			t.Fatalf("the in-process Sluice serves no %s", proto)
		}
		t.Run(proto, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			q := conformance.Dest{Kind: conformance.Queue, Name: "close-first-" + proto}
			for i := 0; i < 20; i++ {
				c, err := d.Dial(ctx, conformance.ConnOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for j := 0; j < 3; j++ {
					if _, err := c.Subscribe(ctx, q, conformance.SubOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.Close(); err != nil {
					t.Fatalf("close %d: %v", i, err)
				}
				info, err := p.b.Engine().DestinationInfo(message.Destination{Kind: message.Queue, Name: q.Name})
				if err != nil {
					t.Fatal(err)
				}
				if info.Consumers != 0 {
					t.Fatalf("round %d: the broker still has %d consumers after Close returned", i, info.Consumers)
				}
			}
		})
	}
}
