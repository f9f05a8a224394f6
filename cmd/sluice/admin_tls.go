package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/internal/tlsconf"
)

// admGenCertCmd builds `sluice admin gen-cert`: a self-signed certificate
// for the TLS listeners. It needs no running broker.
func admGenCertCmd() *cobra.Command {
	var (
		hosts, out string
		days       int
		force      bool
	)
	cmd := &cobra.Command{
		Use:   "gen-cert",
		Short: "Write a self-signed server certificate and key (server.crt, server.key) for the TLS listeners",
		Long: `Write a self-signed server certificate and its private key, for tests and
development: server.crt and server.key (mode 0600) in --out. The key is
ECDSA P-256; the certificate's subject alternative names are the --host
names and IP addresses (the first is also its common name). Clients trust
it by using server.crt as their CA file. Existing files are not replaced
without --force.

In the configuration:

  [tls]
  cert_file = "tls/server.crt"   # relative to the configuration file
  key_file = "tls/server.key"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return genCert(cmd.OutOrStdout(), strings.Split(hosts, ","), out, days, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&hosts, "host", "localhost,127.0.0.1", "comma-separated DNS names and IP addresses the certificate is for")
	f.StringVar(&out, "out", ".", "directory to write server.crt and server.key to (created if missing)")
	f.IntVar(&days, "days", 365, "days the certificate is valid for")
	f.BoolVar(&force, "force", false, "replace existing files")
	return cmd
}

// genCert writes dir/server.crt and dir/server.key.
func genCert(w io.Writer, hosts []string, dir string, days int, force bool) error {
	if days <= 0 {
		return fmt.Errorf("--days %d: want 1 or more", days)
	}
	for i := range hosts {
		hosts[i] = strings.TrimSpace(hosts[i])
	}
	certFile, keyFile := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if !force {
		for _, f := range []string{certFile, keyFile} {
			if _, err := os.Lstat(f); err == nil {
				return fmt.Errorf("%s exists: use --force to replace it", f)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	certPEM, keyPEM, err := tlsconf.SelfSigned(hosts, time.Duration(days)*24*time.Hour)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// A broker watching the files may see one replaced before the other:
	// that reload fails, is logged, and the next look loads both.
	if err := writeReplacing(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	if err := writeReplacing(certFile, certPEM, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s and %s: a self-signed certificate for %s, valid for %d days\n",
		certFile, keyFile, strings.Join(hosts, ", "), days)
	return nil
}

// writeReplacing writes data to file with mode perm through a temporary
// file in the same directory and a rename, so that a reader never sees
// it half written and the key is never readable by others.
func writeReplacing(file string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// adminTransport is an HTTP transport that trusts the CA certificates in
// caFile (for an admin listener with admin_tls and a self-signed or
// private certificate) beside the system's.
func adminTransport(caFile string) (*http.Transport, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", caFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr, nil
}
