package spec

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
)

// TestEveryMethod checks the dispatch against the method list of RabbitMQ's
// 0-9-1 (the XML's methods and the generator's extras), and round-trips
// every method with random field values: encode, decode into a new value,
// compare, and re-encode to the same bytes.
func TestEveryMethod(t *testing.T) {
	want := []string{
		"connection.start", "connection.start-ok", "connection.secure", "connection.secure-ok",
		"connection.tune", "connection.tune-ok", "connection.open", "connection.open-ok",
		"connection.close", "connection.close-ok", "connection.blocked", "connection.unblocked",
		"connection.update-secret", "connection.update-secret-ok",
		"channel.open", "channel.open-ok", "channel.flow", "channel.flow-ok", "channel.close", "channel.close-ok",
		"exchange.declare", "exchange.declare-ok", "exchange.delete", "exchange.delete-ok",
		"exchange.bind", "exchange.bind-ok", "exchange.unbind", "exchange.unbind-ok",
		"queue.declare", "queue.declare-ok", "queue.bind", "queue.bind-ok", "queue.unbind", "queue.unbind-ok",
		"queue.purge", "queue.purge-ok", "queue.delete", "queue.delete-ok",
		"basic.qos", "basic.qos-ok", "basic.consume", "basic.consume-ok", "basic.cancel", "basic.cancel-ok",
		"basic.publish", "basic.return", "basic.deliver", "basic.get", "basic.get-ok", "basic.get-empty",
		"basic.ack", "basic.reject", "basic.recover-async", "basic.recover", "basic.recover-ok", "basic.nack",
		"confirm.select", "confirm.select-ok",
		"tx.select", "tx.select-ok", "tx.commit", "tx.commit-ok", "tx.rollback", "tx.rollback-ok",
	}
	var got []string
	for _, m := range allMethods() {
		got = append(got, m.Name())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("methods:\n got %v\nwant %v", got, want)
	}

	f := newFiller(1)
	for _, m := range allMethods() {
		t.Run(m.Name(), func(t *testing.T) {
			for range 20 {
				f.fill(m)
				payload := AppendMethod(nil, m)
				back, err := DecodeMethod(payload)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if !reflect.DeepEqual(back, m) {
					t.Fatalf("round trip:\n got %+v\nwant %+v", back, m)
				}
				if again := AppendMethod(nil, back); !bytes.Equal(again, payload) {
					t.Fatalf("re-encoded:\n got %x\nwant %x", again, payload)
				}
				// Decoding into a value that holds other data gives the same.
				reuse := NewMethod(m.ClassID(), m.MethodID())
				f.fill(reuse)
				if err := reuse.Decode(payload[4:]); err != nil || !reflect.DeepEqual(reuse, m) {
					t.Fatalf("decode into a used value: %v\n got %+v\nwant %+v", err, reuse, m)
				}
			}
		})
	}
}

// TestFlags checks the XML's synchronous and content attributes as the
// methods report them, for a few methods a server depends on.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		m             Method
		sync, content bool
	}{
		{&BasicPublish{}, false, true},
		{&BasicDeliver{}, false, true},
		{&BasicGetOk{}, true, true},
		{&BasicAck{}, false, false},
		{&QueueDeclare{}, true, false},
		{&ChannelFlowOk{}, false, false},
		{&ConnectionBlocked{}, false, false},
		{&ConnectionUpdateSecret{}, true, false},
	} {
		if tc.m.Synchronous() != tc.sync || tc.m.HasContent() != tc.content {
			t.Errorf("%s: synchronous %v content %v, want %v %v", tc.m.Name(), tc.m.Synchronous(), tc.m.HasContent(), tc.sync, tc.content)
		}
	}
	if !IsHardError(FrameError) || !IsHardError(NotAllowed) || IsHardError(NotFound) || IsHardError(NoRoute) || IsHardError(ReplySuccess) {
		t.Error("IsHardError disagrees with the XML's hard-error class")
	}
}

func TestContentHeaderRoundTrip(t *testing.T) {
	f := newFiller(2)
	for i := range 200 {
		var h ContentHeader
		h.ClassID = ClassBasic
		h.BodySize = f.r.Uint64()
		f.fill(&h.Properties)
		// Any subset of the properties; absent ones are zero after decoding.
		h.Properties.Flags = uint16(f.r.Uint32()) & BasicPropertiesFlagMask
		if i == 0 {
			h.Properties.Flags = BasicPropertiesFlagMask
		}
		payload := AppendContentHeader(nil, &h)
		got, err := DecodeContentHeader(payload)
		if err != nil {
			t.Fatal(err)
		}
		want := h
		clearAbsent(&want.Properties)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("flags %04x:\n got %+v\nwant %+v", h.Properties.Flags, got, want)
		}
	}
}

// clearAbsent zeroes the properties whose flags are clear, by encoding and
// reading them back field by field through reflection on the flag order.
func clearAbsent(p *BasicProperties) {
	rv := reflect.ValueOf(p).Elem()
	for i := 1; i < rv.NumField(); i++ { // field 0 is Flags
		if p.Flags&(1<<(16-i)) == 0 {
			rv.Field(i).SetZero()
		}
	}
}

func TestTableRoundTrip(t *testing.T) {
	f := newFiller(3)
	for range 50 {
		tab := f.table(3)
		b := AppendTable([]byte("prefix"), tab)
		got, n, err := DecodeTable(b[len("prefix"):])
		if err != nil {
			t.Fatal(err)
		}
		if n != len(b)-len("prefix") {
			t.Fatalf("used %d of %d bytes", n, len(b)-len("prefix"))
		}
		if !reflect.DeepEqual(got, tab) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, tab)
		}
		if err := tab.Validate(); err != nil {
			t.Fatal(err)
		}
	}
}
