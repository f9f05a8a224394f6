package main

import "strings"

// initialism returns the Go spelling of a word that Go style writes in
// capitals, or "". "ok" stays "Ok" (StartOk, GetOk), as Sluice's AMQP 0-9-1
// API spells the methods.
func initialism(w string) string {
	switch w {
	case "id", "amqp", "ttl", "url":
		return strings.ToUpper(w)
	}
	return ""
}

// spelling returns the Go name of a word the XML writes as one word where
// the other names of the same thing have two, or "": confirm.select's
// "nowait" is NoWait like every other class's "no-wait".
func spelling(w string) string {
	switch w {
	case "nowait":
		return "NoWait"
	}
	return ""
}

// goName turns an AMQP name such as "consumer-tag" into an exported Go name
// such as ConsumerTag.
func goName(s string) string {
	var sb strings.Builder
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '-' || r == '_' || r == ' ' }) {
		if up := initialism(w); up != "" {
			sb.WriteString(up)
			continue
		}
		if sp := spelling(w); sp != "" {
			sb.WriteString(sp)
			continue
		}
		sb.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return sb.String()
}
