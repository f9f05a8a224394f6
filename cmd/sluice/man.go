package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/sluicemq/sluice/internal/buildinfo"
)

// newManCommand builds the hidden `sluice man --dir DIR --date YYYY-MM-DD`,
// which writes a man page for every command into DIR. gen/mangen runs it
// to make the checked-in man/ directory (make man, make generate); it is
// hidden because the pages ship in the release archives.
func newManCommand() *cobra.Command {
	var dir, date string
	cmd := &cobra.Command{
		Use:    "man",
		Short:  "Write the man pages (for gen/mangen)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := time.Parse(time.DateOnly, date)
			if err != nil {
				return fmt.Errorf("--date: %w", err)
			}
			return writeManPages(cmd.Root(), dir, d)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "man", "directory to write sluice*.1 into")
	cmd.Flags().StringVar(&date, "date", "", "date in the pages' header, YYYY-MM-DD (fixed, so that they do not change with the day)")
	_ = cmd.MarkFlagRequired("date")
	return cmd
}

// writeManPages writes a section 1 man page for root and each of its
// visible commands into dir: sluice.1, sluice-serve.1, sluice-admin-browse.1
// and so on. The header names the release (buildinfo.Release) and date, and
// nothing else that changes from one run to the next.
func writeManPages(root *cobra.Command, dir string, date time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	var noHistory func(*cobra.Command)
	noHistory = func(c *cobra.Command) {
		c.DisableAutoGenTag = true // no "Auto generated" section with today's date
		for _, sub := range c.Commands() {
			noHistory(sub)
		}
	}
	noHistory(root)
	header := &doc.GenManHeader{
		Section: "1",
		Date:    &date,
		Source:  "Sluice " + buildinfo.Release,
		Manual:  "Sluice Manual",
	}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("man pages in %s: %w", dir, err)
	}
	return nil
}
