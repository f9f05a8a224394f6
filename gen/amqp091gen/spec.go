package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// The XML schema of the AMQP 0-9-1 definition. Elements the generator does
// not use (chassis, response, assert, doc) are ignored by encoding/xml; the
// attributes it uses are checked by buildModel.

type xmlAMQP struct {
	XMLName   xml.Name      `xml:"amqp"`
	Major     string        `xml:"major,attr"`
	Minor     string        `xml:"minor,attr"`
	Revision  string        `xml:"revision,attr"`
	Port      string        `xml:"port,attr"`
	Constants []xmlConstant `xml:"constant"`
	Domains   []xmlDomain   `xml:"domain"`
	Classes   []xmlClass    `xml:"class"`
}

type xmlConstant struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
	Class string `xml:"class,attr"`
}

type xmlDomain struct {
	Name string `xml:"name,attr"`
	Type string `xml:"type,attr"`
}

type xmlClass struct {
	Name    string      `xml:"name,attr"`
	Handler string      `xml:"handler,attr"`
	Index   string      `xml:"index,attr"`
	Fields  []xmlField  `xml:"field"`
	Methods []xmlMethod `xml:"method"`
}

type xmlMethod struct {
	Name        string     `xml:"name,attr"`
	Synchronous string     `xml:"synchronous,attr"`
	Content     string     `xml:"content,attr"`
	Index       string     `xml:"index,attr"`
	Deprecated  string     `xml:"deprecated,attr"`
	Fields      []xmlField `xml:"field"`
}

type xmlField struct {
	Name     string `xml:"name,attr"`
	Domain   string `xml:"domain,attr"`
	Type     string `xml:"type,attr"`
	Reserved string `xml:"reserved,attr"`
}

// loadSpec reads and parses the XML definition at path.
func loadSpec(path string) (*xmlAMQP, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("AMQP 0-9-1 specification %s does not exist: install the Debian package amqp-specs (apt-get install amqp-specs) or pass -spec FILE", path)
		}
		return nil, fmt.Errorf("AMQP 0-9-1 specification: %w", err)
	}
	var doc xmlAMQP
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &doc, nil
}
