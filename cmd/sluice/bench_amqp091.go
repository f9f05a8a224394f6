package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/internal/loadgen"
)

// newBenchAMQP091Command is "sluice bench amqp091".
func newBenchAMQP091Command() *cobra.Command {
	var (
		b                        benchFlags
		user, password, vhost, x string
	)
	cmd := &cobra.Command{
		Use:   "amqp091",
		Short: "Benchmark an AMQP 0-9-1 broker (such as RabbitMQ)",
		Long: `Benchmark an AMQP 0-9-1 broker with the scenarios of "sluice bench", through
the amqp091-go client, one connection and channel per producer and consumer.

A queue run declares the destination as a queue (durable when persistent)
and publishes to it through the default exchange; the first consumer deletes
it at the end. The fanout scenario (or --topic) publishes to --exchange with
the destination as routing key, and each subscriber binds an exclusive,
auto-delete queue of its own. Persistent messages have delivery-mode 2.

With --receipts (the persistent and backlog scenarios) the producers' channels
are in confirm mode and keep at most --receipt-window publishes unconfirmed;
without, publishes are unconfirmed and a producer's last one is followed by a
synchronous round trip. Consumers with --ack auto consume with no-ack; client
acks acknowledge (multiple every --ack-every, or each). --prefetch is
basic.qos's prefetch-count.

--addr is required: Sluice's in-process broker has no AMQP 0-9-1 listener.`,
		Example: `  sluice bench amqp091 --addr 127.0.0.1:5673 --scenario queue --count 50000
  sluice bench amqp091 --addr 127.0.0.1:5673 --scenario persistent --receipt-window 64 --ack client-individual --prefetch 100
  sluice bench amqp091 --addr 127.0.0.1:5673 --scenario fanout --count 2000 --consumers 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if b.addr == "" {
				return errors.New("--addr is required: the in-process Sluice has no AMQP 0-9-1 listener")
			}
			return b.run(cmd, false, func(addr string) (loadgen.Driver, error) {
				return loadgen.NewAMQP091(loadgen.AMQP091Config{Addr: addr, User: user, Password: password, VirtualHost: vhost, Exchange: x}), nil
			})
		},
	}
	b.register(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&user, "user", "guest", "SASL PLAIN user")
	f.StringVar(&password, "password", "guest", "SASL PLAIN password")
	f.StringVar(&vhost, "vhost", "/", "virtual host (connection.open)")
	f.StringVar(&x, "exchange", "amq.topic", "topic exchange of the fanout scenario")
	return cmd
}
