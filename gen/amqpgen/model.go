package main

import (
	"fmt"
	"strconv"
	"strings"
)

// shape is how a primitive type's values are held and written.
type shape int

const (
	shapeScalar   shape = iota // fixed width; the zero value is a valid value
	shapeVariable              // string, symbol, binary: the zero value means absent
	shapeCompound              // list, map, array: nil means absent
)

// primInfo is what the generator knows about one primitive type of
// types.xml: its Go type and the runtime's reader and appender for it. A
// primitive in the XML that is not listed here is an error.
type primInfo struct {
	GoType   string
	Read     string // decoder method returning (GoType, error)
	Append   string // append function; returns []byte, or ([]byte, error) if Fallible
	Fallible bool
	Shape    shape
	Lit      func(string) (string, error) // Go literal of an XML default or choice value
}

func primitive(name string) (primInfo, bool) {
	uintLit := func(bits int) func(string) (string, error) {
		return func(s string) (string, error) {
			v, err := strconv.ParseUint(s, 0, bits)
			return strconv.FormatUint(v, 10), err
		}
	}
	intLit := func(bits int) func(string) (string, error) {
		return func(s string) (string, error) {
			v, err := strconv.ParseInt(s, 0, bits)
			return strconv.FormatInt(v, 10), err
		}
	}
	floatLit := func(bits int) func(string) (string, error) {
		return func(s string) (string, error) {
			v, err := strconv.ParseFloat(s, bits)
			return strconv.FormatFloat(v, 'g', -1, bits), err
		}
	}
	strLit := func(s string) (string, error) { return strconv.Quote(s), nil }
	noLit := func(s string) (string, error) { return "", fmt.Errorf("no literal form for %q", s) }
	scalar := func(goType, read, app string, lit func(string) (string, error)) primInfo {
		return primInfo{GoType: goType, Read: read, Append: app, Shape: shapeScalar, Lit: lit}
	}
	switch name {
	case "boolean":
		return scalar("bool", "readBool", "appendBool", func(s string) (string, error) {
			v, err := strconv.ParseBool(s)
			return strconv.FormatBool(v), err
		}), true
	case "ubyte":
		return scalar("uint8", "readUint8", "appendUint8", uintLit(8)), true
	case "ushort":
		return scalar("uint16", "readUint16", "appendUint16", uintLit(16)), true
	case "uint":
		return scalar("uint32", "readUint32", "appendUint32", uintLit(32)), true
	case "ulong":
		return scalar("uint64", "readUint64", "appendUint64", uintLit(64)), true
	case "byte":
		return scalar("int8", "readInt8", "appendInt8", intLit(8)), true
	case "short":
		return scalar("int16", "readInt16", "appendInt16", intLit(16)), true
	case "int":
		return scalar("int32", "readInt32", "appendInt32", intLit(32)), true
	case "long":
		return scalar("int64", "readInt64", "appendInt64", intLit(64)), true
	case "float":
		return scalar("float32", "readFloat32", "appendFloat32", floatLit(32)), true
	case "double":
		return scalar("float64", "readFloat64", "appendFloat64", floatLit(64)), true
	case "decimal32":
		return scalar("Decimal32", "readDecimal32", "appendDecimal32", noLit), true
	case "decimal64":
		return scalar("Decimal64", "readDecimal64", "appendDecimal64", noLit), true
	case "decimal128":
		return scalar("Decimal128", "readDecimal128", "appendDecimal128", noLit), true
	case "char":
		return scalar("Char", "readChar", "appendChar", noLit), true
	case "timestamp":
		return scalar("Timestamp", "readTimestamp", "appendTimestamp", intLit(64)), true
	case "uuid":
		return scalar("UUID", "readUUID", "appendUUID", noLit), true
	case "binary":
		return primInfo{GoType: "[]byte", Read: "readBinary", Append: "appendBinary", Fallible: true, Shape: shapeVariable, Lit: noLit}, true
	case "string":
		return primInfo{GoType: "string", Read: "readString", Append: "appendString", Fallible: true, Shape: shapeVariable, Lit: strLit}, true
	case "symbol":
		return primInfo{GoType: "Symbol", Read: "readSymbol", Append: "appendSymbol", Fallible: true, Shape: shapeVariable, Lit: strLit}, true
	case "list":
		return primInfo{GoType: "[]any", Read: "readList", Append: "appendList", Fallible: true, Shape: shapeCompound, Lit: noLit}, true
	case "map":
		return primInfo{GoType: "Map", Read: "readMap", Append: "appendMap", Fallible: true, Shape: shapeCompound, Lit: noLit}, true
	case "array":
		return primInfo{GoType: "Array", Read: "readArray", Append: "appendArray", Fallible: true, Shape: shapeCompound, Lit: noLit}, true
	case "null":
		// Valid in the type system, but not as a field or restricted type.
		return primInfo{}, true
	}
	return primInfo{}, false
}

