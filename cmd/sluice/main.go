// Command sluice is the Sluice message broker and its tools, one binary with
// subcommands: serve, admin, bench, conformance, schedule, selector, version.
//
// This file only assembles the commands; each subcommand lives in a file of
// its own and the work happens in the packages they call.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/internal/buildinfo"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(1)
	}
}

// newRootCommand builds the command tree.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "sluice",
		Short:         "Sluice: a JMS message broker for STOMP and AMQP 1.0 clients",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints what `sluice version` does.
		Version: buildinfo.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}")
	root.InitDefaultVersionFlag() // now, so that the man pages list it
	root.Flags().Lookup("version").Usage = "print the version, commit and build date"
	// Subcommands register here, one line each.
	root.AddCommand(newServeCommand())
	root.AddCommand(newScheduleCommand())
	root.AddCommand(newSelectorCommand())
	root.AddCommand(newConformanceCommand())
	root.AddCommand(newAdminCommand())
	root.AddCommand(newBenchCommand())
	root.AddCommand(newVersionCommand())
	root.AddCommand(newManCommand())
	return root
}
