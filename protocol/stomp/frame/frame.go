package frame

import (
	"iter"
	"slices"
)

// Names of the headers the codec itself or the negotiation helpers look at.
const (
	// HeaderContentLength is the octet count of the body.
	HeaderContentLength = "content-length"
	// HeaderContentType is the MIME type of the body.
	HeaderContentType = "content-type"
	// HeaderAcceptVersion lists the versions a client accepts (CONNECT).
	HeaderAcceptVersion = "accept-version"
	// HeaderVersion is the version chosen by the server (CONNECTED), or the
	// versions it supports (ERROR after a failed negotiation).
	HeaderVersion = "version"
	// HeaderHeartBeat carries heart-beat settings (CONNECT, CONNECTED).
	HeaderHeartBeat = "heart-beat"
	// HeaderReceipt asks for a RECEIPT frame.
	HeaderReceipt = "receipt"
	// HeaderReceiptID names the frame a RECEIPT or ERROR answers.
	HeaderReceiptID = "receipt-id"
	// HeaderMessage is the short error description of an ERROR frame.
	HeaderMessage = "message"
)

// Header is one header entry of a frame, already unescaped.
type Header struct {
	// Name is the header name; header names are case-sensitive.
	Name string
	// Value is the header value.
	Value string
}

// Frame is one STOMP frame. Headers keep the order and the repetitions of
// the wire; when a name repeats, the first entry is the header's value
// (later ones are history, as the specification says), which is the rule
// [Frame.Get] follows. Frames returned by the parser own their memory: the
// caller may keep them and modify them freely.
type Frame struct {
	// Command is the frame's command.
	Command Command
	// Headers are the frame's headers in wire order, duplicates included.
	Headers []Header
	// Body is the frame's body; nil when it is empty.
	Body []byte
}

// Get returns the value of the first header called name, and whether there
// is one.
func (f *Frame) Get(name string) (string, bool) {
	for i := range f.Headers {
		if f.Headers[i].Name == name {
			return f.Headers[i].Value, true
		}
	}
	return "", false
}

// Set makes value the only value of name: it replaces the first entry
// called name in place, keeping its position, and removes later entries of
// that name; if there is none it appends one.
func (f *Frame) Set(name, value string) {
	for i := range f.Headers {
		if f.Headers[i].Name == name {
			f.Headers[i].Value = value
			// DeleteFunc compacts the tail in place, right after entry i.
			tail := slices.DeleteFunc(f.Headers[i+1:], func(h Header) bool { return h.Name == name })
			f.Headers = f.Headers[:i+1+len(tail)]
			return
		}
	}
	f.Headers = append(f.Headers, Header{Name: name, Value: value})
}

// Add appends a header entry, even if name is already present (in which
// case the new entry does not change what Get returns).
func (f *Frame) Add(name, value string) {
	f.Headers = append(f.Headers, Header{Name: name, Value: value})
}

// Del removes every entry called name.
func (f *Frame) Del(name string) {
	f.Headers = slices.DeleteFunc(f.Headers, func(h Header) bool { return h.Name == name })
}

// All iterates over the header entries in order, duplicates included, as
// name and value.
func (f *Frame) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, h := range f.Headers {
			if !yield(h.Name, h.Value) {
				return
			}
		}
	}
}

// Values returns the values of every entry called name, first (effective)
// value first.
func (f *Frame) Values(name string) []string {
	var vs []string
	for _, h := range f.Headers {
		if h.Name == name {
			vs = append(vs, h.Value)
		}
	}
	return vs
}

// Clone returns a deep copy of f.
func (f *Frame) Clone() *Frame {
	c := &Frame{Command: f.Command}
	if f.Headers != nil {
		c.Headers = slices.Clone(f.Headers)
	}
	if f.Body != nil {
		c.Body = slices.Clone(f.Body)
	}
	return c
}
