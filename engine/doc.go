// Package engine is Sluice's JMS engine: destinations, connections, sessions,
// producers, consumers, browsers, transactions, acknowledgement, redelivery,
// expiry and scheduling, with persistence through package store.
//
// The engine knows nothing of any wire protocol. Protocol front-ends
// (protocol/stomp, protocol/amqp) translate frames into calls on this API, and
// an application can embed the engine and use the same API directly: the
// package's Example (example_test.go) connects, sends a message to a queue
// and receives it, and is compiled and run by the tests.
//
// # Model
//
// A queue holds references to messages ("refs"): the immutable *message.Message
// plus the state of its delivery (delivery count, when it may next be
// delivered). A topic fans each message out to its subscriptions; every
// subscription, durable or not, is a queue of its own whose consumers compete,
// which is also how shared subscriptions work. Persistent messages of durable
// queues and durable subscriptions are written to the store before the send
// returns; their delivery counts are written before each delivery attempt so
// that a restart neither loses a count nor marks a message redelivered that
// was never delivered.
//
// # Memory
//
// A queue keeps at most a window of ready messages in memory (page.go):
// past it, persistent messages, and non-persistent ones sent behind the
// backlog, wait only in the store and are read back in delivery order as
// the window drains. Messages scheduled far ahead wait there too, in a
// time index, until shortly before they are due (pager.go). A topic's
// message paged out for one of its subscriptions leaves its record to the
// collector (collect.go), so no per-message count stays in memory either.
// What a backlog costs is its disk,
// and a restart reads the store's small per-message index records, not the
// messages. The broker-wide memory budget and disk watermark (flow.go) hold
// producers when either is reached; each protocol applies its own flow
// control.
//
// # Store failures
//
// A store write that fails applied nothing (store.Store), and the engine
// undoes what it did in memory: a send is refused and its message
// forgotten, an acknowledgement gives its deliveries back, a transaction
// rolls back. The one exception is a write whose outcome the store cannot
// know (an error wrapping store.ErrIndeterminate: a replicated store's
// leader deposed mid-write). Then the Broker fences itself (fence.go):
// nothing is undone, every later write is refused (ErrFenced), the
// operation's caller is told the outcome is unknown, and Fenced is closed
// so that the Broker's owner closes it and opens a new one on the store,
// which recovers whatever was applied. Recovery reads the store through
// package records, the layout of the engine's records.
package engine
