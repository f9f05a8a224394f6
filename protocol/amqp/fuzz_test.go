package amqp_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/security"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// fuzzFrames encodes frames for the fuzz seed corpus.
func fuzzFrames(fs ...frames.Frame) []byte {
	var b []byte
	for _, f := range fs {
		if f.Type == 0 && f.Body == nil && f.Payload == nil {
			b = append(b, 0, 0, 0, 8, 2, 0, 0, 0)
			continue
		}
		b, _ = frames.AppendFrame(b, f)
	}
	return b
}

func amqpFrame(ch uint16, body frames.Body, payload []byte) frames.Frame {
	return frames.Frame{Type: frames.TypeAMQP, Channel: ch, Body: body, Payload: payload}
}

// FuzzServerConn feeds arbitrary bytes, after a valid protocol header and
// open, through a server connection into the engine: whatever arrives, the
// server must not panic, must end the connection or keep serving, and must
// still serve a well-behaved client afterwards.
func FuzzServerConn(f *testing.F) {
	begin := types.NewBegin()
	begin.IncomingWindow, begin.OutgoingWindow = 100, 100
	src := types.NewSource()
	src.Address = "q"
	src.Filter = types.FilterSet{{Key: types.Symbol("jms-selector"), Value: types.Described{Descriptor: uint64(0x0000468C00000004), Value: "a > 1"}}}
	tgt := types.NewTarget()
	tgt.Address = "q"
	msg, _ := (&types.Message{Header: &types.Header{Durable: types.Some(true)},
		ApplicationProperties: types.ApplicationProperties{{Key: "a", Value: int32(2)}},
		Value:                 &types.AMQPValue{Value: "hi"}}).AppendAMQP(nil)
	declare, _ := (&types.Message{Value: &types.AMQPValue{Value: &types.Declare{}}}).AppendAMQP(nil)
	flow := types.NewFlow()
	flow.NextIncomingID = types.Some(types.TransferNumber(0))
	flow.IncomingWindow, flow.OutgoingWindow = 100, 100
	flow.Handle = types.Some(types.Handle(0))
	flow.LinkCredit = types.Some(uint32(10))
	flow.Drain = true
	tr := &types.Transfer{Handle: 1, DeliveryID: types.Some(types.DeliveryNumber(0)), DeliveryTag: []byte{1}, MessageFormat: types.Some(types.MessageFormat(0))}
	more := &types.Transfer{Handle: 1, DeliveryID: types.Some(types.DeliveryNumber(1)), DeliveryTag: []byte{2}, More: true}
	seeds := [][]byte{
		fuzzFrames(amqpFrame(0, begin, nil)),
		fuzzFrames(amqpFrame(0, begin, nil),
			amqpFrame(0, &types.Attach{Name: "r", Handle: 0, Role: types.RoleReceiver, Source: src, Target: types.NewTarget()}, nil),
			amqpFrame(0, &types.Attach{Name: "s", Handle: 1, Role: types.RoleSender, Source: types.NewSource(), Target: tgt}, nil),
			amqpFrame(0, tr, msg), amqpFrame(0, flow, nil),
			amqpFrame(0, &types.Disposition{Role: types.RoleReceiver, First: 0, Settled: true, State: &types.Accepted{}}, nil),
			amqpFrame(0, &types.Detach{Handle: 0, Closed: true}, nil), amqpFrame(0, types.NewEnd(), nil)),
		fuzzFrames(amqpFrame(0, begin, nil),
			amqpFrame(0, &types.Attach{Name: "c", Handle: 1, Role: types.RoleSender, Source: types.NewSource(), Target: &types.Coordinator{}}, nil),
			amqpFrame(0, tr, declare)),
		fuzzFrames(amqpFrame(0, begin, nil),
			amqpFrame(0, &types.Attach{Name: "s", Handle: 1, Role: types.RoleSender, Source: types.NewSource(), Target: tgt}, nil),
			amqpFrame(0, more, msg[:3]), amqpFrame(0, &types.Transfer{Handle: 1, Aborted: true}, nil)),
		fuzzFrames(frames.Frame{}, amqpFrame(0, types.NewClose(), nil)),
		{0, 0, 0, 8, 1, 0, 0, 0},
		{0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		f.Fatal(err)
	}
	defer eng.Close()
	srv := sluiceamqp.NewServer(eng, sluiceamqp.Options{ConnectTimeout: time.Second, IdleTimeout: 2 * time.Second})
	defer srv.Shutdown(context.Background())
	hdr := frames.NewProtocolHeader(frames.ProtocolAMQP).Bytes()
	open := types.NewOpen()
	open.ContainerID = ""
	openBytes := fuzzFrames(amqpFrame(0, open, nil))
	f.Fuzz(func(t *testing.T, input []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() { srv.ServeConn(server); close(done) }()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_ = client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, _ = client.Write(hdr[:])
		_, _ = client.Write(openBytes)
		_, _ = client.Write(input)
		_ = client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("server connection did not end after the client closed")
		}
	})
}