// typeEntry is one <type> of the specification.
type typeEntry struct {
	X        *xmlType
	File     string
	Section  string
	GoName   string
	Base     string   // primitive a restricted type resolves to; "*" for amqp-value
	Provides []string // archetypes, in XML order
	Alias    string   // Go type this restricted type is an alias of, if any
}

func (t *typeEntry) described() bool { return t.X.Descriptor != nil }

// Model is what the template renders.
type Model struct {
	Files       []string
	Codes       []codeModel
	Definitions []defModel
	Interfaces  []ifaceModel
	NamedArch   []namedArchModel
	Restricted  []restrictedModel
	Described   []describedModel
}

type codeModel struct {
	GoName, Name, Type, Hex, Category string
	Width                             int
}

type defModel struct {
	GoName, Name, File, Value string
}

type ifaceModel struct {
	GoName, Archetype, Marker string
	Providers                 []string // Go names of the providing types
	ProviderXML               []string
	Codes                     []string // descriptor code constants, same order
}

type namedArchModel struct {
	GoName, Archetype, GoBase string
	Providers                 []string
}

type restrictedModel struct {
	GoName, Name, File, Decl string // Decl: "Map" for "type X = Map" or "uint32" for "type X uint32"
	IsAlias                  bool
	XML                      []string
	Choices                  []choiceModel
	Append                   string // body of AppendAMQP; "" for aliases
	Stringer                 bool   // numeric or boolean choices get a String method
	StringerBase             string // conversion for the fallback in String
}

type choiceModel struct {
	GoName, Name, Value string
}

type describedModel struct {
	GoName, Name, File, Section string
	XML                         []string
	DescName, DescCodeXML       string
	DescCode                    string // Go hex literal
	Composite                   bool
	Markers                     []string
	Fields                      []fieldModel
	NeedsErr                    bool // encoder uses err
	Defaults                    []string
	RestrictedDecl              string // restricted: the Go type declaration
	RestrictedEncode            string // restricted: the encoding statement
	RestrictedDecode            string // restricted: the decoding statement
	Archetypes                  []string
}

type fieldModel struct {
	GoName, Name, GoType, Doc string
	Encode, Decode            string
}

