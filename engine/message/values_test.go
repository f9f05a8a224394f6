package message

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// readAs reads v with the getter for type to and returns the result as any.
func readAs(v Value, to Type) (any, error) {
	switch to {
	case Bool:
		return v.AsBool()
	case Byte:
		return v.AsByte()
	case Short:
		return v.AsShort()
	case Int:
		return v.AsInt()
	case Long:
		return v.AsLong()
	case Float:
		return v.AsFloat()
	case Double:
		return v.AsDouble()
	case String:
		return v.AsString()
	case Char:
		return v.AsChar()
	case Bytes:
		return v.AsBytes()
	}
	panic("no getter for " + to.String())
}

// Table 6-5 of WebLogic JMS "Managing Your Applications" ("Setting Message
// Property Fields"), transcribed cell by cell. Columns are in the table's
// order; the row the table labels "Object" is the String row (see the doc
// comment above Value.AsBool).
var chartColumns = []Type{Bool, Byte, Double, Float, Int, Long, Short, String}

const seedChart = `
boolean YES No  No  No  No  No  No  YES
byte    No  YES No  No  YES YES YES YES
double  No  No  YES No  No  No  No  YES
float   No  No  YES YES No  No  No  YES
int     No  No  No  No  YES YES No  YES
long    No  No  No  No  No  YES No  YES
string  YES YES YES YES YES YES YES YES
short   No  No  No  No  YES YES YES YES
`

// A value of each written type, and what each YES cell must read.
var chartValues = map[Type]Value{
	Bool:   BoolValue(true),
	Byte:   ByteValue(-7),
	Short:  ShortValue(-300),
	Int:    IntValue(70000),
	Long:   LongValue(1 << 40),
	Float:  FloatValue(1.5),
	Double: DoubleValue(2.25),
	String: StringValue("12"),
}

var chartWants = map[[2]Type]any{
	{Bool, Bool}: true, {Bool, String}: "true",
	{Byte, Byte}: int8(-7), {Byte, Short}: int16(-7), {Byte, Int}: int32(-7), {Byte, Long}: int64(-7), {Byte, String}: "-7",
	{Short, Short}: int16(-300), {Short, Int}: int32(-300), {Short, Long}: int64(-300), {Short, String}: "-300",
	{Int, Int}: int32(70000), {Int, Long}: int64(70000), {Int, String}: "70000",
	{Long, Long}: int64(1 << 40), {Long, String}: "1099511627776",
	{Float, Float}: float32(1.5), {Float, Double}: 1.5, {Float, String}: "1.5",
	{Double, Double}: 2.25, {Double, String}: "2.25",
	{String, Bool}: false, {String, Byte}: int8(12), {String, Short}: int16(12), {String, Int}: int32(12),
	{String, Long}: int64(12), {String, Float}: float32(12), {String, Double}: 12.0, {String, String}: "12",
}

func TestConversionChart(t *testing.T) {
	rows := strings.Split(strings.TrimSpace(seedChart), "\n")
	if len(rows) != 8 {
		t.Fatalf("chart has %d rows", len(rows))
	}
	for _, row := range rows {
		cells := strings.Fields(row)
		from, err := ParseType(cells[0])
		if err != nil {
			t.Fatal(err)
		}
		for i, to := range chartColumns {
			yes := cells[i+1] == "YES"
			t.Run(from.String()+"->"+to.String(), func(t *testing.T) {
				got, err := readAs(chartValues[from], to)
				if !yes {
					var ce *ConversionError
					if !errors.As(err, &ce) || ce.From != from || ce.To != to {
						t.Fatalf("read = %v, %v; want *ConversionError{%s, %s}", got, err, from, to)
					}
					return
				}
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				if want := chartWants[[2]Type{from, to}]; got != want {
					t.Fatalf("read = %#v, want %#v", got, want)
				}
			})
		}
	}
}

