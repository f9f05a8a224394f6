package stomp_test

import (
	"fmt"
	"testing"

	gostomp "github.com/go-stomp/stomp/v3"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/security"
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

// BenchmarkSecuredSendReceive sends 256-byte non-persistent messages from
// one go-stomp producer to one auto-acknowledging go-stomp consumer over
// loopback TCP, with security off and with a realm whose user has 100
// grants (the matching one last), to show what authorization costs: after
// the first message each decision is the engine connection's cached
// answer. It reports msg/s.
func BenchmarkSecuredSendReceive(b *testing.B) {
	grants := make([]security.Grant, 0, 100)
	for i := range 99 {
		grants = append(grants, security.Grant{Role: "app", Kind: "queue", Match: fmt.Sprintf("app%02d.*", i), Actions: []string{"send", "consume", "create"}})
	}
	grants = append(grants, security.Grant{Role: "app", Kind: "queue", Match: "bench.*", Actions: []string{"send", "consume", "create"}})
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		b.Fatal(err)
	}
	secured, err := security.New(security.Options{
		Users:  []security.User{{Name: "bench", PasswordHash: string(hash), Roles: []string{"app"}}},
		Grants: grants,
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		realm *security.Realm
	}{
		{"off", nil},
		{"100grants", secured},
	} {
		b.Run(bc.name, func(b *testing.B) {
			addr, _ := startSecured(b, engine.Config{AutoCreate: true}, bc.realm)
			opts := []func(*gostomp.Conn) error{gostomp.ConnOpt.Login("bench", "pw"),
				gostomp.ConnOpt.ReadChannelCapacity(4096), gostomp.ConnOpt.WriteChannelCapacity(4096),
				gostomp.ConnOpt.Logger(quietLogger{})}
			prod, err := gostomp.Dial("tcp", addr, opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer prod.Disconnect()
			cons, err := gostomp.Dial("tcp", addr, opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer cons.Disconnect()
			dest := fmt.Sprintf("/queue/bench.%d", b.N)
			sub, err := cons.Subscribe(dest, gostomp.AckAuto)
			if err != nil {
				b.Fatal(err)
			}
			// The first message makes the queue and the decisions.
			if err := prod.Send(dest, "application/octet-stream", nil, gostomp.SendOpt.Receipt); err != nil {
				b.Fatal(err)
			}
			if m := <-sub.C; m.Err != nil {
				b.Fatal(m.Err)
			}
			body := make([]byte, 256)
			cpu0, cpuKnown := processCPU()
			b.ResetTimer()
			go func() {
				for range b.N {
					if err := prod.Send(dest, "application/octet-stream", body); err != nil {
						b.Error(err)
						return
					}
				}
			}()
			for range b.N {
				if m := <-sub.C; m.Err != nil {
					b.Fatal(m.Err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
			if cpu1, _ := processCPU(); cpuKnown {
				// Client and server share the process: this is the CPU
				// a message costs end to end, which other processes on
				// the machine disturb far less than the wall clock.
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/msg")
			}
		})
	}
}

// quietLogger is a go-stomp Logger that drops everything, so that a
// benchmark's output lines stay whole.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...any)   {}
func (quietLogger) Infof(string, ...any)    {}
func (quietLogger) Warningf(string, ...any) {}
func (quietLogger) Errorf(string, ...any)   {}
func (quietLogger) Debug(string)            {}
func (quietLogger) Info(string)             {}
func (quietLogger) Warning(string)          {}
func (quietLogger) Error(string)            {}
