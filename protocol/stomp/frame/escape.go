package frame

import (
	"bytes"
	"strconv"
)

// appendUnescaped appends src to dst, decoding the STOMP 1.1 escapes \\, \n
// and \c, and also \r when v12 is set. Any other backslash sequence,
// including a backslash at the end of src, is an ErrInvalidEscape error.
// what names the part being decoded ("header name" or "header value") for
// the error's reason.
func appendUnescaped(dst, src []byte, v12 bool, what string) ([]byte, error) {
	for {
		i := bytes.IndexByte(src, '\\')
		if i < 0 {
			return append(dst, src...), nil
		}
		dst = append(dst, src[:i]...)
		if i+1 == len(src) {
			return dst, newError(ErrInvalidEscape, "backslash at the end of a "+what)
		}
		switch c := src[i+1]; c {
		case '\\':
			dst = append(dst, '\\')
		case 'n':
			dst = append(dst, '\n')
		case 'c':
			dst = append(dst, ':')
		case 'r':
			if !v12 {
				return dst, newError(ErrInvalidEscape, `escape sequence \r in a `+what+` is not defined before STOMP 1.2`)
			}
			dst = append(dst, '\r')
		default:
			return dst, newError(ErrInvalidEscape, "undefined escape sequence "+escapeForReason(c)+" in a "+what)
		}
		src = src[i+2:]
	}
}

// escapeForReason renders a backslash followed by c in printable ASCII.
func escapeForReason(c byte) string {
	if c > ' ' && c < 0x7f {
		return `\` + string(rune(c))
	}
	return `\ followed by octet 0x` + strconv.FormatUint(uint64(c), 16)
}

// needsEscape reports whether s holds an octet that escaping changes.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '\n', '\r', ':':
			return true
		}
	}
	return false
}

// appendEscaped appends s to dst with the STOMP 1.1 escapes for backslash,
// line feed and colon, and \r for carriage return when v12 is set (without
// it a carriage return is copied as is; the caller has checked that this is
// representable).
func appendEscaped(dst []byte, s string, v12 bool) []byte {
	if !needsEscape(s) {
		return append(dst, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case ':':
			dst = append(dst, '\\', 'c')
		case '\r':
			if v12 {
				dst = append(dst, '\\', 'r')
			} else {
				dst = append(dst, '\r')
			}
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
