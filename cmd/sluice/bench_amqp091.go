package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/internal/loadgen"
)

// newBenchAMQP091Command is "sluice bench amqp091".
func newBenchAMQP091Command() *cobra.Command {
	var (
		b                        benchFlags
		user, password, vhost, x string
		client                   string
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

--client lean uses a minimal client on Sluice's own 0-9-1 codec instead of
amqp091-go (the same scenarios, frames coalesced into few writes, nothing
allocated per message), for when amqp091-go's CPU cost makes the load
generator the bottleneck.

Without --addr it starts a Sluice broker in-process (a temporary data
directory, AMQP on 127.0.0.1:0, whose listener serves 0-9-1 clients too).`,
		Example: `  sluice bench amqp091 --client lean --scenario queue --count 50000
  sluice bench amqp091 --addr 127.0.0.1:5673 --scenario queue --count 50000
  sluice bench amqp091 --addr 127.0.0.1:5673 --scenario persistent --receipt-window 64 --ack client-individual --prefetch 100
  sluice bench amqp091 --addr 127.0.0.1:5673 --scenario fanout --count 2000 --consumers 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if client != loadgen.ClientAMQP091Go && client != loadgen.ClientLean {
				return fmt.Errorf("--client %q: want amqp091-go or lean", client)
			}
			return b.run(cmd, true, func(addr string) (loadgen.Driver, error) {
				return loadgen.NewAMQP091(loadgen.AMQP091Config{Addr: addr, User: user, Password: password, VirtualHost: vhost, Exchange: x, Client: client}), nil
			})
		},
	}
	b.register(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&user, "user", "guest", "SASL PLAIN user")
	f.StringVar(&password, "password", "guest", "SASL PLAIN password")
	f.StringVar(&vhost, "vhost", "/", "virtual host (connection.open)")
	f.StringVar(&x, "exchange", "amq.topic", "topic exchange of the fanout scenario")
	f.StringVar(&client, "client", loadgen.ClientAMQP091Go, "AMQP 0-9-1 client: amqp091-go (github.com/rabbitmq/amqp091-go) or lean (a minimal client on Sluice's own codec that costs far less CPU, for when amqp091-go is the bottleneck)")
	return cmd
}
