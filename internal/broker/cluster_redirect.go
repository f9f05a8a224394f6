package broker

// The redirect responders of a cluster's followers (cluster.go): each
// speaks just enough of its protocol, with the protocol's own codec, to
// refuse the connection naming the leader's address, so that a client
// with a failover list moves on. They give the client nothing else and
// accept whatever credentials it sends: the leader's address is in the
// configuration every node has, not a secret.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// redirectTimeout bounds a refused connection's whole exchange.
const redirectTimeout = 10 * time.Second

// redirect is what a follower tells a client it refuses about the leader.
type redirect struct {
	// addr is the leader's address for the listener the client came in
	// on; "" when its members entry has none, or no other node leads.
	addr string
	// known: a leader is known. self: it is this node, which serves no
	// clients for the moment (its engine is opening, or it is stopping
	// and handing its leadership over).
	known, self bool
}

// text says where the leader is, for the messages of the responders.
func (r redirect) text() string {
	switch {
	case r.self:
		return "this node leads its Sluice cluster but is not serving clients at the moment (starting or stopping); try again or try another node"
	case r.addr != "":
		return "this node is a follower of a Sluice cluster; the leader is at " + r.addr
	case r.known:
		return "this node is a follower of a Sluice cluster; the leader's address for this protocol is not configured (cluster.members)"
	default:
		return "this node is a follower of a Sluice cluster and no leader is elected yet; try another node"
	}
}

// refuseSTOMP reads the client's CONNECT (or STOMP) frame and answers an
// ERROR frame naming the leader's STOMP address in its message header and
// body, then closes.
func refuseSTOMP(nc net.Conn, rd redirect) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(redirectTimeout))
	r := frame.NewReader(nc, frame.DefaultLimits())
	var connect *frame.Frame
	for range 4 { // heart-beats are not frames; a client sends CONNECT first
		f, err := r.ReadFrame()
		if err != nil {
			return
		}
		if f.Command.IsConnect() {
			connect = f
			break
		}
	}
	if connect == nil {
		return
	}
	accept, present := connect.Get("accept-version")
	v, err := frame.NegotiateVersion(accept, present, frame.AllVersions())
	if err != nil {
		v = frame.V10
	}
	msg := rd.text()
	e := &frame.Frame{Command: frame.CmdError, Body: []byte(msg + "\n")}
	e.Set(frame.HeaderMessage, msg)
	if rd.addr != "" {
		e.Set("leader", rd.addr)
	}
	e.Set("content-type", "text/plain")
	w := frame.NewWriter(nc, frame.EncodeOptions{})
	w.SetVersion(v)
	if err := w.WriteFrame(e); err != nil {
		return
	}
	_ = w.Flush()
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	drain(nc)
}

// drain reads what the peer still sends until it closes (or the deadline),
// so that closing does not reset the connection before the peer has read
// the refusal.
func drain(nc net.Conn) {
	_ = nc.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 512)
	for range 64 {
		if _, err := nc.Read(buf); err != nil {
			return
		}
	}
}

