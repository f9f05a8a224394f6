package schedule

// Regenerate docs/grammar/*.ebnf (schedule and selector) from the parsers.
//go:generate go run ../../gen/grammardoc -out ../../docs/grammar
