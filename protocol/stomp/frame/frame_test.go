package frame

import (
	"slices"
	"testing"
)

func TestFrameHeaders(t *testing.T) {
	tests := []struct {
		name string
		op   func(f *Frame)
		want []Header
	}{
		{"add keeps duplicates", func(f *Frame) { f.Add("a", "3") },
			[]Header{{"a", "1"}, {"b", "2"}, {"a", "x"}, {"c", "4"}, {"a", "3"}}},
		{"set replaces first in place and drops the rest", func(f *Frame) { f.Set("a", "new") },
			[]Header{{"a", "new"}, {"b", "2"}, {"c", "4"}}},
		{"set appends a new name", func(f *Frame) { f.Set("d", "5") },
			[]Header{{"a", "1"}, {"b", "2"}, {"a", "x"}, {"c", "4"}, {"d", "5"}}},
		{"set on a single entry", func(f *Frame) { f.Set("c", "9") },
			[]Header{{"a", "1"}, {"b", "2"}, {"a", "x"}, {"c", "9"}}},
		{"del removes all", func(f *Frame) { f.Del("a") },
			[]Header{{"b", "2"}, {"c", "4"}}},
		{"del absent", func(f *Frame) { f.Del("zz") },
			[]Header{{"a", "1"}, {"b", "2"}, {"a", "x"}, {"c", "4"}}},
		{"names are case-sensitive", func(f *Frame) { f.Del("A") },
			[]Header{{"a", "1"}, {"b", "2"}, {"a", "x"}, {"c", "4"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fr(CmdMessage, "", "a", "1", "b", "2", "a", "x", "c", "4")
			tt.op(f)
			if !slices.Equal(f.Headers, tt.want) {
				t.Fatalf("got %v, want %v", f.Headers, tt.want)
			}
		})
	}
}

func TestFrameGetFirstWins(t *testing.T) {
	f := fr(CmdMessage, "", "foo", "World", "foo", "Hello", "empty", "")
	tests := []struct {
		name, want string
		ok         bool
	}{
		{"foo", "World", true},
		{"empty", "", true},
		{"missing", "", false},
		{"Foo", "", false},
	}
	for _, tt := range tests {
		got, ok := f.Get(tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Get(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if got := f.Values("foo"); !slices.Equal(got, []string{"World", "Hello"}) {
		t.Errorf("Values = %v", got)
	}
	if got := f.Values("none"); got != nil {
		t.Errorf("Values = %v", got)
	}
	var names []string
	for n, v := range f.All() {
		names = append(names, n+"="+v)
	}
	if !slices.Equal(names, []string{"foo=World", "foo=Hello", "empty="}) {
		t.Errorf("All = %v", names)
	}
	// Early break.
	count := 0
	for range f.All() {
		count++
		break
	}
	if count != 1 {
		t.Errorf("All did not stop")
	}
}

func TestFrameClone(t *testing.T) {
	f := fr(CmdSend, "body", "a", "1")
	c := f.Clone()
	c.Body[0] = 'X'
	c.Headers[0].Value = "2"
	if string(f.Body) != "body" || f.Headers[0].Value != "1" {
		t.Fatal("clone shares memory")
	}
	empty := (&Frame{Command: CmdAck}).Clone()
	if empty.Headers != nil || empty.Body != nil || empty.Command != CmdAck {
		t.Fatalf("got %+v", empty)
	}
}

func TestCommands(t *testing.T) {
	tests := []struct {
		c                                 Command
		wire                              string
		client, server, connect, withBody bool
	}{
		{CmdConnect, "CONNECT", true, false, true, false},
		{CmdStomp, "STOMP", true, false, true, false},
		{CmdConnected, "CONNECTED", false, true, true, false},
		{CmdSend, "SEND", true, false, false, true},
		{CmdSubscribe, "SUBSCRIBE", true, false, false, false},
		{CmdUnsubscribe, "UNSUBSCRIBE", true, false, false, false},
		{CmdAck, "ACK", true, false, false, false},
		{CmdNack, "NACK", true, false, false, false},
		{CmdBegin, "BEGIN", true, false, false, false},
		{CmdCommit, "COMMIT", true, false, false, false},
		{CmdAbort, "ABORT", true, false, false, false},
		{CmdDisconnect, "DISCONNECT", true, false, false, false},
		{CmdMessage, "MESSAGE", false, true, false, true},
		{CmdReceipt, "RECEIPT", false, true, false, false},
		{CmdError, "ERROR", false, true, false, true},
	}
	if len(tests) != int(numCommands)-1 {
		t.Fatalf("table covers %d commands of %d", len(tests), numCommands-1)
	}
	for _, tt := range tests {
		if tt.c.String() != tt.wire || !tt.c.Valid() {
			t.Errorf("%d: String %q", tt.c, tt.c.String())
		}
		if c, ok := ParseCommand(tt.wire); !ok || c != tt.c {
			t.Errorf("ParseCommand(%q) = %v, %v", tt.wire, c, ok)
		}
		if tt.c.IsClient() != tt.client || tt.c.IsServer() != tt.server ||
			tt.c.IsConnect() != tt.connect || tt.c.AllowsBody() != tt.withBody {
			t.Errorf("%s: wrong classification", tt.c)
		}
	}
	for _, s := range []string{"", "send", "Send", "SEND ", "CONNECTEDX", "HELLO"} {
		if c, ok := ParseCommand(s); ok || c != CmdInvalid {
			t.Errorf("ParseCommand(%q) = %v, %v", s, c, ok)
		}
	}
	if CmdInvalid.Valid() || CmdInvalid.String() != "Command(0)" || Command(99).String() != "Command(99)" {
		t.Error("invalid commands")
	}
}

func TestVersions(t *testing.T) {
	for _, v := range AllVersions() {
		p, ok := ParseVersion(v.String())
		if !ok || p != v || !v.Valid() {
			t.Errorf("%v does not round-trip", v)
		}
	}
	for _, s := range []string{"", "1", "1.3", "2.0", " 1.2", "v1.2"} {
		if _, ok := ParseVersion(s); ok {
			t.Errorf("ParseVersion(%q) accepted", s)
		}
	}
	if Version(0).Valid() || Version(4).String() != "Version(4)" {
		t.Error("invalid versions")
	}
}
