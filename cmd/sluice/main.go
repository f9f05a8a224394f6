// Command sluice is the Sluice message broker and its tools, one binary with
// subcommands: serve, admin, bench, conformance, schedule, selector, version.
//
// This file only assembles the commands; each subcommand lives in a file of
// its own and the work happens in the packages they call.
//
// Exit status: 0 on success, 2 for an unknown command (the message names it
// and the valid ones), 1 for every other error.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/internal/buildinfo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the process's exit status.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "sluice:", err)
	return exitStatus(err)
}

// exitStatus is the exit status for an error of a command: 2 for an unknown
// command, 1 otherwise.
func exitStatus(err error) int {
	var unknown *unknownCommandError
	if errors.As(err, &unknown) {
		return 2
	}
	return 1
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
	rejectUnknownSubcommands(root)
	return root
}

// unknownCommandError is a command line naming a subcommand that does not
// exist.
type unknownCommandError struct {
	name   string   // what was typed
	parent string   // the command path it was typed after, "sluice admin"
	valid  []string // the parent's subcommands
}

func (e *unknownCommandError) Error() string {
	return fmt.Sprintf("unknown command %q for %q; valid commands: %s",
		e.name, e.parent, strings.Join(e.valid, ", "))
}

// rejectUnknownSubcommands makes every command group of the tree under cmd
// (a command with subcommands and nothing to run of its own) fail with an
// *unknownCommandError when given a word that is none of its subcommands;
// without arguments a group prints its help, as before. Cobra alone only
// checks the root, and prints help with status 0 for `sluice admin
// frobnicate`. The recursion is bounded by the depth of the tree.
func rejectUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		rejectUnknownSubcommands(sub)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		var valid []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				valid = append(valid, sub.Name())
			}
		}
		return &unknownCommandError{name: args[0], parent: c.CommandPath(), valid: valid}
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		return c.Help()
	}
}
