// Package amqp091 is Sluice's AMQP 0-9-1 front-end: the server RabbitMQ
// clients connect to, on the AMQP port beside AMQP 1.0 (the broker tells
// them apart by the protocol header) or on a listener of its own. It
// maps 0-9-1's model onto the engine's JMS one, as docs/amqp091.md
// describes: a declared queue is the engine queue of that name, amq.topic
// is the JMS topics, exclusive and server-named queues are temporary
// queues, basic properties and headers are JMS header fields and typed
// properties.
//
// The frame codec is package spec (it imports nothing of the project);
// this package owns the connections: the handshake (PLAIN, AMQPLAIN and
// ANONYMOUS through the security realm, tune, open), channels, content
// assembly, the reply codes of channel and connection exceptions,
// heart-beats, publisher confirms, transactions and flow control
// (connection.blocked). Like protocol/stomp and protocol/amqp it runs on
// protocol/internal/netserve: its accept loop, reader and writer loops,
// coalescing writer and output budget.
//
// Goroutines of a connection: the reader (Run's own: frames in, methods
// carried out in order), the writer (netserve.Writer: frames out), one
// engine listener per consumer (deliveries), one confirmer per channel
// with confirmations pending, and a flow watcher when the client asked
// for connection.blocked.
package amqp091