// buildModel checks the parsed specification and computes everything the
// template needs. Anything it does not understand is an error, never a
// guess.
func buildModel(docs []specDoc) (*Model, error) {
	m := &Model{}
	types := map[string]*typeEntry{}
	var order []*typeEntry
	goNames := map[string]string{} // Go identifier -> what it is, for collisions
	claim := func(id, what string) error {
		if prev, ok := goNames[id]; ok {
			return fmt.Errorf("Go name %s would be both %s and %s", id, prev, what)
		}
		goNames[id] = what
		return nil
	}

	for di := range docs {
		doc := &docs[di]
		m.Files = append(m.Files, doc.File)
		for si := range doc.Doc.Sections {
			sec := &doc.Doc.Sections[si]
			for ti := range sec.Types {
				x := &sec.Types[ti]
				if x.Name == "" {
					return nil, fmt.Errorf("%s: a <type> without a name", doc.File)
				}
				if _, dup := types[x.Name]; dup {
					return nil, fmt.Errorf("%s: type %q defined twice", doc.File, x.Name)
				}
				switch x.Class {
				case "primitive", "composite", "restricted":
				default:
					return nil, fmt.Errorf("%s: type %q has unknown class %q", doc.File, x.Name, x.Class)
				}
				t := &typeEntry{X: x, File: doc.File, Section: sec.Name, GoName: goName(x.Name)}
				for _, p := range strings.Split(x.Provides, ",") {
					if p = strings.TrimSpace(p); p != "" {
						t.Provides = append(t.Provides, p)
					}
				}
				types[x.Name] = t
				order = append(order, t)
			}
			for _, def := range sec.Definitions {
				g := "Spec" + goName(def.Name)
				if err := claim(g, "definition "+def.Name); err != nil {
					return nil, err
				}
				val := def.Value
				if _, err := strconv.ParseInt(val, 0, 64); err != nil {
					val = strconv.Quote(val)
				}
				m.Definitions = append(m.Definitions, defModel{GoName: g, Name: def.Name, File: doc.File, Value: val})
			}
		}
	}

	// Primitive types and their format codes.
	for _, t := range order {
		if t.X.Class != "primitive" {
			continue
		}
		if _, ok := primitive(t.X.Name); !ok {
			return nil, fmt.Errorf("%s: unknown primitive type %q (the runtime has no Go type for it)", t.File, t.X.Name)
		}
		if len(t.X.Encodings) == 0 {
			return nil, fmt.Errorf("%s: primitive type %q has no encoding", t.File, t.X.Name)
		}
		for _, e := range t.X.Encodings {
			name := t.X.Name
			if len(t.X.Encodings) > 1 && e.Name != "" {
				name = e.Name
			}
			code, err := strconv.ParseUint(e.Code, 0, 8)
			if err != nil {
				return nil, fmt.Errorf("%s: type %s encoding %q: code %q: %v", t.File, t.X.Name, e.Name, e.Code, err)
			}
			switch e.Category {
			case "fixed", "variable", "compound", "array":
			default:
				return nil, fmt.Errorf("%s: type %s encoding %q: unknown category %q", t.File, t.X.Name, e.Name, e.Category)
			}
			w, err := strconv.Atoi(e.Width)
			if err != nil || w < 0 || w > 16 {
				return nil, fmt.Errorf("%s: type %s encoding %q: bad width %q", t.File, t.X.Name, e.Name, e.Width)
			}
			if e.Category != "fixed" && w != 1 && w != 4 {
				return nil, fmt.Errorf("%s: type %s encoding %q: %s width %d is neither 1 nor 4", t.File, t.X.Name, e.Name, e.Category, w)
			}
			encName := e.Name
			if encName == "" {
				encName = t.X.Name
			}
			if len(t.X.Encodings) == 1 {
				encName = t.X.Name
			}
			g := "Code" + goName(name)
			if err := claim(g, "encoding "+encName); err != nil {
				return nil, err
			}
			m.Codes = append(m.Codes, codeModel{GoName: g, Name: encName, Type: t.X.Name, Hex: fmt.Sprintf("0x%02x", code), Category: e.Category, Width: w})
		}
	}
	seen := map[string]string{}
	for _, c := range m.Codes {
		if prev, ok := seen[c.Hex]; ok {
			return nil, fmt.Errorf("format code %s used by both %s and %s", c.Hex, prev, c.Name)
		}
		seen[c.Hex] = c.Name
	}

	// Resolve restricted types to their primitive.
	var resolve func(name string, depth int) (string, error)
	resolve = func(name string, depth int) (string, error) {
		if depth > 16 {
			return "", fmt.Errorf("restricted type %q: source chain too long or cyclic", name)
		}
		if name == "*" {
			return "*", nil
		}
		t, ok := types[name]
		if !ok {
			return "", fmt.Errorf("unknown type %q", name)
		}
		switch t.X.Class {
		case "primitive":
			return name, nil
		case "restricted":
			return resolve(t.X.Source, depth+1)
		}
		return "", fmt.Errorf("type %q restricts composite %q", name, t.X.Name)
	}
	for _, t := range order {
		switch t.X.Class {
		case "restricted":
			if t.X.Source == "" {
				return nil, fmt.Errorf("%s: restricted type %q has no source", t.File, t.X.Name)
			}
			base, err := resolve(t.X.Source, 0)
			if err != nil {
				return nil, fmt.Errorf("%s: restricted type %q: %w", t.File, t.X.Name, err)
			}
			if base == "*" && !t.described() {
				return nil, fmt.Errorf("%s: restricted type %q of source * needs a descriptor", t.File, t.X.Name)
			}
			if base == "null" {
				return nil, fmt.Errorf("%s: restricted type %q of null is not supported", t.File, t.X.Name)
			}
			t.Base = base
		case "composite":
			if t.X.Source != "list" {
				return nil, fmt.Errorf("%s: composite %q has source %q; only list is supported", t.File, t.X.Name, t.X.Source)
			}
			if t.X.Descriptor == nil {
				return nil, fmt.Errorf("%s: composite %q has no descriptor", t.File, t.X.Name)
			}
		}
		if t.X.Class != "primitive" {
			if err := claim(t.GoName, "type "+t.X.Name); err != nil {
				return nil, err
			}
		}
	}

	// Archetypes: which types provide what.
	providers := map[string][]*typeEntry{}
	var archOrder []string
	for _, t := range order {
		for _, a := range t.Provides {
			if _, ok := providers[a]; !ok {
				archOrder = append(archOrder, a)
			}
			providers[a] = append(providers[a], t)
		}
	}

	// Archetypes required by typed fields (such as error-condition for
	// the condition of error) become a named Go type, and the restricted
	// types providing them aliases of it, so that their constants can be
	// assigned to the field.
	namedArch := map[string]string{} // archetype -> Go type
	for _, t := range order {
		for _, f := range t.X.Fields {
			if f.Type == "*" || f.Requires == "" {
				continue
			}
			a := f.Requires
			if _, done := namedArch[a]; done {
				continue
			}
			ps := providers[a]
			if len(ps) == 0 {
				continue
			}
			fieldBase, err := resolve(f.Type, 0)
			if err != nil {
				return nil, fmt.Errorf("%s: type %s field %s: %w", t.File, t.X.Name, f.Name, err)
			}
			self := false
			for _, p := range ps {
				if p.X.Class != "restricted" || p.described() || p.Base != fieldBase {
					return nil, fmt.Errorf("%s: type %s field %s requires %q, provided by %s which is not a restricted %s", t.File, t.X.Name, f.Name, a, p.X.Name, fieldBase)
				}
				if p.X.Name == a {
					self = true
				}
			}
			if self {
				namedArch[a] = types[a].GoName
				for _, p := range ps {
					if p.X.Name != a {
						p.Alias = types[a].GoName
					}
				}
				continue
			}
			if _, clash := types[a]; clash {
				return nil, fmt.Errorf("archetype %q is also the name of a type that does not provide it", a)
			}
			g := goName(a)
			if err := claim(g, "archetype "+a); err != nil {
				return nil, err
			}
			pi, _ := primitive(fieldBase)
			na := namedArchModel{GoName: g, Archetype: a, GoBase: pi.GoType}
			for _, p := range ps {
				p.Alias = g
				na.Providers = append(na.Providers, p.GoName)
			}
			namedArch[a] = g
			m.NamedArch = append(m.NamedArch, na)
		}
	}

	// Archetypes with two or more described providers become interfaces.
	ifaces := map[string]string{} // archetype -> interface name
	for _, a := range archOrder {
		var described []*typeEntry
		for _, p := range providers[a] {
			if p.described() {
				described = append(described, p)
			}
		}
		if len(described) == 0 {
			continue
		}
		if len(described) != len(providers[a]) {
			return nil, fmt.Errorf("archetype %q is provided by both described and undescribed types", a)
		}
		if len(described) < 2 {
			continue
		}
		g := goName(a)
		switch a {
		case "frame":
			g = "Performative" // the spec's name for the bodies of AMQP frames
		}
		if _, clash := types[a]; clash {
			g += "Archetype"
		}
		if err := claim(g, "archetype "+a); err != nil {
			return nil, err
		}
		im := ifaceModel{GoName: g, Archetype: a, Marker: "is" + g}
		for _, p := range described {
			im.Providers = append(im.Providers, p.GoName)
			im.ProviderXML = append(im.ProviderXML, p.X.Name)
			im.Codes = append(im.Codes, p.GoName+"DescriptorCode")
		}
		ifaces[a] = g
		m.Interfaces = append(m.Interfaces, im)
	}

	// Restricted types that are not described.
	goTypeOf := func(name string) (string, error) {
		t, ok := types[name]
		if !ok {
			return "", fmt.Errorf("unknown type %q", name)
		}
		if t.X.Class == "primitive" {
			pi, _ := primitive(name)
			if pi.GoType == "" {
				return "", fmt.Errorf("type %q cannot be used here", name)
			}
			return pi.GoType, nil
		}
		return t.GoName, nil
	}
	for _, t := range order {
		if t.X.Class != "restricted" || t.described() {
			continue
		}
		pi, _ := primitive(t.Base)
		rm := restrictedModel{GoName: t.GoName, Name: t.X.Name, File: t.File, XML: xmlDefinitionLines(t.X)}
		switch {
		case t.Alias != "":
			rm.IsAlias, rm.Decl = true, t.Alias
		case pi.Shape == shapeCompound:
			src, err := goTypeOf(t.X.Source)
			if err != nil {
				return nil, fmt.Errorf("%s: restricted type %q: %w", t.File, t.X.Name, err)
			}
			rm.IsAlias, rm.Decl = true, src
		default:
			src, err := goTypeOf(t.X.Source)
			if err != nil {
				return nil, fmt.Errorf("%s: restricted type %q: %w", t.File, t.X.Name, err)
			}
			rm.Decl = src
			if pi.Fallible {
				rm.Append = fmt.Sprintf("return %s(b, %s(v))", pi.Append, pi.GoType)
			} else {
				rm.Append = fmt.Sprintf("return %s(b, %s(v)), nil", pi.Append, pi.GoType)
			}
		}
		for _, c := range t.X.Choices {
			lit, err := pi.Lit(c.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: restricted type %q choice %q: value %q: %v", t.File, t.X.Name, c.Name, c.Value, err)
			}
			g := t.GoName + goName(c.Name)
			if err := claim(g, "choice "+c.Name+" of "+t.X.Name); err != nil {
				return nil, err
			}
			rm.Choices = append(rm.Choices, choiceModel{GoName: g, Name: c.Name, Value: lit})
		}
		if len(rm.Choices) > 0 && pi.Shape == shapeScalar && !rm.IsAlias {
			rm.Stringer = true
			rm.StringerBase = pi.GoType
		}
		m.Restricted = append(m.Restricted, rm)
	}

	// Described types: composites and described restricted types.
	for _, t := range order {
		if !t.described() {
			continue
		}
		dm := describedModel{GoName: t.GoName, Name: t.X.Name, File: t.File, Section: t.Section, XML: xmlDefinitionLines(t.X), Composite: t.X.Class == "composite"}
		dm.DescName = t.X.Descriptor.Name
		dm.DescCodeXML = t.X.Descriptor.Code
		code, err := parseDescriptorCode(t.X.Descriptor.Code)
		if err != nil {
			return nil, fmt.Errorf("%s: type %q: %w", t.File, t.X.Name, err)
		}
		if t.X.Descriptor.Name == "" {
			return nil, fmt.Errorf("%s: type %q: descriptor without a name", t.File, t.X.Name)
		}
		dm.DescCode = fmt.Sprintf("0x%016x", code)
		for _, a := range t.Provides {
			if g, ok := ifaces[a]; ok {
				dm.Markers = append(dm.Markers, "is"+g)
				dm.Archetypes = append(dm.Archetypes, g)
			}
		}
		if err := claim(t.GoName+"DescriptorCode", "descriptor of "+t.X.Name); err != nil {
			return nil, err
		}
		if err := claim(t.GoName+"DescriptorName", "descriptor of "+t.X.Name); err != nil {
			return nil, err
		}
		if dm.Composite {
			for i := range t.X.Fields {
				fm, err := buildField(t, i, types, providers, ifaces, namedArch, resolve)
				if err != nil {
					return nil, fmt.Errorf("%s: type %s field %s: %w", t.File, t.X.Name, t.X.Fields[i].Name, err)
				}
				if strings.Contains(fm.Encode, "err = ") {
					dm.NeedsErr = true
				}
				if fm.defaultInit != "" {
					dm.Defaults = append(dm.Defaults, fm.defaultInit)
				}
				dm.Fields = append(dm.Fields, fm.fieldModel)
			}
		} else {
			if len(t.X.Fields) > 0 {
				return nil, fmt.Errorf("%s: restricted type %q has fields", t.File, t.X.Name)
			}
			if err := restrictedDescribed(t, &dm, goTypeOf); err != nil {
				return nil, fmt.Errorf("%s: restricted type %q: %w", t.File, t.X.Name, err)
			}
		}
		m.Described = append(m.Described, dm)
	}
	return m, nil
}

