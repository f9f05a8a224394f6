package message

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// BoolValue returns a boolean Value.
func BoolValue(b bool) Value {
	if b {
		return Value{Type: Bool, N: 1}
	}
	return Value{Type: Bool}
}

// ByteValue returns a byte Value (a Java byte is signed).
func ByteValue(b int8) Value { return Value{Type: Byte, N: int64(b)} }

// ShortValue returns a short Value.
func ShortValue(s int16) Value { return Value{Type: Short, N: int64(s)} }

// IntValue returns an int Value.
func IntValue(i int32) Value { return Value{Type: Int, N: int64(i)} }

// LongValue returns a long Value.
func LongValue(l int64) Value { return Value{Type: Long, N: l} }

// FloatValue returns a float Value. F holds the float32 widened to float64.
func FloatValue(f float32) Value { return Value{Type: Float, F: float64(f)} }

// DoubleValue returns a double Value.
func DoubleValue(d float64) Value { return Value{Type: Double, F: d} }

// StringValue returns a string Value.
func StringValue(s string) Value { return Value{Type: String, S: s} }

// BytesValue returns a byte-array Value (map and stream bodies only). The
// Value keeps b; the caller must not modify it afterwards.
func BytesValue(b []byte) Value { return Value{Type: Bytes, B: b} }

// CharValue returns a char Value (map and stream bodies only). A Java char is
// one UTF-16 code unit, hence uint16 rather than rune.
func CharValue(c uint16) Value { return Value{Type: Char, N: int64(c)} }

// NullValue returns the Null Value: an absent property or a null map entry.
func NullValue() Value { return Value{} }

