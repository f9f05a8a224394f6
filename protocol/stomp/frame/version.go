package frame

import (
	"strconv"
	"strings"
)

// Version is a STOMP protocol version. The zero value is not a valid version.
type Version uint8

// The STOMP versions this package speaks.
const (
	// V10 is STOMP 1.0: no header escaping, no heart-beats.
	V10 Version = iota + 1
	// V11 is STOMP 1.1: escapes \\, \n and \c in headers.
	V11
	// V12 is STOMP 1.2: as 1.1, plus \r.
	V12
)

// AllVersions lists every version this package speaks, lowest first. It is a
// function so that callers cannot modify a shared slice.
func AllVersions() []Version { return []Version{V10, V11, V12} }

// String returns the version as written in the version and accept-version
// headers, for example "1.2".
func (v Version) String() string {
	switch v {
	case V10:
		return "1.0"
	case V11:
		return "1.1"
	case V12:
		return "1.2"
	}
	return "Version(" + strconv.Itoa(int(v)) + ")"
}

// Valid reports whether v is V10, V11 or V12.
func (v Version) Valid() bool { return v >= V10 && v <= V12 }

// ParseVersion parses "1.0", "1.1" or "1.2".
func ParseVersion(s string) (Version, bool) {
	switch s {
	case "1.0":
		return V10, true
	case "1.1":
		return V11, true
	case "1.2":
		return V12, true
	}
	return 0, false
}

// escapes reports whether frames other than CONNECT, STOMP and CONNECTED
// have escaped headers in version v.
func (v Version) escapes() bool { return v >= V11 }

// NegotiateVersion chooses the version of a session from the client's
// accept-version header and the versions the server supports, as the
// specification's protocol negotiation requires: the highest version both
// sides have in common.
//
// present tells whether the CONNECT frame carried accept-version at all; a
// missing header means the client speaks only 1.0. The header is a comma
// separated list; blanks around entries are ignored and so are versions this
// package does not know (such as "2.0"). supported may be in any order; nil
// or empty means every version in [AllVersions].
//
// When there is no common version the error is an [*Error] of kind
// ErrUnsupportedVersion whose Reason names the supported versions; the
// server then sends an ERROR frame with a version header of
// [FormatVersions](supported) and closes the connection.
func NegotiateVersion(acceptVersion string, present bool, supported []Version) (Version, error) {
	if len(supported) == 0 {
		supported = AllVersions()
	}
	var offered [V12 + 1]bool
	if !present {
		offered[V10] = true
	} else {
		for tok := range strings.SplitSeq(acceptVersion, ",") {
			if v, ok := ParseVersion(strings.Trim(tok, " \t")); ok {
				offered[v] = true
			}
		}
	}
	var best Version
	for _, v := range supported {
		if v.Valid() && offered[v] && v > best {
			best = v
		}
	}
	if best == 0 {
		reason := "supported protocol versions are " + strings.ReplaceAll(FormatVersions(supported), ",", " ")
		if !present {
			reason = "client speaks only STOMP 1.0 (no accept-version header); " + reason
		}
		return 0, newError(ErrUnsupportedVersion, reason)
	}
	return best, nil
}

// FormatVersions renders versions as a comma separated list, lowest first
// and without duplicates or invalid entries, for the version header of an
// ERROR frame or the accept-version header of a CONNECT frame.
func FormatVersions(versions []Version) string {
	var have [V12 + 1]bool
	for _, v := range versions {
		if v.Valid() {
			have[v] = true
		}
	}
	var b strings.Builder
	for v := V10; v <= V12; v++ {
		if have[v] {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(v.String())
		}
	}
	return b.String()
}
