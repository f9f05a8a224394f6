// Command amqp091gen generates Sluice's AMQP 0-9-1 codec from the
// protocol's XML definition.
//
// It reads amqp0-9-1.stripped.extended.xml, RabbitMQ's edition of the 0-9-1
// XML (the official file plus confirm, exchange.bind/unbind, basic.nack),
// which the Debian package amqp-specs installs under
// /usr/share/amqp/specs/0-9-1-rabbit, and writes one Go file with: the
// constants (frame types, sizes, reply codes) and IsHardError; the class
// ids; one struct per method with its encoder (Append) and decoder (Decode),
// consecutive bit fields packed into octets as the specification says; the
// class/method dispatch (NewMethod); and the content properties of the
// basic class with their presence flags.
//
// The few things RabbitMQ's protocol has and that file lacks (the no-route
// reply code, connection.blocked and connection.unblocked,
// connection.update-secret and update-secret-ok) come from a table in this
// generator (extras.go); an extra the XML already has is taken from the XML,
// after checking that both agree.
//
// Anything in the XML the generator does not know — a domain, a type, an
// attribute value, a duplicate index, a Go name that two names map to — is
// an error: nothing is guessed or defaulted. The primitive readers and
// appenders the generated code calls are hand-written in the target package
// (github.com/sluicemq/sluice/protocol/amqp091/spec).
//
// Usage (normally through go generate in protocol/amqp091/spec):
//
//	go run ./gen/amqp091gen -spec /usr/share/amqp/specs/0-9-1-rabbit/amqp0-9-1.stripped.extended.xml -out protocol/amqp091/spec/zz_generated.go
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// defaultSpec is where the Debian package amqp-specs installs RabbitMQ's
// edition of the AMQP 0-9-1 XML.
const defaultSpec = "/usr/share/amqp/specs/0-9-1-rabbit/amqp0-9-1.stripped.extended.xml"

func main() {
	spec := flag.String("spec", defaultSpec, "the AMQP 0-9-1 XML definition (amqp0-9-1.stripped.extended.xml)")
	out := flag.String("out", "zz_generated.go", "file to write")
	pkg := flag.String("pkg", "", "package name of the generated file (default: $GOPACKAGE, else the output directory's name)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "amqp091gen: unexpected arguments:", flag.Args())
		os.Exit(2)
	}
	if err := run(*spec, *out, *pkg); err != nil {
		fmt.Fprintln(os.Stderr, "amqp091gen:", err)
		os.Exit(1)
	}
}

// run generates the code from the specification file spec into out.
func run(spec, out, pkg string) error {
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
	src, err := generate(spec, pkg)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// generate returns the generated source for the specification file spec.
func generate(spec, pkg string) ([]byte, error) {
	doc, err := loadSpec(spec)
	if err != nil {
		return nil, err
	}
	m, err := buildModel(doc, filepath.Base(spec))
	if err != nil {
		return nil, err
	}
	return render(m, pkg)
}
