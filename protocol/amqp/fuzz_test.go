package amqp_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// fuzzFrames encodes frames for the seed corpus.
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
