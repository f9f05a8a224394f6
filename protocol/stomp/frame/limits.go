package frame

// Default limits, used for every zero field of [Limits].
const (
	// DefaultMaxLineLength is the default limit on one command or header
	// line, in octets, not counting its line ending.
	DefaultMaxLineLength = 8 << 10
	// DefaultMaxHeaders is the default limit on the number of headers in
	// one frame.
	DefaultMaxHeaders = 128
	// DefaultMaxHeaderBytes is the default limit on the total length of a
	// frame's header lines, in octets, not counting line endings.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxBodySize is the default limit on a frame body, in octets.
	DefaultMaxBodySize = 16 << 20
)

// Limits bounds what the parser accepts and therefore how much memory one
// connection can make it hold. A zero field means the default; a negative
// field is treated as zero and so also means the default.
type Limits struct {
	// MaxLineLength is the longest command or header line, in octets, not
	// counting the LF or CR LF that ends it. Escapes are counted as sent.
	MaxLineLength int
	// MaxHeaders is the largest number of header lines in a frame.
	MaxHeaders int
	// MaxHeaderBytes is the largest total length of a frame's header lines,
	// in octets as sent, not counting line endings or the command line.
	MaxHeaderBytes int
	// MaxBodySize is the largest body, in octets. A content-length above it
	// is refused before any of the body is read; a body without
	// content-length is refused as soon as it grows past it without a NUL.
	MaxBodySize int
}

// DefaultLimits returns the limits used for a zero Limits.
func DefaultLimits() Limits {
	return Limits{
		MaxLineLength:  DefaultMaxLineLength,
		MaxHeaders:     DefaultMaxHeaders,
		MaxHeaderBytes: DefaultMaxHeaderBytes,
		MaxBodySize:    DefaultMaxBodySize,
	}
}

// withDefaults returns l with every non-positive field replaced by its
// default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxLineLength <= 0 {
		l.MaxLineLength = d.MaxLineLength
	}
	if l.MaxHeaders <= 0 {
		l.MaxHeaders = d.MaxHeaders
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxBodySize <= 0 {
		l.MaxBodySize = d.MaxBodySize
	}
	return l
}