// parseDescriptorCode parses a descriptor code "0xDOMAIN:0xID".
func parseDescriptorCode(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, ":")
	if !ok {
		return 0, fmt.Errorf("descriptor code %q is not domain:id", s)
	}
	h, err := strconv.ParseUint(hi, 0, 32)
	if err != nil {
		return 0, fmt.Errorf("descriptor code %q: %v", s, err)
	}
	l, err := strconv.ParseUint(lo, 0, 32)
	if err != nil {
		return 0, fmt.Errorf("descriptor code %q: %v", s, err)
	}
	return h<<32 | l, nil
}

// restrictedDescribed fills in a described restricted type (a message
// section such as application-properties or data).
func restrictedDescribed(t *typeEntry, dm *describedModel, goTypeOf func(string) (string, error)) error {
	name := strconv.Quote(t.X.Name)
	if t.Base == "*" {
		dm.RestrictedDecl = "struct {\n\t// Value is the section's value, in the generic representation.\n\tValue any\n}"
		dm.RestrictedEncode = "return appendAny(b, x.Value)"
		dm.RestrictedDecode = fmt.Sprintf("v, err := d.readAny()\nif err != nil {\nreturn &DecodeError{Type: %s, Offset: at, Err: err}\n}\nx.Value = v\nreturn nil", name)
		return nil
	}
	pi, _ := primitive(t.Base)
	if pi.Shape == shapeScalar {
		return fmt.Errorf("described restricted type of scalar %s is not supported", t.Base)
	}
	src, err := goTypeOf(t.X.Source)
	if err != nil {
		return err
	}
	dm.RestrictedDecl = src
	dm.RestrictedEncode = fmt.Sprintf("return %s(b, %s(x))", pi.Append, pi.GoType)
	dm.RestrictedDecode = fmt.Sprintf("v, err := d.%s()\nif err != nil {\nreturn &DecodeError{Type: %s, Offset: at, Err: err}\n}\n*x = %s(v)\nreturn nil", pi.Read, name, t.GoName)
	return nil
}

