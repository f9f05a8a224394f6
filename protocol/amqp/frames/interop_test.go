package frames_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

var writeCorpus = flag.Bool("write-corpus", false, "write the frames captured from go-amqp to testdata/fuzz/FuzzFrameDecode")

// peer is the server side of the interop test, written with this
// package: it speaks just enough AMQP for a go-amqp client to send one
// message and receive one.
type peer struct {
	t       *testing.T
	r       *frames.Reader
	w       *frames.Writer
	outMsg  *types.Message // what the server sends to the client's receiver
	mu      sync.Mutex
	got     []frames.Frame  // every frame received
	raw     [][]byte        // every frame received, as bytes
	inMsg   *types.Message  // what the client's sender sent
	inTrans *types.Transfer // the transfer that carried it
	sent    bool
	accept  *types.Disposition // the client's disposition of outMsg
}

func (p *peer) write(f frames.Frame) error {
	if err := p.w.WriteFrame(f); err != nil {
		return fmt.Errorf("write %T: %w", f.Body, err)
	}
	return nil
}

func (p *peer) read() (frames.Frame, error) {
	raw, err := p.r.ReadRawFrame()
	if err != nil {
		return frames.Frame{}, err
	}
	f, err := frames.Decode(raw)
	if err != nil {
		return f, err
	}
	var b []byte
	b = frames.AppendHeader(b, raw.Header)
	b = append(b, raw.Body...)
	p.mu.Lock()
	p.got = append(p.got, f)
	p.raw = append(p.raw, b)
	p.mu.Unlock()
	return f, nil
}

