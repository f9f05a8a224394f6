package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// specFiles are the parts of the AMQP 1.0 specification, in the order the
// generated code follows. Each is read from NAME.xml or, as the Debian
// package amqp-specs installs them, NAME.bare.xml.
func specFiles() []string {
	return []string{"types", "transport", "messaging", "security", "transactions"}
}

// The XML schema of the OASIS specification files. Elements and attributes
// the generator does not use (doc, label texts, ...) are ignored by
// encoding/xml; the ones it uses are checked by buildModel.

type xmlAMQP struct {
	XMLName  xml.Name     `xml:"amqp"`
	Name     string       `xml:"name,attr"`
	Sections []xmlSection `xml:"section"`
}

type xmlSection struct {
	Name        string          `xml:"name,attr"`
	Types       []xmlType       `xml:"type"`
	Definitions []xmlDefinition `xml:"definition"`
}

type xmlType struct {
	Name       string         `xml:"name,attr"`
	Class      string         `xml:"class,attr"`
	Source     string         `xml:"source,attr"`
	Provides   string         `xml:"provides,attr"`
	Label      string         `xml:"label,attr"`
	Encodings  []xmlEncoding  `xml:"encoding"`
	Descriptor *xmlDescriptor `xml:"descriptor"`
	Fields     []xmlField     `xml:"field"`
	Choices    []xmlChoice    `xml:"choice"`
}

type xmlEncoding struct {
	Name     string `xml:"name,attr"`
	Code     string `xml:"code,attr"`
	Category string `xml:"category,attr"`
	Width    string `xml:"width,attr"`
	Label    string `xml:"label,attr"`
}

type xmlDescriptor struct {
	Name string `xml:"name,attr"`
	Code string `xml:"code,attr"`
}

type xmlField struct {
	Name      string `xml:"name,attr"`
	Type      string `xml:"type,attr"`
	Requires  string `xml:"requires,attr"`
	Default   string `xml:"default,attr"`
	Mandatory string `xml:"mandatory,attr"`
	Multiple  string `xml:"multiple,attr"`
	Label     string `xml:"label,attr"`
}

type xmlChoice struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type xmlDefinition struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
	Label string `xml:"label,attr"`
}

// specDoc is one parsed specification file.
type specDoc struct {
	File string // base name, such as "transport.bare.xml"
	Doc  xmlAMQP
}

// loadSpec reads the five specification files from dir.
func loadSpec(dir string) ([]specDoc, error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("AMQP 1.0 specification directory %s does not exist: install the Debian package amqp-specs (apt-get install amqp-specs) or pass -specs DIR with types.xml, transport.xml, messaging.xml, security.xml and transactions.xml (or their .bare.xml variants)", dir)
		}
		return nil, fmt.Errorf("AMQP 1.0 specification directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("AMQP 1.0 specification directory %s is not a directory", dir)
	}
	var docs []specDoc
	for _, name := range specFiles() {
		var path string
		for _, cand := range []string{name + ".xml", name + ".bare.xml"} {
			if _, err := os.Stat(filepath.Join(dir, cand)); err == nil {
				path = filepath.Join(dir, cand)
				break
			}
		}
		if path == "" {
			return nil, fmt.Errorf("%s: neither %s.xml nor %s.bare.xml is there (the Debian package amqp-specs installs them)", dir, name, name)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var doc xmlAMQP
		if err := xml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if doc.Name != name {
			return nil, fmt.Errorf("%s: <amqp name=%q>, want %q", path, doc.Name, name)
		}
		docs = append(docs, specDoc{File: filepath.Base(path), Doc: doc})
	}
	return docs, nil
}

// xmlDefinitionLines renders a type's definition back as XML, one element
// a line, for the generated doc comments. Attributes come in a fixed order.
func xmlDefinitionLines(t *xmlType) []string {
	var lines []string
	open := "<type" + attrs("name", t.Name, "class", t.Class, "source", t.Source, "provides", t.Provides, "label", t.Label)
	if t.Descriptor == nil && len(t.Fields) == 0 && len(t.Choices) == 0 && len(t.Encodings) == 0 {
		return []string{open + "/>"}
	}
	lines = append(lines, open+">")
	for _, e := range t.Encodings {
		lines = append(lines, "    <encoding"+attrs("name", e.Name, "code", e.Code, "category", e.Category, "width", e.Width, "label", e.Label)+"/>")
	}
	if t.Descriptor != nil {
		lines = append(lines, "    <descriptor"+attrs("name", t.Descriptor.Name, "code", t.Descriptor.Code)+"/>")
	}
	for _, f := range t.Fields {
		lines = append(lines, "    <field"+attrs("name", f.Name, "type", f.Type, "requires", f.Requires, "default", f.Default, "mandatory", f.Mandatory, "multiple", f.Multiple, "label", f.Label)+"/>")
	}
	for _, c := range t.Choices {
		lines = append(lines, "    <choice"+attrs("name", c.Name, "value", c.Value)+"/>")
	}
	return append(lines, "</type>")
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
