package frame

import "strconv"

// Command is a STOMP frame command. The zero value is not a valid command.
type Command uint8

// The commands of STOMP 1.0, 1.1 and 1.2.
const (
	// CmdInvalid is the zero Command; it is never produced by the parser and
	// is refused by the writer.
	CmdInvalid Command = iota
	// CmdConnect opens a session (client to server).
	CmdConnect
	// CmdStomp is the STOMP 1.1+ alias of CONNECT (client to server).
	CmdStomp
	// CmdConnected accepts a session (server to client).
	CmdConnected
	// CmdSend sends a message to a destination (client to server).
	CmdSend
	// CmdSubscribe registers a subscription (client to server).
	CmdSubscribe
	// CmdUnsubscribe removes a subscription (client to server).
	CmdUnsubscribe
	// CmdAck acknowledges a message (client to server).
	CmdAck
	// CmdNack rejects a message, STOMP 1.1+ (client to server).
	CmdNack
	// CmdBegin starts a transaction (client to server).
	CmdBegin
	// CmdCommit commits a transaction (client to server).
	CmdCommit
	// CmdAbort rolls back a transaction (client to server).
	CmdAbort
	// CmdDisconnect closes a session gracefully (client to server).
	CmdDisconnect
	// CmdMessage delivers a message to a subscriber (server to client).
	CmdMessage
	// CmdReceipt confirms that a client frame was processed (server to client).
	CmdReceipt
	// CmdError reports an error, after which the server closes the
	// connection (server to client).
	CmdError

	numCommands
)

// commandNames is indexed by Command; it is never modified.
var commandNames = [numCommands]string{
	CmdInvalid:     "",
	CmdConnect:     "CONNECT",
	CmdStomp:       "STOMP",
	CmdConnected:   "CONNECTED",
	CmdSend:        "SEND",
	CmdSubscribe:   "SUBSCRIBE",
	CmdUnsubscribe: "UNSUBSCRIBE",
	CmdAck:         "ACK",
	CmdNack:        "NACK",
	CmdBegin:       "BEGIN",
	CmdCommit:      "COMMIT",
	CmdAbort:       "ABORT",
	CmdDisconnect:  "DISCONNECT",
	CmdMessage:     "MESSAGE",
	CmdReceipt:     "RECEIPT",
	CmdError:       "ERROR",
}

// String returns the command as it appears on the wire, for example "SEND".
// An invalid command is rendered as "Command(N)".
func (c Command) String() string {
	if c.Valid() {
		return commandNames[c]
	}
	return "Command(" + strconv.Itoa(int(c)) + ")"
}

// Valid reports whether c is one of the fifteen STOMP commands.
func (c Command) Valid() bool { return c > CmdInvalid && c < numCommands }

// IsConnect reports whether c is CONNECT, STOMP or CONNECTED: the frames
// whose headers are never escaped.
func (c Command) IsConnect() bool {
	return c == CmdConnect || c == CmdStomp || c == CmdConnected
}

// AllowsBody reports whether the specification lets frames of this command
// carry a body (SEND, MESSAGE and ERROR). The parser does not enforce it; a
// server may.
func (c Command) AllowsBody() bool {
	return c == CmdSend || c == CmdMessage || c == CmdError
}

// IsClient reports whether c is a frame a client sends to a server.
func (c Command) IsClient() bool {
	switch c {
	case CmdConnect, CmdStomp, CmdSend, CmdSubscribe, CmdUnsubscribe, CmdAck,
		CmdNack, CmdBegin, CmdCommit, CmdAbort, CmdDisconnect:
		return true
	}
	return false
}

// IsServer reports whether c is a frame a server sends to a client.
func (c Command) IsServer() bool {
	switch c {
	case CmdConnected, CmdMessage, CmdReceipt, CmdError:
		return true
	}
	return false
}

// ParseCommand returns the Command spelled s (case-sensitive, as the
// specification requires), or CmdInvalid and false.
func ParseCommand(s string) (Command, bool) {
	c := lookupCommand([]byte(s))
	return c, c != CmdInvalid
}

// lookupCommand maps a command line to its Command without allocating.
func lookupCommand(b []byte) Command {
	switch string(b) {
	case "SEND":
		return CmdSend
	case "MESSAGE":
		return CmdMessage
	case "ACK":
		return CmdAck
	case "NACK":
		return CmdNack
	case "SUBSCRIBE":
		return CmdSubscribe
	case "UNSUBSCRIBE":
		return CmdUnsubscribe
	case "RECEIPT":
		return CmdReceipt
	case "BEGIN":
		return CmdBegin
	case "COMMIT":
		return CmdCommit
	case "ABORT":
		return CmdAbort
	case "CONNECT":
		return CmdConnect
	case "STOMP":
		return CmdStomp
	case "CONNECTED":
		return CmdConnected
	case "DISCONNECT":
		return CmdDisconnect
	case "ERROR":
		return CmdError
	}
	return CmdInvalid
}