func (p *peer) serve(conn net.Conn) error {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	p.r = frames.NewReader(bufio.NewReader(conn), types.SpecMinMaxFrameSize)
	p.w = frames.NewWriter(conn, types.SpecMinMaxFrameSize)

	// SASL ANONYMOUS.
	h, err := p.r.ReadProtocolHeader()
	if err != nil {
		return err
	}
	if h != frames.NewProtocolHeader(frames.ProtocolSASL) {
		return fmt.Errorf("protocol header %v, want SASL", h)
	}
	if err := p.w.WriteProtocolHeader(h); err != nil {
		return err
	}
	if err := p.write(frames.Frame{Type: frames.TypeSASL, Body: &types.SASLMechanisms{SASLServerMechanisms: []types.Symbol{"ANONYMOUS"}}}); err != nil {
		return err
	}
	f, err := p.read()
	if err != nil {
		return err
	}
	if init, ok := f.Body.(*types.SASLInit); !ok || init.Mechanism != "ANONYMOUS" {
		return fmt.Errorf("got %#v, want sasl-init ANONYMOUS", f.Body)
	}
	if err := p.write(frames.Frame{Type: frames.TypeSASL, Body: &types.SASLOutcome{Code: types.SASLCodeOK}}); err != nil {
		return err
	}

	// AMQP.
	if h, err = p.r.ReadProtocolHeader(); err != nil {
		return err
	}
	if h != frames.NewProtocolHeader(frames.ProtocolAMQP) {
		return fmt.Errorf("protocol header %v, want AMQP", h)
	}
	if err := p.w.WriteProtocolHeader(h); err != nil {
		return err
	}
	if f, err = p.read(); err != nil {
		return err
	}
	open, ok := f.Body.(*types.Open)
	if !ok {
		return fmt.Errorf("got %T, want open", f.Body)
	}
	myOpen := types.NewOpen()
	myOpen.ContainerID = "sluice-test"
	myOpen.MaxFrameSize = 65536
	myOpen.ChannelMax = 15
	myOpen.OfferedCapabilities = []types.Symbol{"ANONYMOUS-RELAY"}
	myOpen.Properties = types.Fields{{Key: types.Symbol("product"), Value: "sluice"}}
	if err := p.write(frames.Frame{Type: frames.TypeAMQP, Body: myOpen}); err != nil {
		return err
	}
	p.r.SetMaxFrameSize(myOpen.MaxFrameSize)
	p.w.SetMaxFrameSize(min(open.MaxFrameSize, 65536))

	var (
		payload      []byte
		first        *types.Transfer
		rcvHandle    types.Handle
		haveReceiver bool
	)
	for {
		f, err := p.read()
		if err != nil {
			return err
		}
		ch := f.Channel
		switch b := f.Body.(type) {
		case nil: // heartbeat
		case *types.Begin:
			if err := p.write(frames.Frame{Channel: ch, Body: &types.Begin{
				RemoteChannel: types.Some(ch), NextOutgoingID: 1, IncomingWindow: 5000, OutgoingWindow: 5000, HandleMax: 31,
			}}); err != nil {
				return err
			}
		case *types.Attach:
			reply := types.NewAttach()
			reply.Name, reply.Handle = b.Name, b.Handle
			reply.Source, reply.Target = b.Source, b.Target
			reply.SndSettleMode, reply.RcvSettleMode = b.SndSettleMode, b.RcvSettleMode
			reply.MaxMessageSize = types.Some(uint64(1 << 20))
			if b.Role == types.RoleSender {
				reply.Role = types.RoleReceiver
				if err := p.write(frames.Frame{Channel: ch, Body: reply}); err != nil {
					return err
				}
				if err := p.write(frames.Frame{Channel: ch, Body: &types.Flow{
					NextIncomingID: types.Some(types.TransferNumber(0)), IncomingWindow: 5000, NextOutgoingID: 1, OutgoingWindow: 5000,
					Handle: types.Some(b.Handle), DeliveryCount: types.Some(b.InitialDeliveryCount.Value), LinkCredit: types.Some(uint32(10)),
				}}); err != nil {
					return err
				}
			} else {
				reply.Role = types.RoleSender
				reply.InitialDeliveryCount = types.Some(types.SequenceNo(0))
				rcvHandle, haveReceiver = b.Handle, true
				if err := p.write(frames.Frame{Channel: ch, Body: reply}); err != nil {
					return err
				}
			}
		case *types.Flow:
			if haveReceiver && !p.sent && b.Handle.Present && b.Handle.Value == rcvHandle && b.LinkCredit.Or(0) > 0 {
				body, err := p.outMsg.AppendAMQP(nil)
				if err != nil {
					return err
				}
				p.sent = true
				if err := p.write(frames.Frame{Channel: ch, Body: &types.Transfer{
					Handle: rcvHandle, DeliveryID: types.Some(types.DeliveryNumber(1)), DeliveryTag: types.DeliveryTag("t1"),
					MessageFormat: types.Some(types.MessageFormat(0)), Settled: types.Some(false),
				}, Payload: body}); err != nil {
					return err
				}
			}
		case *types.Transfer:
			if first == nil {
				first = b
			}
			payload = append(payload, f.Payload...)
			if b.More {
				continue
			}
			m, err := types.DecodeMessage(payload)
			if err != nil {
				return err
			}
			p.mu.Lock()
			p.inMsg, p.inTrans = m, first
			p.mu.Unlock()
			if !first.Settled.Or(false) {
				if err := p.write(frames.Frame{Channel: ch, Body: &types.Disposition{
					Role: types.RoleReceiver, First: first.DeliveryID.Value, Settled: true, State: &types.Accepted{},
				}}); err != nil {
					return err
				}
			}
			first, payload = nil, nil
		case *types.Disposition:
			p.mu.Lock()
			p.accept = b
			p.mu.Unlock()
		case *types.Detach:
			if err := p.write(frames.Frame{Channel: ch, Body: &types.Detach{Handle: b.Handle, Closed: b.Closed}}); err != nil {
				return err
			}
		case *types.End:
			if err := p.write(frames.Frame{Channel: ch, Body: &types.End{}}); err != nil {
				return err
			}
		case *types.Close:
			return p.write(frames.Frame{Body: &types.Close{}})
		default:
			return fmt.Errorf("unexpected %T", b)
		}
	}
}

func strp(s string) *string { return &s }

