package main

import (
	"fmt"
	"strconv"
	"strings"
)

// primInfo is what the generator knows about one primitive type of AMQP
// 0-9-1 (the types that domains are made of): its Go type and the Go
// statements that append and decode a value. A type the XML uses that is
// not listed here is an error.
type primInfo struct {
	GoType string
	// Append returns the statement appending the value of the Go
	// expression x to b.
	Append func(x string) string
	// Decode returns the statement decoding the field named name (for the
	// error message) into the Go expression x, with the decoder d.
	Decode func(name, x string) string
}

func primitive(name string) (primInfo, bool) {
	assign := func(read string) func(name, x string) string {
		return func(name, x string) string { return fmt.Sprintf("%s = d.%s(%q)", x, read, name) }
	}
	call := func(fn string) func(x string) string {
		return func(x string) string { return fmt.Sprintf("b = %s(b, %s)", fn, x) }
	}
	switch name {
	case "bit":
		// Bits are packed by the method's bit groups; see buildMethodCode.
		return primInfo{GoType: "bool"}, true
	case "octet":
		return primInfo{"uint8", func(x string) string { return "b = append(b, " + x + ")" }, assign("octet")}, true
	case "short":
		return primInfo{"uint16", call("binary.BigEndian.AppendUint16"), assign("short")}, true
	case "long":
		return primInfo{"uint32", call("binary.BigEndian.AppendUint32"), assign("long")}, true
	case "longlong":
		return primInfo{"uint64", call("binary.BigEndian.AppendUint64"), assign("longlong")}, true
	case "shortstr":
		return primInfo{"string", call("appendShortstr"), func(name, x string) string {
			return fmt.Sprintf("d.shortstr(%q, &%s)", name, x)
		}}, true
	case "longstr":
		return primInfo{"[]byte", call("appendLongstr"), func(name, x string) string {
			return fmt.Sprintf("%s = d.longstr(%q, %s[:0])", x, name, x)
		}}, true
	case "table":
		return primInfo{"Table", call("AppendTable"), assign("table")}, true
	case "timestamp":
		return primInfo{"time.Time", call("appendTimestamp"), assign("timestamp")}, true
	}
	return primInfo{}, false
}

// interfaceMethods are the methods of the generated Method interface; a
// field may not have one of these Go names.
func interfaceMethods() []string {
	return []string{"ClassID", "MethodID", "Name", "Synchronous", "HasContent", "Append", "Decode"}
}

// fieldRename gives the Go name of a method field whose natural Go name is
// one of interfaceMethods: connection.close and channel.close name the
// class and method that caused the close.
func fieldRename(goName string) string {
	switch goName {
	case "ClassID":
		return "FailingClassID"
	case "MethodID":
		return "FailingMethodID"
	}
	return ""
}

// Model is everything the template needs.
type Model struct {
	Source     string // base name of the XML file
	Version    string // "0-9-1"
	Port       string
	Constants  []Constant
	HardErrors []string // Go names of the hard-error reply codes
	Classes    []*Class
	Methods    []*Method // all methods, class by class
	Props      *Props    // nil if no class has content properties
	UsesTime   bool
}

// Constant is a <constant> of the XML (or of extraConstants).
type Constant struct {
	Name, GoName, Value, Class string
	Note                       string // why it is not from the XML, or ""
}

// Class is a <class>.
type Class struct {
	Name, GoName string
	Index        int
	Methods      []*Method
}

// Method is a <method> of a class.
type Method struct {
	FullName, GoName string // "basic.publish", "BasicPublish"
	ClassGoName      string // "ClassBasic"
	ClassIndex       int
	Index            int
	Sync, Content    bool
	Deprecated       bool
	Note             string
	XML              []string // the definition, one element a line, for the doc comment
	Fields           []Field
	Encode, Decode   []string // Go statements
}

// Field is a <field> of a method or of a class's content properties.
type Field struct {
	Name, GoName, GoType string
	Type                 string // the primitive type
	Reserved             bool
}

// Props is the content properties of the one class that has them.
type Props struct {
	ClassName, GoName string // "basic", "BasicProperties"
	ClassGoName       string
	Fields            []Prop
	Mask              string // hex of all flags
}

// Prop is one property with its presence flag.
type Prop struct {
	Field
	Flag           string // "FlagContentType"
	FlagHex        string
	Encode, Decode []string
}

