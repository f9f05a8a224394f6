package message

// Type is the JMS type of a property or of a map/stream body entry.
type Type uint8

// The JMS value types. Null is an absent value. Bytes and Char occur only in
// map and stream bodies; properties are limited to the eight types of Table
// 6-4 of WebLogic JMS "Managing Your Applications" ("Setting Message Property
// Fields").
const (
	Null Type = iota
	Bool
	Byte
	Short
	Int
	Long
	Float
	Double
	String
	Bytes
	Char
)

// Value is one typed JMS value. Integers, booleans (0/1) and chars live in N,
// float and double in F, strings in S, byte arrays in B.
type Value struct {
	Type Type
	N    int64
	F    float64
	S    string
	B    []byte
}

// Properties are a message's properties in the order they were set. A message
// rarely has more than a dozen, so a slice searched linearly beats a map and
// costs one allocation.
type Properties []Field