// TestInteropGoAMQP runs a go-amqp client against a server made of this
// package and package types: go-amqp's encoder produces every frame the
// server decodes, and go-amqp's decoder checks every frame it encodes.
func TestInteropGoAMQP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	created := types.Timestamp(1700000000123)
	p := &peer{t: t, outMsg: &types.Message{
		Header:             &types.Header{Durable: types.Some(true), Priority: types.Some(uint8(6))},
		MessageAnnotations: types.MessageAnnotations{{Key: types.Symbol("x-opt-sluice"), Value: int64(5)}},
		Properties: &types.Properties{
			MessageID: "srv-1", To: "queue://out", Subject: "hello", ContentType: "text/plain",
			CreationTime: types.Some(created), GroupSequence: types.Some(types.SequenceNo(2)),
		},
		ApplicationProperties: types.ApplicationProperties{
			{Key: "n32", Value: int32(-42)}, {Key: "n64", Value: int64(1) << 40}, {Key: "s", Value: "text"},
			{Key: "f", Value: 1.25}, {Key: "ok", Value: true}, {Key: "u16", Value: uint16(65000)},
		},
		Data: []types.Data{types.Data("from the server")},
	}}
	done := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		done <- p.serve(conn)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := amqp.Dial(ctx, "amqp://"+ln.Addr().String(), &amqp.ConnOptions{
		ContainerID: "go-amqp-client", HostName: "vhost-a", SASLType: amqp.SASLTypeAnonymous(),
		IdleTimeout: 30 * time.Second, MaxFrameSize: 32768,
		Properties: map[string]any{"client": "go-amqp"},
	})
	if err != nil {
		t.Fatalf("dial: %v (server: %v)", err, drain(done))
	}
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	snd, err := sess.NewSender(ctx, "queue://orders", &amqp.SenderOptions{Name: "snd-link", TargetCapabilities: []string{"queue"}, TargetExpiryPolicy: amqp.ExpiryPolicyNever})
	if err != nil {
		t.Fatalf("sender: %v", err)
	}
	creation := time.UnixMilli(1700000000456).UTC()
	data := bytes.Repeat([]byte("x"), 1024)
	err = snd.Send(ctx, &amqp.Message{
		Header:      &amqp.MessageHeader{Durable: true, Priority: 7, TTL: 5 * time.Second},
		Annotations: amqp.Annotations{"x-opt-a": "ann"},
		Properties: &amqp.MessageProperties{
			MessageID: "id-1", To: strp("queue://orders"), Subject: strp("subj"), ReplyTo: strp("queue://replies"),
			CorrelationID: uint64(42), ContentType: strp("text/plain"), CreationTime: &creation,
		},
		ApplicationProperties: map[string]any{
			"i32": int32(-5), "i64": int64(1) << 40, "s": "str", "b": true, "f64": 2.5, "u8": uint8(9),
		},
		Data: [][]byte{data},
	}, nil)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	rcv, err := sess.NewReceiver(ctx, "queue://out", &amqp.ReceiverOptions{
		Name: "rcv-link", Credit: 5, Filters: []amqp.LinkFilter{amqp.NewSelectorFilter("color = 'red'")},
	})
	if err != nil {
		t.Fatalf("receiver: %v", err)
	}
	m, err := rcv.Receive(ctx, nil)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if err := rcv.AcceptMessage(ctx, m); err != nil {
		t.Fatalf("accept: %v", err)
	}
	// What go-amqp decoded from this package's encoding.
	if got := m.ApplicationProperties; got["n32"] != int32(-42) || got["n64"] != int64(1)<<40 || got["s"] != "text" ||
		got["f"] != 1.25 || got["ok"] != true || got["u16"] != uint16(65000) {
		t.Errorf("client got application-properties %#v", got)
	}
	if m.Properties == nil || m.Properties.MessageID != "srv-1" || *m.Properties.Subject != "hello" ||
		!m.Properties.CreationTime.Equal(created.Time()) || *m.Properties.GroupSequence != 2 {
		t.Errorf("client got properties %+v", m.Properties)
	}
	if m.Header == nil || !m.Header.Durable || m.Header.Priority != 6 {
		t.Errorf("client got header %+v", m.Header)
	}
	if m.Annotations["x-opt-sluice"] != int64(5) || len(m.Data) != 1 || string(m.Data[0]) != "from the server" {
		t.Errorf("client got annotations %v data %q", m.Annotations, m.Data)
	}
	if err := rcv.Close(ctx); err != nil {
		t.Fatalf("receiver close: %v", err)
	}
	if err := snd.Close(ctx); err != nil {
		t.Fatalf("sender close: %v", err)
	}
	if err := sess.Close(ctx); err != nil {
		t.Fatalf("session close: %v", err)
	}
	if err := conn.Close(); err != nil {
		t.Fatalf("conn close: %v", err)
	}
	if err := drain(done); err != nil {
		t.Fatalf("server: %v", err)
	}

	// What this package decoded from go-amqp's encoding.
	p.mu.Lock()
	defer p.mu.Unlock()
	var open *types.Open
	var attaches []*types.Attach
	for _, f := range p.got {
		switch b := f.Body.(type) {
		case *types.Open:
			open = b
		case *types.Attach:
			attaches = append(attaches, b)
		}
	}
	if open == nil || open.ContainerID != "go-amqp-client" || open.Hostname != "vhost-a" || open.MaxFrameSize != 32768 ||
		open.IdleTimeOut != types.Some(types.Milliseconds(15000)) && open.IdleTimeOut != types.Some(types.Milliseconds(30000)) {
		t.Errorf("open = %+v", open)
	} else if v, _ := open.Properties.Get(types.Symbol("client")); v != "go-amqp" {
		t.Errorf("open properties %v", open.Properties)
	}
	if len(attaches) != 2 {
		t.Fatalf("%d attaches", len(attaches))
	}
	sa, ra := attaches[0], attaches[1]
	if sa.Name != "snd-link" || sa.Role != types.RoleSender {
		t.Errorf("sender attach %+v", sa)
	}
	if tgt, ok := sa.Target.(*types.Target); !ok || tgt.Address != "queue://orders" || tgt.ExpiryPolicy != types.TerminusExpiryPolicyNever ||
		!reflect.DeepEqual(tgt.Capabilities, []types.Symbol{"queue"}) {
		t.Errorf("sender target %#v", sa.Target)
	}
	if ra.Name != "rcv-link" || ra.Role != types.RoleReceiver || ra.Source == nil || ra.Source.Address != "queue://out" {
		t.Errorf("receiver attach %+v", ra)
	} else {
		f, ok := ra.Source.Filter.Get(types.Symbol("apache.org:selector-filter:string"))
		want := types.Described{Descriptor: uint64(0x0000468C00000004), Value: "color = 'red'"}
		if !ok || !reflect.DeepEqual(f, want) {
			t.Errorf("receiver filter %#v", ra.Source.Filter)
		}
	}
	in := p.inMsg
	if in == nil {
		t.Fatal("no message received")
	}
	if p.inTrans.Handle != sa.Handle || !p.inTrans.MessageFormat.Present || len(p.inTrans.DeliveryTag) == 0 {
		t.Errorf("transfer %+v", p.inTrans)
	}
	if in.Header == nil || in.Header.Durable != types.Some(true) || in.Header.Priority != types.Some(uint8(7)) || in.Header.TTL != types.Some(types.Milliseconds(5000)) {
		t.Errorf("header %+v", in.Header)
	}
	if in.Properties == nil || in.Properties.MessageID != "id-1" || in.Properties.To != "queue://orders" || in.Properties.ReplyTo != "queue://replies" ||
		in.Properties.CorrelationID != uint64(42) || in.Properties.ContentType != "text/plain" || in.Properties.CreationTime != types.Some(types.TimestampOf(creation)) {
		t.Errorf("properties %+v", in.Properties)
	}
	wantApp := map[string]any{"i32": int32(-5), "i64": int64(1) << 40, "s": "str", "b": true, "f64": 2.5, "u8": uint8(9)}
	if len(in.ApplicationProperties) != len(wantApp) {
		t.Errorf("application-properties %v", in.ApplicationProperties)
	}
	for k, want := range wantApp {
		if got, ok := in.ApplicationProperties.Get(k); !ok || got != want {
			t.Errorf("application-properties[%q] = %#v (%T), want %#v (%T)", k, got, got, want, want)
		}
	}
	if v, _ := in.MessageAnnotations.Get(types.Symbol("x-opt-a")); v != "ann" {
		t.Errorf("message-annotations %v", in.MessageAnnotations)
	}
	if len(in.Data) != 1 || !bytes.Equal(in.Data[0], data) {
		t.Errorf("data %d sections", len(in.Data))
	}
	if p.accept == nil || p.accept.Role != types.RoleReceiver || p.accept.First != 1 {
		t.Errorf("client disposition %+v", p.accept)
	} else if _, ok := p.accept.State.(*types.Accepted); !ok {
		t.Errorf("client disposition state %#v", p.accept.State)
	}

	if *writeCorpus {
		dir := filepath.Join("testdata", "fuzz", "FuzzFrameDecode")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, b := range p.raw {
			name, _ := p.got[i].Body.Descriptor()
			if p.got[i].Body == nil {
				name = "empty"
			}
			file := filepath.Join(dir, fmt.Sprintf("goamqp-%02d-%s", i, sanitize(string(name))))
			if err := os.WriteFile(file, []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func sanitize(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			out[i] = '-'
		}
	}
	return string(out)
}

func drain(done chan error) error {
	select {
	case err := <-done:
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	case <-time.After(20 * time.Second):
		return errors.New("server did not finish")
	}
}
