// Command amqpgen generates Sluice's AMQP 1.0 codec from the OASIS AMQP
// 1.0 XML specification.
//
// It reads types.xml, transport.xml, messaging.xml, security.xml and
// transactions.xml (or the NAME.bare.xml files that the Debian package
// amqp-specs installs under /usr/share/amqp/specs/1-0) and writes one Go
// file with: the format codes of the primitive encodings; the
// specification's definitions; a Go type for every restricted type, with
// constants for its choices; a struct for every composite type, with the
// XML definition in its doc comment, an encoder, a decoder that checks
// mandatory fields and fills in defaults, and a constructor that sets the
// defaults; the described restricted types (message sections); and an
// interface with a decoding dispatcher for every archetype (such as
// delivery-state) that several described types provide.
//
// Anything in the XML that the generator does not know — a type name, a
// class, a category, a default it cannot parse — is an error: nothing is
// guessed. The primitive encoders and decoders that the generated code
// calls are hand-written in the target package
// (github.com/sluicemq/sluice/protocol/amqp/types).
//
// Usage (normally through go generate in protocol/amqp/types):
//
//	go run ./gen/amqpgen -specs /usr/share/amqp/specs/1-0 -out protocol/amqp/types/zz_generated.go
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// defaultSpecDir is where the Debian package amqp-specs installs the AMQP
// 1.0 XML.
const defaultSpecDir = "/usr/share/amqp/specs/1-0"

func main() {
	specs := flag.String("specs", defaultSpecDir, "directory holding the AMQP 1.0 XML specification (types.xml or types.bare.xml, ...)")
	out := flag.String("out", "zz_generated.go", "file to write")
	pkg := flag.String("pkg", "", "package name of the generated file (default: $GOPACKAGE, else the output directory's name)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "amqpgen: unexpected arguments:", flag.Args())
		os.Exit(2)
	}
	if err := run(*specs, *out, *pkg); err != nil {
		fmt.Fprintln(os.Stderr, "amqpgen:", err)
		os.Exit(1)
	}
}

// run generates the code from the specification in specDir into out.
func run(specDir, out, pkg string) error {
	if pkg == "" {
		pkg = os.Getenv("GOPACKAGE")
	}
	if pkg == "" {
		abs, err := filepath.Abs(out)
		if err != nil {
			return err
		}
		pkg = filepath.Base(filepath.Dir(abs))
	}
	src, err := generate(specDir, pkg)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// generate returns the generated source for the specification in specDir.
func generate(specDir, pkg string) ([]byte, error) {
	docs, err := loadSpec(specDir)
	if err != nil {
		return nil, err
	}
	m, err := buildModel(docs)
	if err != nil {
		return nil, err
	}
	return render(m, pkg)
}