// buildModel checks the definition and turns it into the Model.
func buildModel(doc *xmlAMQP, source string) (*Model, error) {
	if doc.Major != "0" || doc.Minor != "9" || doc.Revision != "1" {
		return nil, fmt.Errorf("%s: version %s-%s-%s, want 0-9-1", source, doc.Major, doc.Minor, doc.Revision)
	}
	m := &Model{Source: source, Version: "0-9-1", Port: doc.Port}
	goNames := map[string]string{} // package-level Go name -> what it is
	claim := func(goName, what string) error {
		if prev, ok := goNames[goName]; ok {
			return fmt.Errorf("%s and %s both have the Go name %s", prev, what, goName)
		}
		goNames[goName] = what
		return nil
	}

	// Constants, then the extras the XML lacks.
	consts := map[string]xmlConstant{}
	addConst := func(c xmlConstant, note string) error {
		if c.Name == "" {
			return fmt.Errorf("a constant without a name")
		}
		if _, err := strconv.ParseUint(c.Value, 10, 32); err != nil {
			return fmt.Errorf("constant %s: value %q is not an unsigned number", c.Name, c.Value)
		}
		switch c.Class {
		case "", "soft-error", "hard-error":
		default:
			return fmt.Errorf("constant %s: unknown class %q", c.Name, c.Class)
		}
		gn := goName(c.Name)
		if err := claim(gn, "constant "+c.Name); err != nil {
			return err
		}
		consts[c.Name] = c
		m.Constants = append(m.Constants, Constant{Name: c.Name, GoName: gn, Value: c.Value, Class: c.Class, Note: note})
		if c.Class == "hard-error" {
			m.HardErrors = append(m.HardErrors, gn)
		}
		return nil
	}
	for _, c := range doc.Constants {
		if _, dup := consts[c.Name]; dup {
			return nil, fmt.Errorf("constant %s defined twice", c.Name)
		}
		if err := addConst(c, ""); err != nil {
			return nil, err
		}
	}
	for _, c := range extraConstants() {
		if have, ok := consts[c.Name]; ok {
			if have != c {
				return nil, fmt.Errorf("constant %s: the XML has value %s class %q, the generator's extras %s class %q", c.Name, have.Value, have.Class, c.Value, c.Class)
			}
			continue
		}
		if err := addConst(c, extraNote); err != nil {
			return nil, err
		}
	}

	// Domains.
	domains := map[string]string{} // domain -> primitive type
	for _, d := range doc.Domains {
		if _, dup := domains[d.Name]; dup {
			return nil, fmt.Errorf("domain %s defined twice", d.Name)
		}
		if _, ok := primitive(d.Type); !ok {
			return nil, fmt.Errorf("domain %s: unknown type %q", d.Name, d.Type)
		}
		domains[d.Name] = d.Type
	}
	resolve := func(where string, f xmlField) (Field, error) {
		if f.Name == "" {
			return Field{}, fmt.Errorf("%s: a field without a name", where)
		}
		where = where + " field " + f.Name
		var typ string
		switch {
		case f.Domain != "" && f.Type != "":
			return Field{}, fmt.Errorf("%s has both a domain and a type", where)
		case f.Domain != "":
			t, ok := domains[f.Domain]
			if !ok {
				return Field{}, fmt.Errorf("%s: unknown domain %q", where, f.Domain)
			}
			typ = t
		case f.Type != "":
			typ = f.Type
		default:
			return Field{}, fmt.Errorf("%s has neither a domain nor a type", where)
		}
		pi, ok := primitive(typ)
		if !ok {
			return Field{}, fmt.Errorf("%s: unknown type %q", where, typ)
		}
		reserved, err := xmlBool(where+" reserved", f.Reserved)
		if err != nil {
			return Field{}, err
		}
		name := f.Name
		if name == "reserved" {
			// basic's cluster-id property, reserved since 0-9-1: named like
			// the methods' numbered reserved fields.
			name = "reserved-1"
		}
		return Field{Name: f.Name, GoName: goName(name), GoType: pi.GoType, Type: typ, Reserved: reserved}, nil
	}

	// Classes and methods, with the extra methods.
	extras := map[string][]xmlMethod{}
	for _, e := range extraMethods() {
		extras[e.Class] = append(extras[e.Class], e.Method)
	}
	classIdx := map[int]string{}
	classNames := map[string]bool{}
	for _, xc := range doc.Classes {
		if xc.Name == "" {
			return nil, fmt.Errorf("a class without a name")
		}
		if classNames[xc.Name] {
			return nil, fmt.Errorf("class %s defined twice", xc.Name)
		}
		classNames[xc.Name] = true
		idx, err := parseIndex("class "+xc.Name, xc.Index)
		if err != nil {
			return nil, err
		}
		if prev, ok := classIdx[idx]; ok {
			return nil, fmt.Errorf("classes %s and %s both have index %d", prev, xc.Name, idx)
		}
		classIdx[idx] = xc.Name
		c := &Class{Name: xc.Name, GoName: "Class" + goName(xc.Name), Index: idx}
		if err := claim(c.GoName, "class "+xc.Name); err != nil {
			return nil, err
		}
		methods := append([]xmlMethod(nil), xc.Methods...)
		notes := make([]string, len(methods))
		for _, em := range extras[xc.Name] {
			found := -1
			for i, xm := range methods {
				if xm.Name == em.Name {
					found = i
				}
			}
			if found < 0 {
				methods = append(methods, em)
				notes = append(notes, extraNote)
				continue
			}
			if !sameMethod(methods[found], em) {
				return nil, fmt.Errorf("method %s.%s: the XML's definition differs from the generator's extras", xc.Name, em.Name)
			}
		}
		delete(extras, xc.Name)
		methodIdx := map[int]string{}
		for i, xm := range methods {
			me, err := buildMethod(c, xm, notes[i], resolve)
			if err != nil {
				return nil, err
			}
			if prev, ok := methodIdx[me.Index]; ok {
				return nil, fmt.Errorf("methods %s.%s and %s both have index %d", xc.Name, prev, me.FullName, me.Index)
			}
			methodIdx[me.Index] = xm.Name
			if err := claim(me.GoName, "method "+me.FullName); err != nil {
				return nil, err
			}
			if err := claim("Method"+me.GoName, "the method id of "+me.FullName); err != nil {
				return nil, err
			}
			c.Methods = append(c.Methods, me)
			m.Methods = append(m.Methods, me)
		}
		if len(xc.Fields) > 0 {
			if m.Props != nil {
				return nil, fmt.Errorf("classes %s and %s both have content properties: the generator handles one", m.Props.ClassName, xc.Name)
			}
			p, err := buildProps(c, xc.Fields, resolve)
			if err != nil {
				return nil, err
			}
			for _, f := range p.Fields {
				if err := claim(f.Flag, "the flag of property "+f.Name); err != nil {
					return nil, err
				}
				if f.Type == "timestamp" {
					m.UsesTime = true
				}
			}
			if err := claim(p.GoName, "the properties of class "+xc.Name); err != nil {
				return nil, err
			}
			m.Props = p
		}
		m.Classes = append(m.Classes, c)
	}
	for class := range extras {
		return nil, fmt.Errorf("the generator's extras add methods to class %s, which the XML lacks", class)
	}
	for _, me := range m.Methods {
		for _, f := range me.Fields {
			if f.Type == "timestamp" {
				m.UsesTime = true
			}
		}
	}
	return m, nil
}

