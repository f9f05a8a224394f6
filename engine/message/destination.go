package message

import (
	"fmt"
	"strings"
)

// The one reading of destination names, shared by every front-end, the
// admin API and the configuration, so that a string means the same
// destination whichever way it arrives. The forms:
//
//	/queue/NAME       queue://NAME        a queue
//	/topic/NAME       topic://NAME        a topic
//	/temp-queue/NAME  temp-queue://NAME   a temporary queue
//	/temp-topic/NAME  temp-topic://NAME   a temporary topic
//	NAME                                  DestinationSyntax.Bare, if the protocol has bare names
//
// The STOMP forms come from ActiveMQ and Artemis, the "://" forms from the
// AMQP JMS mapping (Qpid JMS); both are accepted over every protocol. The
// name is everything after the prefix, may contain '/' and must not be
// empty. Prefixes are case-sensitive: "/Queue/a" has none. What a
// temporary name resolves to (a connection's private alias, or a
// temporary destination the engine made) is the front-end's business, not
// the parser's.

// destPrefixes lists every prefix with its kind, STOMP forms first.
var destPrefixes = [...]struct {
	prefix string
	kind   DestKind
}{
	{"/queue/", Queue},
	{"/topic/", Topic},
	{"/temp-queue/", TempQueue},
	{"/temp-topic/", TempTopic},
	{"queue://", Queue},
	{"topic://", Topic},
	{"temp-queue://", TempQueue},
	{"temp-topic://", TempTopic},
}

// DestinationSyntax is what differs between protocols in reading a
// destination name. The zero value is the strict reading that STOMP, the
// admin API and the configuration use: a name without a prefix is refused.
type DestinationSyntax struct {
	// Bare is the kind of a name without a prefix; NoDest refuses it. An
	// AMQP 1.0 address is bare: its kind comes from the terminus
	// capabilities (or x-opt-jms-dest), and is a queue when they name
	// none. A prefix always wins over Bare.
	Bare DestKind
}

// ParseDestination parses s in the strict syntax (every prefixed form,
// no bare names). Destination.String gives back a form it reads.
func ParseDestination(s string) (Destination, error) {
	return DestinationSyntax{}.Parse(s)
}

// Parse reads s as a destination. Its errors quote s and say what was
// wanted; they are fit to show to the client that sent s.
func (sx DestinationSyntax) Parse(s string) (Destination, error) {
	if s == "" {
		return Destination{}, fmt.Errorf("empty destination")
	}
	for _, p := range destPrefixes {
		if name, ok := strings.CutPrefix(s, p.prefix); ok {
			if name == "" {
				return Destination{}, fmt.Errorf("destination %q has an empty name", s)
			}
			return Destination{Kind: p.kind, Name: name}, nil
		}
	}
	if sx.Bare == NoDest {
		return Destination{}, fmt.Errorf("destination %q has no known prefix (want /queue/NAME, /topic/NAME, /temp-queue/NAME, /temp-topic/NAME, queue://NAME, topic://NAME, temp-queue://NAME or temp-topic://NAME)", s)
	}
	return Destination{Kind: sx.Bare, Name: s}, nil
}
