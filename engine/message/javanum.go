package message

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

// FormatJavaDouble formats d as Java's Double.toString does (JDK 19 and
// later, which print the shortest decimal that reads back as d):
//
//   - NaN, Infinity and -Infinity by name;
//   - decimal notation with at least one fractional digit when
//     10^-3 <= |d| < 10^7: "3.0", "1.5", "0.001", "1234567.0";
//   - otherwise computerized scientific notation, one digit before the point
//     and at least one after: "1.0E21", "1.0E-4", "-1.2345E8".
//
// Like Java, a value whose shortest decimal has one digit is printed with the
// closest two-digit decimal that reads back as d, so 4.9E-324 rather than
// Go's 5e-324.
func FormatJavaDouble(d float64) string { return formatJava(d, 64) }

// FormatJavaFloat formats f as Java's Float.toString does: the rules of
// FormatJavaDouble with float precision, so 1.1 prints as "1.1" and not as
// the digits of its float64 widening.
func FormatJavaFloat(f float32) string { return formatJava(float64(f), 32) }

func formatJava(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(v, 'e', -1, bits)
	digits, exp, neg := splitE(e)
	if len(digits) == 1 {
		// Java picks the closest two-digit decimal that reads back as v.
		e2 := strconv.FormatFloat(v, 'e', 1, bits)
		if r, err := strconv.ParseFloat(e2, bits); err == nil && r == v {
			digits, exp, neg = splitE(e2)
			digits = strings.TrimRight(digits, "0")
			if digits == "" {
				digits = "0"
			}
		}
	}
	var b strings.Builder
	b.Grow(len(digits) + 8)
	if neg {
		b.WriteByte('-')
	}
	if exp >= -3 && exp < 7 {
		if exp >= 0 {
			if len(digits) > exp+1 {
				b.WriteString(digits[:exp+1])
				b.WriteByte('.')
				b.WriteString(digits[exp+1:])
			} else {
				b.WriteString(digits)
				for i := len(digits); i <= exp; i++ {
					b.WriteByte('0')
				}
				b.WriteString(".0")
			}
		} else {
			b.WriteString("0.")
			for i := -1; i > exp; i-- {
				b.WriteByte('0')
			}
			b.WriteString(digits)
		}
		return b.String()
	}
	b.WriteByte(digits[0])
	b.WriteByte('.')
	if len(digits) > 1 {
		b.WriteString(digits[1:])
	} else {
		b.WriteByte('0')
	}
	b.WriteByte('E')
	b.WriteString(strconv.Itoa(exp))
	return b.String()
}

// splitE splits strconv's 'e' format ("-1.25e+07") into its significant
// digits without the point ("125"), the decimal exponent (7) and the sign.
func splitE(s string) (digits string, exp int, neg bool) {
	if s[0] == '-' {
		neg = true
		s = s[1:]
	}
	i := strings.IndexByte(s, 'e')
	mant, es := s[:i], s[i+1:]
	exp, _ = strconv.Atoi(es)
	if len(mant) > 1 {
		digits = mant[:1] + mant[2:]
	} else {
		digits = mant
	}
	return digits, exp, neg
}

// parseJavaInt parses s as Java's Byte/Short/Integer/Long.parseLong(s, 10)
// do for a signed integer of the given bit size: an optional '+' or '-', then
// one or more decimal digits. Java's Character.digit also accepts the decimal
// digits of other scripts, one UTF-16 unit each, so BMP digits of Unicode
// category Nd are accepted too.
func parseJavaInt(s string, bits int) (int64, error) {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii, ok := asciiDigits(s)
			if !ok {
				return 0, &strconv.NumError{Func: "ParseInt", Num: s, Err: strconv.ErrSyntax}
			}
			n, err := strconv.ParseInt(ascii, 10, bits)
			if ne, ok := err.(*strconv.NumError); ok {
				ne.Num = s
			}
			return n, err
		}
	}
	return strconv.ParseInt(s, 10, bits)
}

// asciiDigits rewrites the non-ASCII decimal digits of s as ASCII ones. It
// fails on any other non-ASCII character and on digits outside the BMP, which
// Java sees as two surrogates and refuses.
func asciiDigits(s string) (string, bool) {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		if r > 0xFFFF || !unicode.Is(unicode.Nd, r) {
			return "", false
		}
		d, ok := ndValue(r)
		if !ok {
			return "", false
		}
		b.WriteByte('0' + d)
	}
	return b.String(), true
}

// ndValue returns the value of the BMP decimal digit r. Unicode encodes every
// script's decimal digits as a contiguous run from 0 to 9, so the value is the
// offset from the start of r's range in the Nd table, modulo 10.
func ndValue(r rune) (byte, bool) {
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) && rg.Stride == 1 {
			return byte((r - rune(rg.Lo)) % 10), true
		}
	}
	return 0, false
}

// parseJavaFloat parses s as Java's Double.parseDouble (bits 64) or
// Float.parseFloat (bits 32) do. Java trims characters up to ' ', accepts an
// optional sign, "NaN", "Infinity", decimal and hexadecimal literals with an
// optional f/F/d/D suffix, and rounds out-of-range values to ±Inf or zero.
// Go's ParseFloat alone differs: it accepts "inf", "nan" in any case and
// underscores, refuses the suffix, and reports overflow as an error.
func parseJavaFloat(s string, bits int) (float64, error) {
	syntax := func() (float64, error) {
		return 0, &strconv.NumError{Func: "ParseFloat", Num: s, Err: strconv.ErrSyntax}
	}
	t := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	body := t
	neg := false
	if body != "" && (body[0] == '+' || body[0] == '-') {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "":
		return syntax()
	}
	hex := len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')
	if last := body[len(body)-1]; last == 'f' || last == 'F' || last == 'd' || last == 'D' {
		// In a hexadecimal literal f and d are digits unless they follow the
		// binary exponent, which Java requires.
		if !hex || strings.ContainsAny(body, "pP") {
			body = body[:len(body)-1]
		}
	}
	if body == "" || (body[0] != '.' && (body[0] < '0' || body[0] > '9')) {
		return syntax()
	}
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '_', c == 'i', c == 'I', c == 'n', c == 'N':
			return syntax()
		}
	}
	num := body
	if neg {
		num = "-" + body
	}
	f, err := strconv.ParseFloat(num, bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, nil
		}
		if ne, ok := err.(*strconv.NumError); ok {
			ne.Num = s
		}
		return 0, err
	}
	return f, nil
}