// sameMethod reports whether two method definitions agree on what the
// generated code depends on.
func sameMethod(a, b xmlMethod) bool {
	if a.Index != b.Index || (a.Synchronous == "1") != (b.Synchronous == "1") || (a.Content == "1") != (b.Content == "1") || len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i] != b.Fields[i] {
			return false
		}
	}
	return true
}

func buildMethod(c *Class, xm xmlMethod, note string, resolve func(string, xmlField) (Field, error)) (*Method, error) {
	if xm.Name == "" {
		return nil, fmt.Errorf("class %s: a method without a name", c.Name)
	}
	full := c.Name + "." + xm.Name
	idx, err := parseIndex("method "+full, xm.Index)
	if err != nil {
		return nil, err
	}
	me := &Method{FullName: full, GoName: goName(c.Name) + goName(xm.Name), ClassGoName: c.GoName, ClassIndex: c.Index, Index: idx, Note: note}
	if me.Sync, err = xmlBool("method "+full+" synchronous", xm.Synchronous); err != nil {
		return nil, err
	}
	if me.Content, err = xmlBool("method "+full+" content", xm.Content); err != nil {
		return nil, err
	}
	if me.Deprecated, err = xmlBool("method "+full+" deprecated", xm.Deprecated); err != nil {
		return nil, err
	}
	me.XML = methodXML(xm)
	seen := map[string]string{}
	for _, xf := range xm.Fields {
		f, err := resolve("method "+full, xf)
		if err != nil {
			return nil, err
		}
		for _, im := range interfaceMethods() {
			if f.GoName == im {
				rn := fieldRename(f.GoName)
				if rn == "" {
					return nil, fmt.Errorf("method %s field %s: its Go name %s is a method of the Method interface, and fieldRename has no other name for it", full, f.Name, f.GoName)
				}
				f.GoName = rn
			}
		}
		if prev, ok := seen[f.GoName]; ok {
			return nil, fmt.Errorf("method %s: fields %s and %s both have the Go name %s", full, prev, f.Name, f.GoName)
		}
		seen[f.GoName] = f.Name
		me.Fields = append(me.Fields, f)
	}
	me.Encode, me.Decode = methodCode(me.Fields)
	return me, nil
}