type builtField struct {
	fieldModel
	defaultInit string
}

// buildField computes the Go type and the encoding and decoding code of
// field i of composite t.
func buildField(t *typeEntry, i int, types map[string]*typeEntry, providers map[string][]*typeEntry,
	ifaces map[string]string, namedArch map[string]string, resolve func(string, int) (string, error)) (builtField, error) {
	f := t.X.Fields[i]
	var bf builtField
	bf.Name = f.Name
	bf.GoName = goName(f.Name)
	mandatory, err := xmlBool(f.Mandatory)
	if err != nil {
		return bf, fmt.Errorf("mandatory: %w", err)
	}
	multiple, err := xmlBool(f.Multiple)
	if err != nil {
		return bf, fmt.Errorf("multiple: %w", err)
	}
	owner := strconv.Quote(t.X.Name)
	fname := strconv.Quote(f.Name)
	field := "x." + bf.GoName
	decErr := fmt.Sprintf("return fieldDecodeErr(%s, %s, at, err)", owner, fname)
	encErr := fmt.Sprintf("return b, fieldEncodeErr(%s, %s, err)", owner, fname)
	missingDec := fmt.Sprintf("return fieldDecodeErr(%s, %s, at, ErrMissingField)", owner, fname)
	missingEnc := fmt.Sprintf("if %s == nil {\nreturn b, fieldEncodeErr(%s, %s, ErrMissingField)\n}\n", field, owner, fname)
	if f.Default != "" && (mandatory || multiple) {
		return bf, fmt.Errorf("a default on a mandatory or multiple field is not supported")
	}

	var (
		goType   string
		present  string // condition for encoding; "" means always
		appendSt string // statement(s) appending the value
		readSt   string // statement(s) reading into v, with error check
		assign   string // expression assigned from v
		absent   string // statement when absent
		kindDoc  string
	)
	fallible := func(call string) string {
		return fmt.Sprintf("if b, err = %s; err != nil {\n%s\n}", call, encErr)
	}

	switch {
	case f.Type == "*":
		if multiple {
			return bf, fmt.Errorf("multiple * fields are not supported")
		}
		ps := providers[f.Requires]
		var described []*typeEntry
		for _, p := range ps {
			if p.described() {
				described = append(described, p)
			}
		}
		switch {
		case f.Requires != "" && len(described) == 1:
			p := described[0]
			goType = "*" + p.GoName
			readSt = fmt.Sprintf("v := new(%s)\nif err := v.decode(d); err != nil {\n%s\n}", p.GoName, decErr)
			kindDoc = fmt.Sprintf("* requiring %s, which only %s provides", f.Requires, p.X.Name)
		case f.Requires != "" && len(described) > 1:
			g := ifaces[f.Requires]
			goType = g
			readSt = fmt.Sprintf("v, err := decode%s(d)\nif err != nil {\n%s\n}", g, decErr)
			kindDoc = fmt.Sprintf("* requiring %s: one of %s", f.Requires, providerList(described))
		default:
			goType = "any"
			readSt = fmt.Sprintf("v, err := d.readAny()\nif err != nil {\n%s\n}", decErr)
			if f.Requires != "" && len(ps) > 0 {
				kindDoc = fmt.Sprintf("* requiring %s (%s), as a generic value", f.Requires, providerList(ps))
			} else if f.Requires != "" {
				kindDoc = fmt.Sprintf("* requiring %s, which no type of the specification provides, as a generic value", f.Requires)
			} else {
				kindDoc = "*, as a generic value"
			}
		}
		assign = "v"
		if goType == "any" {
			appendSt = fallible("appendAny(b, " + field + ")")
		} else {
			appendSt = fallible(field + ".AppendAMQP(b)")
		}
		if mandatory {
			appendSt = missingEnc + appendSt
		} else {
			present = field + " != nil"
			absent = field + " = nil"
			kindDoc += "; nil when absent"
		}
		if f.Default != "" {
			return bf, fmt.Errorf("a default on a * field is not supported")
		}

	default:
		ft, ok := types[f.Type]
		if !ok {
			return bf, fmt.Errorf("unknown type %q", f.Type)
		}
		if ft.X.Class == "composite" || ft.described() {
			if multiple {
				return bf, fmt.Errorf("multiple described fields are not supported")
			}
			if f.Default != "" {
				return bf, fmt.Errorf("a default on a described field is not supported")
			}
			goType = "*" + ft.GoName
			readSt = fmt.Sprintf("v := new(%s)\nif err := v.decode(d); err != nil {\n%s\n}", ft.GoName, decErr)
			assign = "v"
			appendSt = fallible(field + ".AppendAMQP(b)")
			kindDoc = f.Type
			if mandatory {
				appendSt = missingEnc + appendSt
			} else {
				present = field + " != nil"
				absent = field + " = nil"
				kindDoc += "; nil when absent"
			}
			break
		}
		base, err := resolve(f.Type, 0)
		if err != nil {
			return bf, err
		}
		pi, _ := primitive(base)
		if pi.GoType == "" {
			return bf, fmt.Errorf("type %q cannot be a field", f.Type)
		}
		valType := pi.GoType
		if ft.X.Class == "restricted" {
			valType = ft.GoName
		}
		if g, ok := namedArch[f.Requires]; ok && f.Requires != "" {
			valType = g
		}
		kindDoc = f.Type
		if f.Requires != "" {
			kindDoc += " requiring " + f.Requires
		}
		if multiple {
			if base != "symbol" {
				return bf, fmt.Errorf("multiple fields of %s are not supported (only symbol)", base)
			}
			goType = "[]" + valType
			readSt = fmt.Sprintf("v, err := readSymbols[%s](d)\nif err != nil {\n%s\n}", valType, decErr)
			assign = "v"
			appendSt = fallible("appendSymbols(b, " + field + ")")
			kindDoc += ", multiple (decoded from a single value or an array, encoded as an array)"
			if !mandatory {
				present = field + " != nil"
				absent = field + " = nil"
				kindDoc += "; nil when absent"
			}
			break
		}
		readSt = fmt.Sprintf("v, err := d.%s()\nif err != nil {\n%s\n}", pi.Read, decErr)
		conv := func(expr string) string {
			if valType == pi.GoType {
				return expr
			}
			return pi.GoType + "(" + expr + ")"
		}
		app := func(expr string) string {
			call := fmt.Sprintf("%s(b, %s)", pi.Append, conv(expr))
			if pi.Fallible {
				return fallible(call)
			}
			return "b = " + call
		}
		assignConv := "v"
		if valType != pi.GoType {
			assignConv = valType + "(v)"
		}
		switch {
		case mandatory:
			goType = valType
			appendSt = app(field)
			assign = assignConv
		case f.Default != "":
			lit, err := defaultLiteral(f.Default, ft, pi)
			if err != nil {
				return bf, err
			}
			goType = valType
			assign = assignConv
			appendSt = app(field)
			switch {
			case base == "boolean" && lit == "false":
				present = field
			case base == "boolean" && lit == "true":
				present = "!" + field
			case pi.Shape == shapeVariable:
				present = fmt.Sprintf("%s != %s && %s != \"\"", field, lit, field)
			default:
				present = fmt.Sprintf("%s != %s", field, lit)
			}
			absent = fmt.Sprintf("%s = %s", field, lit)
			bf.defaultInit = fmt.Sprintf("%s: %s,", bf.GoName, lit)
			kindDoc += ", default " + f.Default + " (filled in when absent; encoded as absent when equal)"
			if pi.Shape == shapeVariable {
				kindDoc += `; "" also encodes as absent`
			}
		case pi.Shape == shapeScalar:
			goType = "Optional[" + valType + "]"
			assign = "Some(" + assignConv + ")"
			appendSt = app(field + ".Value")
			present = field + ".Present"
			absent = fmt.Sprintf("%s = Optional[%s]{}", field, valType)
			kindDoc += "; not Present when absent"
		case pi.Shape == shapeVariable && base == "binary":
			goType = valType
			assign = assignConv
			appendSt = app(field)
			present = field + " != nil"
			absent = field + " = nil"
			kindDoc += "; nil when absent"
		case pi.Shape == shapeVariable:
			goType = valType
			assign = assignConv
			appendSt = app(field)
			present = field + ` != ""`
			absent = field + ` = ""`
			kindDoc += `; "" when absent`
		default: // list, map, array
			goType = valType
			assign = assignConv
			appendSt = app(field)
			present = field + " != nil"
			absent = field + " = nil"
			kindDoc += "; nil when absent"
		}
	}

	if mandatory {
		kindDoc += ", mandatory (decoding fails without it)"
		absent = missingDec
	}
	bf.GoType = goType
	bf.Doc = fmt.Sprintf("%s is field %d, %s: %s.", bf.GoName, i, f.Name, kindDoc)
	var enc strings.Builder
	fmt.Fprintf(&enc, "// %s\n", f.Name)
	if present == "" {
		fmt.Fprintf(&enc, "%s\nl.present(b, %d)\n", appendSt, i)
	} else {
		fmt.Fprintf(&enc, "if %s {\n%s\nl.present(b, %d)\n} else {\nb = appendNull(b)\n}\n", present, appendSt, i)
	}
	bf.Encode = enc.String()
	bf.Decode = fmt.Sprintf("// %s\nat = d.off\nif l.next(d) {\n%s\n%s = %s\n} else {\n%s\n}\n", f.Name, readSt, field, assign, absent)
	return bf, nil
}

func providerList(ps []*typeEntry) string {
	var names []string
	for _, p := range ps {
		names = append(names, p.X.Name)
	}
	return strings.Join(names, ", ")
}

// defaultLiteral turns a field's XML default into a Go expression: the
// constant of a choice of the field's restricted type, or a literal.
func defaultLiteral(def string, ft *typeEntry, pi primInfo) (string, error) {
	if ft.X.Class == "restricted" {
		for _, c := range ft.X.Choices {
			if c.Name == def {
				return ft.GoName + goName(c.Name), nil
			}
		}
	}
	lit, err := pi.Lit(def)
	if err != nil {
		return "", fmt.Errorf("default %q: %v", def, err)
	}
	return lit, nil
}

func xmlBool(s string) (bool, error) {
	switch s {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fmt.Errorf("%q is not true or false", s)
}