// refuseAMQP answers an AMQP 1.0 client (after SASL, if it starts with
// it, whose outcome is ok) with an open and then a close whose error is
// amqp:connection:redirect carrying the leader's host and port in its
// info (network-host, port; no hostname, which Qpid JMS would take as
// a virtual host), as the AMQP 1.0 specification's
// connection error redirect says.
func refuseAMQP(nc net.Conn, rd redirect) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(redirectTimeout))
	r := frames.NewReader(bufio.NewReader(nc), 64<<10)
	w := frames.NewWriter(nc, 64<<10)
	h, err := r.ReadProtocolHeader()
	if err != nil || !h.IsAMQP10() {
		_ = w.WriteProtocolHeader(frames.NewProtocolHeader(frames.ProtocolSASL))
		return
	}
	if h.ID == frames.ProtocolSASL {
		if err := w.WriteProtocolHeader(h); err != nil {
			return
		}
		mechs := []types.Symbol{"PLAIN", "ANONYMOUS"}
		if err := w.WriteFrame(frames.Frame{Type: frames.TypeSASL, Body: &types.SASLMechanisms{SASLServerMechanisms: mechs}}); err != nil {
			return
		}
		if _, err := r.ReadFrame(); err != nil { // sasl-init
			return
		}
		if err := w.WriteFrame(frames.Frame{Type: frames.TypeSASL, Body: &types.SASLOutcome{Code: types.SASLCodeOK}}); err != nil {
			return
		}
		if h, err = r.ReadProtocolHeader(); err != nil || h.ID != frames.ProtocolAMQP {
			return
		}
	}
	if h.ID != frames.ProtocolAMQP {
		_ = w.WriteProtocolHeader(frames.NewProtocolHeader(frames.ProtocolAMQP))
		return
	}
	if err := w.WriteProtocolHeader(h); err != nil {
		return
	}
	if _, err := r.ReadFrame(); err != nil { // open
		return
	}
	if err := w.WriteFrame(frames.Frame{Type: frames.TypeAMQP, Body: &types.Open{ContainerID: "sluice"}}); err != nil {
		return
	}
	e := &types.Error{Condition: types.ConnectionErrorRedirect, Description: rd.text()}
	if host, port, err := splitPort(rd.addr); err == nil {
		e.Info = types.Fields{
			{Key: types.Symbol("network-host"), Value: host},
			{Key: types.Symbol("port"), Value: port},
		}
	} else {
		e.Condition = types.ConnectionErrorConnectionForced
	}
	if err := w.WriteFrame(frames.Frame{Type: frames.TypeAMQP, Body: &types.Close{Error: e}}); err != nil {
		return
	}
	// Wait (bounded) for the client's close.
	for range 16 {
		f, err := r.ReadFrame()
		if err != nil {
			return
		}
		if _, ok := f.Body.(*types.Close); ok {
			return
		}
	}
}

// splitPort splits host:port with a port that fits an AMQP ushort.
func splitPort(addr string) (string, uint16, error) {
	if addr == "" {
		return "", 0, errors.New("no address")
	}
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", p, err)
	}
	return host, uint16(n), nil
}

// refuseAMQP091 answers an AMQP 0-9-1 client's protocol header with
// connection.start and its start-ok with connection.close 320
// (CONNECTION_FORCED) whose reply text names the leader's address.
func refuseAMQP091(nc net.Conn, rd redirect) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(redirectTimeout))
	br := bufio.NewReader(nc)
	hdr := make([]byte, 8)
	if _, err := io.ReadFull(br, hdr); err != nil || !is091(hdr) {
		return
	}
	start := &spec.ConnectionStart{VersionMajor: 0, VersionMinor: 9,
		ServerProperties: spec.Table{"product": "Sluice", "version": Version},
		Mechanisms:       []byte("PLAIN AMQPLAIN"), Locales: []byte("en_US")}
	if _, err := nc.Write(spec.AppendMethodFrame(nil, 0, start)); err != nil {
		return
	}
	fr := spec.NewFrameReader(br, 128<<10)
	if !awaitMethod[*spec.ConnectionStartOk](fr) {
		return
	}
	text := "CONNECTION_FORCED - " + rd.text()
	if len(text) > 255 {
		text = text[:255]
	}
	if _, err := nc.Write(spec.AppendMethodFrame(nil, 0, &spec.ConnectionClose{ReplyCode: 320, ReplyText: text})); err != nil {
		return
	}
	awaitMethod[*spec.ConnectionCloseOk](fr)
}

// awaitMethod reads frames until a method of type M on channel 0 (true),
// or an error or a bounded number of other frames (false).
func awaitMethod[M spec.Method](fr *spec.FrameReader) bool {
	for range 16 {
		f, err := fr.ReadFrame()
		if err != nil {
			return false
		}
		if f.Type != spec.FrameMethod || f.Channel != 0 {
			continue
		}
		m, err := spec.DecodeMethod(f.Payload)
		if err != nil {
			return false
		}
		if _, ok := m.(M); ok {
			return true
		}
	}
	return false
}