// methodCode returns the statements of a method's encoder and decoder.
// Consecutive bit fields share octets, eight to an octet, the first field
// in the lowest bit (AMQP 0-9-1 section 4.2.5.2).
func methodCode(fields []Field) (enc, dec []string) {
	group := 0
	for i := 0; i < len(fields); {
		f := fields[i]
		if f.Type != "bit" {
			pi, _ := primitive(f.Type)
			enc = append(enc, pi.Append("m."+f.GoName))
			dec = append(dec, pi.Decode(f.Name, "m."+f.GoName))
			i++
			continue
		}
		j := i
		for j < len(fields) && j-i < 8 && fields[j].Type == "bit" {
			j++
		}
		v := fmt.Sprintf("bits%d", group)
		group++
		var names []string
		for _, g := range fields[i:j] {
			names = append(names, g.Name)
		}
		enc = append(enc, "var "+v+" uint8")
		dec = append(dec, fmt.Sprintf("%s := d.octet(%q)", v, strings.Join(names, ", ")))
		for k, g := range fields[i:j] {
			enc = append(enc, fmt.Sprintf("if m.%s {\n%s |= 1 << %d\n}", g.GoName, v, k))
			dec = append(dec, fmt.Sprintf("m.%s = %s&(1<<%d) != 0", g.GoName, v, k))
		}
		enc = append(enc, "b = append(b, "+v+")")
		i = j
	}
	return enc, dec
}

func buildProps(c *Class, xfs []xmlField, resolve func(string, xmlField) (Field, error)) (*Props, error) {
	// Property flags: the first property is bit 15 of the first flags word;
	// bit 0 says another flags word follows, which a class of up to 15
	// properties never needs (AMQP 0-9-1 section 4.2.6.1).
	if len(xfs) > 15 {
		return nil, fmt.Errorf("class %s has %d content properties: more than 15 need a second flags word, which the generator does not write", c.Name, len(xfs))
	}
	p := &Props{ClassName: c.Name, GoName: goName(c.Name) + "Properties", ClassGoName: c.GoName}
	var mask uint16
	seen := map[string]string{"Flags": "the presence flags"}
	for i, xf := range xfs {
		f, err := resolve("class "+c.Name+" property", xf)
		if err != nil {
			return nil, err
		}
		if f.Type == "bit" {
			return nil, fmt.Errorf("class %s property %s: a bit property (its flag is its value) is not supported", c.Name, f.Name)
		}
		if prev, ok := seen[f.GoName]; ok {
			return nil, fmt.Errorf("class %s: properties %s and %s both have the Go name %s", c.Name, prev, f.Name, f.GoName)
		}
		seen[f.GoName] = f.Name
		bit := uint16(1) << (15 - i)
		mask |= bit
		pi, _ := primitive(f.Type)
		p.Fields = append(p.Fields, Prop{
			Field:   f,
			Flag:    "Flag" + f.GoName,
			FlagHex: fmt.Sprintf("0x%04x", bit),
			Encode:  []string{pi.Append("p." + f.GoName)},
			Decode:  []string{pi.Decode(f.Name, "p."+f.GoName)},
		})
	}
	p.Mask = fmt.Sprintf("0x%04x", mask)
	return p, nil
}

func parseIndex(what, s string) (int, error) {
	v, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("%s: index %q is not a number from 0 to 65535", what, s)
	}
	return int(v), nil
}

// xmlBool parses the XML's flag attributes: absent, "0" or "1".
func xmlBool(what, s string) (bool, error) {
	switch s {
	case "":
		return false, nil
	case "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("%s: %q is neither 0 nor 1", what, s)
}

// methodXML renders a method's definition back as XML, one element a line,
// for the generated doc comment. Attributes come in a fixed order.
func methodXML(xm xmlMethod) []string {
	open := "<method" + attrs("name", xm.Name, "synchronous", xm.Synchronous, "content", xm.Content, "index", xm.Index, "deprecated", xm.Deprecated)
	if len(xm.Fields) == 0 {
		return []string{open + "/>"}
	}
	lines := []string{open + ">"}
	for _, f := range xm.Fields {
		lines = append(lines, "    <field"+attrs("name", f.Name, "domain", f.Domain, "type", f.Type, "reserved", f.Reserved)+"/>")
	}
	return append(lines, "</method>")
}

func attrs(kv ...string) string {
	var sb strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		fmt.Fprintf(&sb, " %s=%q", kv[i], kv[i+1])
	}
	return sb.String()
}
