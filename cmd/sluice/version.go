package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/internal/buildinfo"
)

// newVersionCommand builds `sluice version`, which prints what `sluice
// --version` prints: the version, commit, build date and Go toolchain.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Long: `Print Sluice's version, the commit it was built from, the build date and
the Go toolchain; the same as sluice --version.

Release archives and container images have them set at build time. A
binary built with go build, go install or go run reports what the Go
toolchain recorded instead: a tagged module version if there is one, the
commit and its time when built in a git clone, and otherwise the release
it leads up to, with -dev.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), buildinfo.Get())
			return err
		},
	}
}
