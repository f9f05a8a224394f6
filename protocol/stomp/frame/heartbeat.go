package frame

import (
	"strconv"
	"strings"
	"time"
)

// maxHeartBeatMillis bounds each heart-beat figure: about 24.8 days, far
// beyond any sensible interval and safely inside time.Duration.
const maxHeartBeatMillis = 1<<31 - 1

// HeartBeat is one party's heart-beat settings, as carried by the
// heart-beat header of CONNECT and CONNECTED ("cx,cy" and "sx,sy"). On the
// wire both figures are whole milliseconds.
type HeartBeat struct {
	// Send is the smallest interval at which the party can guarantee to
	// send heart-beats; 0 means it cannot send them.
	Send time.Duration
	// Receive is the interval at which the party would like to receive
	// heart-beats; 0 means it does not want them.
	Receive time.Duration
}

// ParseHeartBeat parses a heart-beat header value: two non-negative decimal
// integers of milliseconds separated by a comma, such as "10000,10000".
// Blanks around each figure are tolerated. A malformed value is an [*Error]
// of kind ErrInvalidHeartBeat.
func ParseHeartBeat(value string) (HeartBeat, error) {
	first, second, ok := strings.Cut(value, ",")
	if !ok {
		return HeartBeat{}, invalidHeartBeat(value)
	}
	send, ok1 := parseMillis(first)
	recv, ok2 := parseMillis(second)
	if !ok1 || !ok2 {
		return HeartBeat{}, invalidHeartBeat(value)
	}
	return HeartBeat{Send: send, Receive: recv}, nil
}

// parseMillis parses one heart-beat figure.
func parseMillis(s string) (time.Duration, bool) {
	s = strings.Trim(s, " \t")
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
		if n > maxHeartBeatMillis {
			return 0, false
		}
	}
	return time.Duration(n) * time.Millisecond, true
}

// invalidHeartBeat builds the error for a malformed heart-beat value.
func invalidHeartBeat(value string) *Error {
	return newError(ErrInvalidHeartBeat, "invalid heart-beat "+quoteForReason([]byte(value))+
		": want two non-negative integers of milliseconds separated by a comma, each at most 2147483647")
}

// String renders h as a heart-beat header value, truncating each figure to
// whole milliseconds; negative durations are written as 0.
func (h HeartBeat) String() string {
	return strconv.FormatInt(max(h.Send.Milliseconds(), 0), 10) + "," +
		strconv.FormatInt(max(h.Receive.Milliseconds(), 0), 10)
}

// NegotiateHeartBeat applies the specification's heart-beating rule to a
// client's CONNECT heart-beat header and the server's own settings (the
// value the server puts in its CONNECTED frame, server.String()).
//
// send is how often the server must send something to the client: 0 when
// the server cannot send heart-beats or the client does not want them,
// otherwise the larger of server.Send and the client's wish. receive is how
// often the client will send something to the server: 0 when the client
// cannot send heart-beats or the server does not want them, otherwise the
// larger of the client's capability and server.Receive. A server usually
// allows some grace beyond receive before it gives up on a silent client.
//
// present tells whether the CONNECT frame had the header; a missing header
// counts as "0,0". A malformed value is an [*Error] of kind
// ErrInvalidHeartBeat. STOMP 1.0 has no heart-beats: a server negotiates
// them only for 1.1 and later.
func NegotiateHeartBeat(clientValue string, present bool, server HeartBeat) (send, receive time.Duration, err error) {
	var client HeartBeat
	if present {
		if client, err = ParseHeartBeat(clientValue); err != nil {
			return 0, 0, err
		}
	}
	send = interval(server.Send, client.Receive)
	receive = interval(client.Send, server.Receive)
	return send, receive, nil
}

// interval combines what a sender can do with what its receiver wants: no
// heart-beats if either is zero (or negative), otherwise the larger.
func interval(canSend, wants time.Duration) time.Duration {
	if canSend <= 0 || wants <= 0 {
		return 0
	}
	return max(canSend, wants)
}
