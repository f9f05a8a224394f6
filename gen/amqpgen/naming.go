package main

import "strings"

// initialism returns the Go spelling of a word that Go style writes in
// capitals, or "".
func initialism(w string) string {
	switch w {
	case "amqp", "id", "sasl", "uuid", "ietf", "ttl", "tls", "utf8", "url", "ok":
		return strings.ToUpper(w)
	}
	return ""
}

// goName turns an AMQP name such as "max-frame-size" or "MIN-MAX-FRAME-SIZE"
// into an exported Go name such as MaxFrameSize.
func goName(s string) string {
	var sb strings.Builder
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '-' || r == '_' || r == ' ' || r == ':' }) {
		if up := initialism(w); up != "" {
			sb.WriteString(up)
			continue
		}
		sb.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return sb.String()
}
