package frame

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNegotiateVersion(t *testing.T) {
	all := AllVersions()
	tests := []struct {
		name      string
		accept    string
		present   bool
		supported []Version
		want      Version
		err       string // substring of the reason when an error is expected
	}{
		{"absent means 1.0", "", false, all, V10, ""},
		{"absent, server without 1.0", "", false, []Version{V11, V12}, 0, "only STOMP 1.0"},
		{"highest common", "1.0,1.1,1.2", true, all, V12, ""},
		{"spec example", "1.0,1.1,2.0", true, all, V11, ""},
		{"server limits", "1.0,1.1,1.2", true, []Version{V10, V11}, V11, ""},
		{"order does not matter", "1.2,1.0", true, []Version{V12, V10}, V12, ""},
		{"blanks tolerated", " 1.1 , 1.2 ", true, all, V12, ""},
		{"single", "1.1", true, all, V11, ""},
		{"nil supported means all", "1.2", true, nil, V12, ""},
		{"unknown only", "2.0,3.0", true, all, 0, "supported protocol versions are 1.0 1.1 1.2"},
		{"empty header", "", true, all, 0, "supported protocol versions"},
		{"no overlap", "1.2", true, []Version{V10, V11}, 0, "are 1.0 1.1"},
		{"garbage", ",,,x", true, all, 0, "supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NegotiateVersion(tt.accept, tt.present, tt.supported)
			if tt.err == "" {
				if err != nil || got != tt.want {
					t.Fatalf("got %v, %v; want %v", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("got %v, %v; want error with %q", got, err, tt.err)
			}
		})
	}
}

func TestFormatVersions(t *testing.T) {
	tests := []struct {
		in   []Version
		want string
	}{
		{nil, ""},
		{AllVersions(), "1.0,1.1,1.2"},
		{[]Version{V12, V10, V12, 0, 7}, "1.0,1.2"},
	}
	for _, tt := range tests {
		if got := FormatVersions(tt.in); got != tt.want {
			t.Errorf("FormatVersions(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseHeartBeat(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		in      string
		want    HeartBeat
		invalid bool
	}{
		{"0,0", HeartBeat{}, false},
		{"10000,5000", HeartBeat{10000 * ms, 5000 * ms}, false},
		{" 100 , 200 ", HeartBeat{100 * ms, 200 * ms}, false},
		{"007,1", HeartBeat{7 * ms, ms}, false},
		{"2147483647,0", HeartBeat{2147483647 * ms, 0}, false},
		{"2147483648,0", HeartBeat{}, true},
		{"99999999999999999999999,0", HeartBeat{}, true},
		{"", HeartBeat{}, true},
		{"100", HeartBeat{}, true},
		{"100,", HeartBeat{}, true},
		{",100", HeartBeat{}, true},
		{"1,2,3", HeartBeat{}, true},
		{"-1,0", HeartBeat{}, true},
		{"+1,0", HeartBeat{}, true},
		{"1.5,0", HeartBeat{}, true},
		{"a,b", HeartBeat{}, true},
		{"1 0,0", HeartBeat{}, true},
	}
	for _, tt := range tests {
		got, err := ParseHeartBeat(tt.in)
		if tt.invalid {
			if !errors.Is(err, ErrInvalidHeartBeat) {
				t.Errorf("ParseHeartBeat(%q) = %v, %v; want error", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseHeartBeat(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestHeartBeatString(t *testing.T) {
	tests := []struct {
		h    HeartBeat
		want string
	}{
		{HeartBeat{}, "0,0"},
		{HeartBeat{10 * time.Second, 1500 * time.Microsecond}, "10000,1"},
		{HeartBeat{-time.Second, time.Minute}, "0,60000"},
	}
	for _, tt := range tests {
		if got := tt.h.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.h, got, tt.want)
		}
	}
}

func TestNegotiateHeartBeat(t *testing.T) {
	ms := time.Millisecond
	server := HeartBeat{Send: 5000 * ms, Receive: 10000 * ms}
	tests := []struct {
		name          string
		client        string
		present       bool
		server        HeartBeat
		send, receive time.Duration
		invalid       bool
	}{
		{"header absent", "", false, server, 0, 0, false},
		{"client 0,0", "0,0", true, server, 0, 0, false},
		{"client wants faster than server can send", "0,1000", true, server, 5000 * ms, 0, false},
		{"client wants slower than server can send", "0,20000", true, server, 20000 * ms, 0, false},
		{"client sends faster than server wants", "1000,0", true, server, 0, 10000 * ms, false},
		{"client sends slower than server wants", "30000,0", true, server, 0, 30000 * ms, false},
		{"both ways", "4000,6000", true, server, 6000 * ms, 10000 * ms, false},
		{"server cannot send", "4000,6000", true, HeartBeat{Receive: 1000 * ms}, 0, 4000 * ms, false},
		{"server wants nothing", "4000,6000", true, HeartBeat{Send: 1000 * ms}, 6000 * ms, 0, false},
		{"server off", "4000,6000", true, HeartBeat{}, 0, 0, false},
		{"malformed", "4000", true, server, 0, 0, true},
		{"malformed present but empty", "", true, server, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			send, receive, err := NegotiateHeartBeat(tt.client, tt.present, tt.server)
			if tt.invalid {
				if !errors.Is(err, ErrInvalidHeartBeat) {
					t.Fatalf("got %v, want ErrInvalidHeartBeat", err)
				}
				return
			}
			if err != nil || send != tt.send || receive != tt.receive {
				t.Fatalf("got send %v receive %v err %v; want %v %v", send, receive, err, tt.send, tt.receive)
			}
		})
	}
}