// FuzzSASL feeds arbitrary SASL input to a server whose realm has users:
// with plain set, input is the initial response of a PLAIN sasl-init;
// otherwise it is whatever bytes follow the SASL protocol header. Whatever
// arrives, the server must not panic or hang: it answers with a
// sasl-outcome or closes the socket, and an ok outcome comes only for
// alice's own password.
func FuzzSASL(f *testing.F) {
	plainInit := func(resp string) []byte {
		return fuzzFrames(frames.Frame{Type: frames.TypeSASL, Body: &types.SASLInit{Mechanism: "PLAIN", InitialResponse: []byte(resp)}})
	}
	for _, s := range []struct {
		plain bool
		input string
	}{
		{true, "\x00alice\x00" + fuzzPassword},
		{true, "alice\x00alice\x00" + fuzzPassword},
		{true, "\x00alice\x00wrong"},
		{true, "\x00mallory\x00" + fuzzPassword},
		{true, ""},
		{true, "\x00\x00"},
		{true, "\x00alice\x00" + fuzzPassword + "\x00"},
		{true, "\xff\xfe\x00\x00\x00"},
		{false, string(plainInit("\x00alice\x00" + fuzzPassword))},
		{false, string(plainInit("\x00alice"))},
		{false, string(fuzzFrames(frames.Frame{Type: frames.TypeSASL, Body: &types.SASLInit{Mechanism: "ANONYMOUS"}}))},
		{false, string(fuzzFrames(frames.Frame{Type: frames.TypeSASL, Body: &types.SASLInit{Mechanism: "EXTERNAL"}}))},
		{false, string(fuzzFrames(frames.Frame{Type: frames.TypeSASL, Body: &types.SASLResponse{Response: []byte("x")}}))},
		{false, string(fuzzFrames(amqpFrame(0, types.NewOpen(), nil)))},
		{false, "\x00\x00\x00\x08\x01\x00\x00\x00"},
		{false, "\xff\xff\xff\xff\x01\x00\x00\x00"},
		{false, ""},
	} {
		f.Add(s.plain, []byte(s.input))
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(fuzzPassword), bcrypt.MinCost)
	if err != nil {
		f.Fatal(err)
	}
	realm, err := security.New(security.Options{
		Users:        []security.User{{Name: "alice", PasswordHash: string(hash), Roles: []string{"app"}}},
		Grants:       []security.Grant{{Role: "app", Match: "*", Actions: []string{"*"}}},
		FailureDelay: -1,
	})
	if err != nil {
		f.Fatal(err)
	}
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		f.Fatal(err)
	}
	defer eng.Close()
	srv := sluiceamqp.NewServer(eng, sluiceamqp.Options{Realm: realm, ConnectTimeout: 2 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Shutdown(context.Background())
	hdr := frames.NewProtocolHeader(frames.ProtocolSASL).Bytes()
	f.Fuzz(func(t *testing.T, plain bool, input []byte) {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		// The input. A PLAIN sasl-init is one whole frame, which the
		// server must answer; after raw input the client's side ends, so
		// that a server waiting for more sees the end at once.
		go func() {
			b := append([]byte(nil), hdr[:]...)
			if plain {
				b = append(b, plainInit(string(input))...)
			} else {
				b = append(b, input...)
			}
			_, _ = nc.Write(b)
			if !plain {
				_ = nc.(*net.TCPConn).CloseWrite()
			}
		}()
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		r := frames.NewReader(bufio.NewReader(nc), 1<<20)
		var outcome *types.SASLOutcome
		if h, err := r.ReadProtocolHeader(); err == nil {
			if h.ID != frames.ProtocolSASL {
				t.Fatalf("answered with protocol header %s", h)
			}
			for range 2 {
				fr, err := r.ReadFrame()
				if err != nil {
					break
				}
				if o, ok := fr.Body.(*types.SASLOutcome); ok {
					outcome = o
					break
				}
			}
		}
		if plain && outcome == nil {
			t.Fatalf("PLAIN response %q got no sasl-outcome", input)
		}
		if plain && outcome.Code == types.SASLCodeOK {
			if user, pass, ok := fuzzPlain(input); !ok || user != "alice" || pass != fuzzPassword {
				t.Fatalf("PLAIN response %q let in", input)
			}
		}
		if outcome != nil && outcome.Code != types.SASLCodeOK {
			// A refusal closes the socket.
			if _, err := io.ReadAll(nc); err != nil {
				t.Fatalf("the socket stays open after sasl-outcome %d: %v", outcome.Code, err)
			}
		}
		if !plain {
			// Whatever came, the server ends the connection.
			if _, err := io.ReadAll(nc); err != nil {
				t.Fatalf("the server neither answered nor closed: %v", err)
			}
		}
	})
}

const fuzzPassword = "fuzz-secret"

// fuzzPlain is what a correct PLAIN response holds: authzid (empty or the
// user) NUL user NUL password.
func fuzzPlain(resp []byte) (user, password string, ok bool) {
	parts := bytes.SplitN(resp, []byte{0}, 3)
	if len(parts) != 3 || (len(parts[0]) > 0 && !bytes.Equal(parts[0], parts[1])) {
		return "", "", false
	}
	return string(parts[1]), string(parts[2]), true
}
