package amqp091_test

import (
	"context"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/amqp091"
)

// securedServer runs a server whose realm has alice (a trader on orders.*
// queues) and, with anonymous, a guest role that may only subscribe.
func securedServer(t *testing.T, anonymous bool) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte("alice-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	opts := security.Options{
		Users: []security.User{{Name: "alice", PasswordHash: string(h), Roles: []string{"trader"}}},
		Grants: []security.Grant{
			{Role: "trader", Kind: "queue", Match: "orders.*", Actions: []string{"send", "consume", "browse", "create"}},
			{Role: "guest", Kind: "topic", Match: "prices.*", Actions: []string{"subscribe"}},
		},
		FailureDelay: -1,
	}
	if anonymous {
		opts.AnonymousRole = "guest"
	}
	realm, err := security.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(context.Background(), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []message.Destination{{Kind: message.Queue, Name: "orders.a"}, {Kind: message.Queue, Name: "billing.a"}} {
		if _, err := eng.CreateDestination(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	return serve(t, eng, func() { _ = eng.Close() }, amqp091.Options{Realm: realm})
}

func TestAuthentication(t *testing.T) {
	addr := securedServer(t, false)
	tests := []struct {
		name string
		auth []amqp.Authentication
		ok   bool
	}{
		{"PLAIN", []amqp.Authentication{&amqp.PlainAuth{Username: "alice", Password: "alice-pw"}}, true},
		{"AMQPLAIN", []amqp.Authentication{&amqp.AMQPlainAuth{Username: "alice", Password: "alice-pw"}}, true},
		{"wrong password", []amqp.Authentication{&amqp.PlainAuth{Username: "alice", Password: "nope"}}, false},
		{"unknown user", []amqp.Authentication{&amqp.PlainAuth{Username: "mallory", Password: "x"}}, false},
		{"anonymous refused", []amqp.Authentication{&amqp.PlainAuth{}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := amqp.DialConfig("amqp://"+addr+"/", amqp.Config{SASL: tt.auth})
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				_ = c.Close()
				return
			}
			if err == nil {
				_ = c.Close()
				t.Fatal("connected")
			}
			if !errors.Is(err, amqp.ErrCredentials) && amqpCode(err) != 403 {
				t.Fatalf("refused with %v, want a credentials error", err)
			}
		})
	}
}

func TestAnonymousAndAuthorization(t *testing.T) {
	addr := securedServer(t, true)
	// The guest role may not consume queues.
	c, err := amqp.DialConfig("amqp://"+addr+"/", amqp.Config{SASL: []amqp.Authentication{&amqp.PlainAuth{}}})
	if err != nil {
		t.Fatalf("anonymous: %v", err)
	}
	defer c.Close()
	ch := channel(t, c)
	if _, err := ch.Consume("orders.a", "", false, false, false, false, nil); amqpCode(err) != 403 {
		t.Fatalf("anonymous consume: %v, want 403", err)
	}
	// alice may send to orders.*, not to billing.*; the refusal closes
	// only the channel.
	a, err := amqp.DialConfig("amqp://alice:alice-pw@"+addr+"/", amqp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ach := channel(t, a)
	closed := ach.NotifyClose(make(chan *amqp.Error, 1))
	publish(t, ach, "", "orders.a", amqp.Publishing{Body: []byte("ok")})
	publish(t, ach, "", "billing.a", amqp.Publishing{Body: []byte("refused")})
	select {
	case e := <-closed:
		if e == nil || e.Code != 403 {
			t.Fatalf("closed with %v, want 403", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("refused publish left the channel open")
	}
	ach = channel(t, a)
	if d, ok, err := ach.Get("orders.a", true); err != nil || !ok || string(d.Body) != "ok" {
		t.Fatalf("get: %q %v %v", d.Body, ok, err)
	}
}