// TestConversionChartMapTypes covers the char and bytes row and columns that
// JMS MapMessage and StreamMessage add to the chart.
func TestConversionChartMapTypes(t *testing.T) {
	all := []Type{Bool, Byte, Short, Char, Int, Long, Float, Double, String, Bytes}
	values := map[Type]Value{Char: CharValue('x'), Bytes: BytesValue([]byte{1, 2})}
	for k, v := range chartValues {
		values[k] = v
	}
	for _, from := range all {
		for _, to := range all {
			if from != Char && from != Bytes && to != Char && to != Bytes {
				continue // WebLogic's chart (Table 6-5), tested above
			}
			yes := from == to || (from == Char && to == String)
			got, err := readAs(values[from], to)
			if !yes {
				var ce *ConversionError
				if !errors.As(err, &ce) || ce.From != from || ce.To != to {
					t.Errorf("%s -> %s = %v, %v; want *ConversionError", from, to, got, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s -> %s: %v", from, to, err)
			}
		}
	}
	if c, _ := values[Char].AsChar(); c != 'x' {
		t.Errorf("AsChar = %d", c)
	}
	if s, _ := values[Char].AsString(); s != "x" {
		t.Errorf("char AsString = %q", s)
	}
	if b, _ := values[Bytes].AsBytes(); string(b) != "\x01\x02" {
		t.Errorf("AsBytes = %v", b)
	}
}

func TestNullReads(t *testing.T) {
	null := NullValue()
	if b, err := null.AsBool(); b || err != nil {
		t.Errorf("AsBool = %v, %v; want false, nil (Boolean.valueOf(null))", b, err)
	}
	if s, err := null.AsString(); s != "" || err != nil {
		t.Errorf("AsString = %q, %v; want \"\", nil", s, err)
	}
	if b, err := null.AsBytes(); b != nil || err != nil {
		t.Errorf("AsBytes = %v, %v; want nil, nil", b, err)
	}
	for _, to := range []Type{Byte, Short, Int, Long, Float, Double, Char} {
		got, err := readAs(null, to)
		var ne *NullError
		if !errors.As(err, &ne) || ne.To != to {
			t.Errorf("null as %s = %v, %v; want *NullError", to, got, err)
		}
	}
}

func TestStringToNumber(t *testing.T) {
	syntax, rng := strconv.ErrSyntax, strconv.ErrRange
	tests := []struct {
		in   string
		to   Type
		want any   // on success
		err  error // strconv sentinel on failure
	}{
		{"127", Byte, int8(127), nil},
		{"-128", Byte, int8(-128), nil},
		{"128", Byte, nil, rng},
		{"+5", Byte, int8(5), nil},
		{"32767", Short, int16(32767), nil},
		{"32768", Short, nil, rng},
		{"-2147483648", Int, int32(math.MinInt32), nil},
		{"2147483648", Int, nil, rng},
		{"9223372036854775807", Long, int64(math.MaxInt64), nil},
		{"9223372036854775808", Long, nil, rng},
		{"-0", Long, int64(0), nil},
		{"007", Long, int64(7), nil},
		{"", Long, nil, syntax},
		{"-", Long, nil, syntax},
		{"+", Long, nil, syntax},
		{" 5", Long, nil, syntax},
		{"5 ", Long, nil, syntax},
		{"5.0", Long, nil, syntax},
		{"0x10", Long, nil, syntax},
		{"1_000", Long, nil, syntax},
		{"١٢", Long, int64(12), nil},      // Arabic-Indic digits: Character.digit accepts them
		{"-１２", Int, int32(-12), nil},     // fullwidth digits
		{"\U0001D7CF", Long, nil, syntax}, // a digit outside the BMP: two surrogates to Java
		{"1²", Long, nil, syntax},         // superscript two is No, not Nd
		{"١٢٨", Byte, nil, rng},           // range checked after the digits are read
		{"1.5", Double, 1.5, nil},         //
		{" 1.5\t", Double, 1.5, nil},      // Java trims
		{"1.5f", Double, 1.5, nil},        // type suffixes
		{"2D", Double, 2.0, nil},          //
		{".5", Double, 0.5, nil},          //
		{"5.", Double, 5.0, nil},          //
		{"-1e3", Double, -1000.0, nil},    //
		{"0x1.8p1", Double, 3.0, nil},     // hexadecimal
		{"0x1.8p1d", Double, 3.0, nil},    //
		{"0x1d", Double, nil, syntax},     // hex needs the binary exponent
		{"NaN", Double, math.NaN(), nil},  //
		{"+Infinity", Double, math.Inf(1), nil},
		{"-Infinity", Double, math.Inf(-1), nil},
		{"1e400", Double, math.Inf(1), nil},   // Java rounds to infinity
		{"-1e400", Double, math.Inf(-1), nil}, //
		{"1e-400", Double, 0.0, nil},          //
		{"inf", Double, nil, syntax},          // Go spellings Java refuses
		{"Inf", Double, nil, syntax},          //
		{"nan", Double, nil, syntax},          //
		{"infinity", Double, nil, syntax},     //
		{"1_0", Double, nil, syntax},          //
		{"", Double, nil, syntax},             //
		{".", Double, nil, syntax},            //
		{"1e", Double, nil, syntax},           //
		{"1.5ff", Double, nil, syntax},        //
		{"f", Double, nil, syntax},            //
		{"abc", Double, nil, syntax},          //
		{"1.1", Float, float32(1.1), nil},     //
		{"1e50", Float, float32(math.Inf(1)), nil},
		{"3.4028235e38", Float, float32(math.MaxFloat32), nil},
	}
	for _, tt := range tests {
		t.Run(tt.to.String()+"/"+tt.in, func(t *testing.T) {
			got, err := readAs(StringValue(tt.in), tt.to)
			if tt.err != nil {
				var fe *FormatError
				if !errors.As(err, &fe) || fe.To != tt.to || fe.Input != tt.in || !errors.Is(err, tt.err) {
					t.Fatalf("= %v, %v; want *FormatError wrapping %v", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := tt.want.(float64); ok && math.IsNaN(f) {
				if g, _ := got.(float64); !math.IsNaN(g) {
					t.Fatalf("= %v, want NaN", got)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("= %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestStringToBool(t *testing.T) {
	for in, want := range map[string]bool{
		"true": true, "TRUE": true, "True": true, "tRuE": true,
		"false": false, "yes": false, "1": false, "": false, " true": false, "true ": false,
	} {
		if got, err := StringValue(in).AsBool(); got != want || err != nil {
			t.Errorf("AsBool(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestFormatJava(t *testing.T) {
	doubles := []struct {
		in   float64
		want string
	}{
		{1.5, "1.5"},
		{3, "3.0"},
		{100, "100.0"},
		{-2, "-2.0"},
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{0.1, "0.1"},
		{0.001, "0.001"},
		{0.0001, "1.0E-4"},
		{0.00012345, "1.2345E-4"},
		{1234567, "1234567.0"},
		{9999999, "9999999.0"},
		{1e7, "1.0E7"},
		{12345678.9, "1.23456789E7"},
		{-123456789, "-1.23456789E8"},
		{1e21, "1.0E21"},
		{1e-300, "1.0E-300"},
		{math.MaxFloat64, "1.7976931348623157E308"},
		{math.SmallestNonzeroFloat64, "4.9E-324"}, // Java's two-digit rule
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
	}
	for _, tt := range doubles {
		if got := FormatJavaDouble(tt.in); got != tt.want {
			t.Errorf("FormatJavaDouble(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	floats := []struct {
		in   float32
		want string
	}{
		{1.1, "1.1"},
		{0.3, "0.3"},
		{3, "3.0"},
		{1e10, "1.0E10"},
		{16777216, "1.6777216E7"},
		{math.MaxFloat32, "3.4028235E38"},
		{math.SmallestNonzeroFloat32, "1.4E-45"},
		{float32(math.Inf(-1)), "-Infinity"},
	}
	for _, tt := range floats {
		if got := FormatJavaFloat(tt.in); got != tt.want {
			t.Errorf("FormatJavaFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestFormatJavaReadsBack checks that the Java forms parse back exactly, for
// values across the whole range.
func TestFormatJavaReadsBack(t *testing.T) {
	for e := -320; e <= 308; e += 7 {
		for _, m := range []float64{1, 1.7, 2.5, 9.999, 3.14159} {
			d := m * math.Pow(10, float64(e))
			if got, err := StringValue(FormatJavaDouble(d)).AsDouble(); err != nil || got != d {
				t.Errorf("double %v -> %q -> %v, %v", d, FormatJavaDouble(d), got, err)
			}
			f := float32(d)
			if got, err := StringValue(FormatJavaFloat(f)).AsFloat(); err != nil || got != f {
				t.Errorf("float %v -> %q -> %v, %v", f, FormatJavaFloat(f), got, err)
			}
		}
	}
}

func TestTypeNames(t *testing.T) {
	want := []string{"null", "boolean", "byte", "short", "int", "long", "float", "double", "string", "bytes", "char"}
	for i, name := range want {
		typ := Type(i)
		if typ.String() != name {
			t.Errorf("Type(%d).String() = %q, want %q", i, typ.String(), name)
		}
		if got, err := ParseType(name); got != typ || err != nil {
			t.Errorf("ParseType(%q) = %v, %v", name, got, err)
		}
	}
	if got, err := ParseType("String"); got != String || err != nil {
		t.Errorf("ParseType(String) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "bool", "integer", "object"} {
		if _, err := ParseType(bad); err == nil {
			t.Errorf("ParseType(%q) succeeded", bad)
		}
	}
	if s := Type(99).String(); s != "type(99)" {
		t.Errorf("Type(99).String() = %q", s)
	}
}

func TestValueString(t *testing.T) {
	tests := []struct {
		v    Value
		want string
	}{
		{NullValue(), "null"},
		{BoolValue(false), "false"},
		{ByteValue(-1), "-1"},
		{LongValue(math.MinInt64), "-9223372036854775808"},
		{FloatValue(2), "2.0"},
		{DoubleValue(1e21), "1.0E21"},
		{StringValue("hi"), "hi"},
		{BytesValue([]byte("hi")), "aGk="},
		{CharValue('é'), "é"},
		{CharValue(0xD800), "\uFFFD"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%v String() = %q, want %q", tt.v.Type, got, tt.want)
		}
	}
}

func TestValueEqual(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		a, b Value
		want bool
	}{
		{IntValue(5), IntValue(5), true},
		{IntValue(5), LongValue(5), false},
		{IntValue(5), Value{Type: Int, N: 5, S: "ignored"}, true},
		{DoubleValue(nan), DoubleValue(nan), true},
		{DoubleValue(0), DoubleValue(math.Copysign(0, -1)), false},
		{FloatValue(1.1), FloatValue(1.1), true},
		{BytesValue(nil), BytesValue([]byte{}), true},
		{BytesValue([]byte{1}), BytesValue([]byte{2}), false},
		{StringValue("a"), StringValue("b"), false},
		{NullValue(), Value{}, true},
		{BoolValue(true), Value{Type: Bool, N: 7}, true},
	}
	for i, tt := range tests {
		if got := tt.a.Equal(tt.b); got != tt.want {
			t.Errorf("%d: %v.Equal(%v) = %v", i, tt.a, tt.b, got)
		}
	}
}

func TestConversionErrorText(t *testing.T) {
	_, err := BoolValue(true).AsInt()
	if got, want := err.Error(), "message: cannot read a boolean value as int"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	_, err = StringValue("x").AsInt()
	if got := err.Error(); !strings.Contains(got, `cannot read string "x" as int`) || !strings.Contains(got, "invalid syntax") {
		t.Errorf("error = %q", got)
	}
}