// String returns the type's Java name: "boolean", "byte", "short", "int",
// "long", "float", "double", "string", "bytes", "char" or "null". These are
// the names of the JSON form and the names ParseType accepts.
func (t Type) String() string {
	switch t {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Byte:
		return "byte"
	case Short:
		return "short"
	case Int:
		return "int"
	case Long:
		return "long"
	case Float:
		return "float"
	case Double:
		return "double"
	case String:
		return "string"
	case Bytes:
		return "bytes"
	case Char:
		return "char"
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// valid reports whether t is one of the defined types.
func (t Type) valid() bool { return t <= Char }

// IsPropertyType reports whether a property may have type t: the eight types
// of Table 6-4 of WebLogic JMS "Managing Your Applications", "Setting Message
// Property Fields": boolean, byte, short, int, long, float, double, string.
// Bytes, char and null are refused.
func (t Type) IsPropertyType() bool { return t >= Bool && t <= String }

// ParseType returns the Type named s, one of the names Type.String returns.
// Case is ignored, so "String" and "Boolean" are accepted too.
func ParseType(s string) (Type, error) {
	for t := Null; t <= Char; t++ {
		if strings.EqualFold(s, t.String()) {
			return t, nil
		}
	}
	return Null, fmt.Errorf("message: unknown value type %q (want boolean, byte, short, int, long, float, double, string, bytes, char or null)", s)
}

// ConversionError is a read that the JMS conversion chart (Table 6-5 of
// WebLogic JMS "Managing Your Applications", "Setting Message Property
// Fields", extended to char and bytes as for JMS MapMessage) marks "No": the
// Java MessageFormatException. What names the value read (`property "x"`, `map
// entry "k"`); it is empty for a bare Value.
type ConversionError struct {
	From, To Type
	What     string
}

// Error names both types, and the value read when What is set.
func (e *ConversionError) Error() string {
	if e.What == "" {
		return "message: cannot read a " + e.From.String() + " value as " + e.To.String()
	}
	return "message: cannot read " + e.From.String() + " " + e.What + " as " + e.To.String()
}

// FormatError is a string value that does not parse as the type asked for:
// the Java NumberFormatException. Err is strconv's error; What is as for
// ConversionError.
type FormatError struct {
	Input string
	To    Type
	What  string
	Err   error
}

// Error quotes the input and gives strconv's reason.
func (e *FormatError) Error() string {
	if e.What == "" {
		return fmt.Sprintf("message: cannot read string %q as %s: %v", e.Input, e.To, e.Err)
	}
	return fmt.Sprintf("message: cannot read string %s %q as %s: %v", e.What, e.Input, e.To, e.Err)
}

// Unwrap returns the underlying strconv error.
func (e *FormatError) Unwrap() error { return e.Err }

// NullError is a null value (a missing property or a null map entry) read as a
// numeric or char primitive. JMS treats such a read as valueOf(null), which
// throws NumberFormatException (NullPointerException for char). What is as
// for ConversionError.
type NullError struct {
	To   Type
	What string
}

// Error names the type asked for.
func (e *NullError) Error() string {
	if e.What == "" {
		return "message: cannot read a null value as " + e.To.String()
	}
	return "message: cannot read " + e.What + " as " + e.To.String() + ": it is null or not set"
}

// describe sets the What of a conversion error to what, returning err.
func describe(err error, what string) error {
	switch e := err.(type) {
	case *ConversionError:
		e.What = what
	case *FormatError:
		e.What = what
	case *NullError:
		e.What = what
	}
	return err
}

// Reading values follows the conversion chart of Table 6-5 of WebLogic JMS
// "Managing Your Applications" ("Setting Message Property Fields"), which is
// the JMS 1.1 §3.5.4 chart (the table labels its all-YES row "Object"; in JMS
// it is the String row, the only written type every column accepts):
//
//	written as  boolean byte short char int long float double String bytes
//	boolean       YES                                           YES
//	byte                YES  YES        YES  YES                YES
//	short                    YES        YES  YES                YES
//	char                          YES                           YES
//	int                                 YES  YES                YES
//	long                                     YES                YES
//	float                                         YES   YES     YES
//	double                                              YES     YES
//	String        YES   YES  YES        YES  YES  YES   YES     YES
//	bytes                                                             YES
//
// The char and bytes row and columns are JMS MapMessage's and StreamMessage's
// additions; properties never hold those types. Every other cell is a
// *ConversionError. A String is parsed with the Java valueOf rules (see
// AsBool, AsLong, AsDouble); a parse failure is a *FormatError.
//
// A Null value follows JMS for missing properties: AsBool returns false
// (Boolean.valueOf(null)), AsString returns "" and AsBytes nil with no error
// (Java returns null: check Type, or the ok of Properties.Get, to tell them
// apart), and every other getter returns a *NullError.

// AsBool reads v as a boolean. A string is true when it equals "true" ignoring
// case and false otherwise, never an error (Java's Boolean.valueOf).
func (v Value) AsBool() (bool, error) {
	switch v.Type {
	case Bool:
		return v.N != 0, nil
	case String:
		return strings.EqualFold(v.S, "true"), nil
	case Null:
		return false, nil
	}
	return false, &ConversionError{From: v.Type, To: Bool}
}

// AsByte reads v as a byte. A string is parsed as by Java's Byte.valueOf.
func (v Value) AsByte() (int8, error) {
	switch v.Type {
	case Byte:
		return int8(v.N), nil
	case String:
		n, err := parseJavaInt(v.S, 8)
		if err != nil {
			return 0, &FormatError{Input: v.S, To: Byte, Err: err}
		}
		return int8(n), nil
	case Null:
		return 0, &NullError{To: Byte}
	}
	return 0, &ConversionError{From: v.Type, To: Byte}
}

// AsShort reads v as a short. A string is parsed as by Java's Short.valueOf.
func (v Value) AsShort() (int16, error) {
	switch v.Type {
	case Byte, Short:
		return int16(v.N), nil
	case String:
		n, err := parseJavaInt(v.S, 16)
		if err != nil {
			return 0, &FormatError{Input: v.S, To: Short, Err: err}
		}
		return int16(n), nil
	case Null:
		return 0, &NullError{To: Short}
	}
	return 0, &ConversionError{From: v.Type, To: Short}
}

// AsInt reads v as an int. A string is parsed as by Java's Integer.valueOf.
func (v Value) AsInt() (int32, error) {
	switch v.Type {
	case Byte, Short, Int:
		return int32(v.N), nil
	case String:
		n, err := parseJavaInt(v.S, 32)
		if err != nil {
			return 0, &FormatError{Input: v.S, To: Int, Err: err}
		}
		return int32(n), nil
	case Null:
		return 0, &NullError{To: Int}
	}
	return 0, &ConversionError{From: v.Type, To: Int}
}

// AsLong reads v as a long. A string is parsed as by Java's Long.valueOf: an
// optional sign and decimal digits, no spaces; like Java, decimal digits of
// other scripts in the Basic Multilingual Plane are accepted ("١٢" is 12).
func (v Value) AsLong() (int64, error) {
	switch v.Type {
	case Byte, Short, Int, Long:
		return v.N, nil
	case String:
		n, err := parseJavaInt(v.S, 64)
		if err != nil {
			return 0, &FormatError{Input: v.S, To: Long, Err: err}
		}
		return n, nil
	case Null:
		return 0, &NullError{To: Long}
	}
	return 0, &ConversionError{From: v.Type, To: Long}
}

// AsFloat reads v as a float. A string is parsed as by Java's Float.valueOf
// (see AsDouble).
func (v Value) AsFloat() (float32, error) {
	switch v.Type {
	case Float:
		return float32(v.F), nil
	case String:
		f, err := parseJavaFloat(v.S, 32)
		if err != nil {
			return 0, &FormatError{Input: v.S, To: Float, Err: err}
		}
		return float32(f), nil
	case Null:
		return 0, &NullError{To: Float}
	}
	return 0, &ConversionError{From: v.Type, To: Float}
}

// AsDouble reads v as a double. A string is parsed as by Java's
// Double.valueOf: surrounding spaces and control characters are ignored, then
// an optional sign and "NaN", "Infinity", a decimal literal ("1.5", ".5",
// "1e3") or a hexadecimal one ("0x1.8p1"), optionally ending in f, F, d or D.
// Out-of-range values become ±Inf or zero, as in Java.
func (v Value) AsDouble() (float64, error) {
	switch v.Type {
	case Float:
		return float64(float32(v.F)), nil
	case Double:
		return v.F, nil
	case String:
		f, err := parseJavaFloat(v.S, 64)
		if err != nil {
			return 0, &FormatError{Input: v.S, To: Double, Err: err}
		}
		return f, nil
	case Null:
		return 0, &NullError{To: Double}
	}
	return 0, &ConversionError{From: v.Type, To: Double}
}

// AsString reads v as a string, in the form of Java's toString: "true",
// "-12", "1.5", "3.0", "1.0E21", "NaN", "-Infinity" (see FormatJavaDouble).
// A char becomes its one-character string (a lone surrogate becomes U+FFFD).
// A Null reads as "" with no error (Java's getStringProperty returns null).
// Bytes cannot be read as a string.
func (v Value) AsString() (string, error) {
	switch v.Type {
	case String:
		return v.S, nil
	case Bool:
		if v.N != 0 {
			return "true", nil
		}
		return "false", nil
	case Byte, Short, Int, Long:
		return strconv.FormatInt(v.N, 10), nil
	case Float:
		return FormatJavaFloat(float32(v.F)), nil
	case Double:
		return FormatJavaDouble(v.F), nil
	case Char:
		return string(rune(uint16(v.N))), nil
	case Null:
		return "", nil
	}
	return "", &ConversionError{From: v.Type, To: String}
}

// AsChar reads v as a char (map and stream bodies). Only a char reads as a
// char; a Null is a *NullError (Java throws NullPointerException).
func (v Value) AsChar() (uint16, error) {
	switch v.Type {
	case Char:
		return uint16(v.N), nil
	case Null:
		return 0, &NullError{To: Char}
	}
	return 0, &ConversionError{From: v.Type, To: Char}
}

// AsBytes reads v as a byte array (map and stream bodies). Only bytes read as
// bytes; a Null reads as nil with no error. The slice is v's own: do not
// modify it.
func (v Value) AsBytes() ([]byte, error) {
	switch v.Type {
	case Bytes:
		return v.B, nil
	case Null:
		return nil, nil
	}
	return nil, &ConversionError{From: v.Type, To: Bytes}
}

// String returns v for display: the AsString form for every type that has
// one, "null" for Null and standard base64 for bytes.
func (v Value) String() string {
	switch v.Type {
	case Null:
		return "null"
	case Bytes:
		return base64.StdEncoding.EncodeToString(v.B)
	}
	s, err := v.AsString()
	if err != nil {
		return v.Type.String() + "(?)"
	}
	return s
}

// Equal reports whether v and w have the same type and value. Only the field
// that holds the value of v's type is compared, read as that type (a float
// compares as its float32). Floating-point values compare by bit pattern, so a
// NaN equals the same NaN and 0.0 differs from -0.0: Equal means "the same
// value", as a codec round trip must preserve it, not numeric equality. A nil
// byte array equals an empty one.
func (v Value) Equal(w Value) bool {
	if v.Type != w.Type {
		return false
	}
	switch v.Type {
	case Null:
		return true
	case Bool:
		return (v.N != 0) == (w.N != 0)
	case Byte:
		return int8(v.N) == int8(w.N)
	case Short:
		return int16(v.N) == int16(w.N)
	case Char:
		return uint16(v.N) == uint16(w.N)
	case Int:
		return int32(v.N) == int32(w.N)
	case Long:
		return v.N == w.N
	case Float:
		return math.Float32bits(float32(v.F)) == math.Float32bits(float32(w.F))
	case Double:
		return math.Float64bits(v.F) == math.Float64bits(w.F)
	case String:
		return v.S == w.S
	case Bytes:
		return bytes.Equal(v.B, w.B)
	}
	return v.N == w.N && math.Float64bits(v.F) == math.Float64bits(w.F) && v.S == w.S && bytes.Equal(v.B, w.B)
}

// clone returns v with its own copy of B.
func (v Value) clone() Value {
	if v.B != nil {
		v.B = bytes.Clone(v.B)
	}
	return v
}
