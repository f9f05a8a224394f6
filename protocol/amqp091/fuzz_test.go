package amqp091_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/amqp091"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// handshake is what a client sends to reach an open channel 1.
func handshake() []byte {
	b := []byte(spec.ProtocolHeader)
	b = spec.AppendMethodFrame(b, 0, &spec.ConnectionStartOk{ClientProperties: spec.Table{}, Mechanism: "PLAIN", Response: []byte("\x00u\x00p"), Locale: "en_US"})
	b = spec.AppendMethodFrame(b, 0, &spec.ConnectionTuneOk{ChannelMax: 16, FrameMax: 8192})
	b = spec.AppendMethodFrame(b, 0, &spec.ConnectionOpen{VirtualHost: "/"})
	return spec.AppendMethodFrame(b, 1, &spec.ChannelOpen{})
}

// FuzzConnection feeds arbitrary frames, after a handshake, to a served
// connection on a net.Pipe: whatever the bytes, the connection ends (the
// client closes its side) without a panic, a hang or the server going
// down for the next one.
func FuzzConnection(f *testing.F) {
	seeds := [][]byte{
		nil,
		spec.AppendMethodFrame(nil, 1, &spec.QueueDeclare{Queue: "q"}),
		append(append(spec.AppendMethodFrame(spec.AppendMethodFrame(nil, 1, &spec.QueueDeclare{Queue: "q"}), 1, &spec.BasicPublish{RoutingKey: "q", Mandatory: true}),
			spec.AppendHeaderFrame(nil, 1, &spec.ContentHeader{ClassID: spec.ClassBasic, BodySize: 3, Properties: spec.BasicProperties{Flags: spec.FlagHeaders, Headers: spec.Table{"x-delay": int32(5)}}})...),
			spec.AppendFrame(nil, spec.FrameBody, 1, []byte("abc"))...),
		spec.AppendMethodFrame(spec.AppendMethodFrame(nil, 1, &spec.ConfirmSelect{}), 1, &spec.BasicConsume{Queue: "q", Arguments: spec.Table{"x-selector": "a > 1"}}),
		spec.AppendMethodFrame(spec.AppendMethodFrame(nil, 1, &spec.TxSelect{}), 1, &spec.BasicGet{Queue: "q"}),
		spec.AppendMethodFrame(nil, 1, &spec.ExchangeDeclare{Exchange: "x", Type: "topic"}),
		spec.AppendMethodFrame(nil, 1, &spec.QueueBind{Queue: "q", Exchange: "amq.topic", RoutingKey: "t"}),
		spec.AppendMethodFrame(nil, 1, &spec.BasicNack{DeliveryTag: 1, Multiple: true}),
		spec.AppendMethodFrame(nil, 0, &spec.ConnectionClose{ReplyCode: 200}),
		{1, 0, 1, 0, 0, 0, 2, 0, 60, 0xCE},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		f.Fatal(err)
	}
	srv := amqp091.NewServer(eng, amqp091.Options{ConnectTimeout: time.Second, HeartBeat: -1, MaxFrameSize: 8192})
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = eng.Close()
	})
	prefix := handshake()
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		served := make(chan struct{})
		go func() { srv.ServeConn(server); close(served) }()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_ = client.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = client.Write(prefix)
		_, _ = client.Write(data)
		_ = client.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection did not end after the client closed it")
		}
	})
}
