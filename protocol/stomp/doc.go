// Package stomp serves STOMP 1.0, 1.1 and 1.2 on the Sluice engine.
//
// Each client connection is one engine Connection; each SUBSCRIBE is an
// engine Session with one Consumer, in the acknowledgement mode the frame
// asks for; SENDs go through a producer session of the connection, and a
// STOMP transaction (BEGIN … COMMIT/ABORT) is an engine Txn covering the
// SENDs, ACKs and NACKs that name it. The frame codec is package
// protocol/stomp/frame; this package is the session logic and the mapping of
// the header conventions that ActiveMQ, Artemis and RabbitMQ clients use (the
// table is in docs/stomp.md) onto engine messages.
//
// With Options.Realm, CONNECT authenticates the client (login and
// passcode, a verified TLS client certificate, or anonymous), and the
// engine checks the user's permissions at each frame.
//
// Every protocol violation or engine refusal is answered with an ERROR frame
// whose message header says what went wrong (with a receipt-id when the
// failing frame asked for a receipt), and the connection is closed; other
// connections and confirmed messages are untouched. A frame that
// authorization denies is the exception: its ERROR leaves the connection
// open, so that the connection's other work carries on.
package stomp
