// Package conformance is Sluice's conformance suite: JMS scenarios written
// once, in protocol-neutral terms, and run over every wire protocol a broker
// serves, against Sluice or any other broker.
//
// The pieces:
//
//   - Client interfaces (client.go): Driver, Conn, Sub and Tx are what a
//     JMS application does — connect with a client ID; send with headers,
//     properties, priority, time to live, delivery delay or time and
//     persistence; subscribe with a selector, an acknowledgement mode, a
//     durable or shared subscription name, noLocal and a prefetch window;
//     browse; receive with a timeout; acknowledge, NACK, reject, release or
//     recover; begin, commit and roll back. A driver maps them onto one wire
//     protocol: STOMP (stomp.go, over go-stomp's frame codec), AMQP 1.0
//     (amqp.go, over github.com/Azure/go-amqp), following
//     /work/shared/CONVENTIONS.md, and AMQP 0-9-1 (amqp091.go, over
//     github.com/rabbitmq/amqp091-go), following docs/amqp091.md. What a protocol cannot say, a driver
//     refuses with a NotExpressible error and its reason; the scenario is
//     then reported "not expressible", never skipped silently.
//
//   - Scenarios (s_*.go) are data — an ID, the JMS outcome expected, the
//     section of WebLogic JMS "Managing Your Applications" or specification rule checked, the broker configuration
//     and features needed — plus a short Run function of steps on a T.
//
//   - Needs and profiles (need.go, profile.go): a scenario that needs broker
//     configuration (a redelivery limit, an error destination, a quota)
//     declares a Need; the profile of the broker under test says which
//     destinations carry that configuration, or why the broker lacks it
//     ("not supported"). profiles/sluice.toml is the Sluice configuration
//     the "sluice" profile assumes.
//
//   - The runner (runner.go) runs scenarios over every available protocol
//     and every pair of protocols (cross-protocol scenarios), with bounded
//     waits everywhere, and produces a Report: a scenario × protocol matrix
//     rendered as text, Markdown, JSON and a self-contained HTML page
//     (report.go).
//
//   - Restarts (restart.go): RestartCommand restarts an external broker with
//     a shell command (`sluice conformance --restart-cmd`) and waits, within
//     bounds, until the old broker is gone and the new one accepts;
//     scripts/restart-sluice.sh is such a command for Sluice, and
//     scripts/sluice-report.sh regenerates docs/conformance/sluice.md with
//     it.
//
// `sluice conformance` runs the suite against any broker; the test in this
// package runs it against an in-process Sluice over every protocol that
// Sluice serves.
package conformance
