package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/conformance"
)

// newConformanceCommand builds `sluice conformance`: the JMS conformance
// suite run against any broker over STOMP, AMQP 1.0 and AMQP 0-9-1.
func newConformanceCommand() *cobra.Command {
	var (
		stompAddr, amqpAddr, amqp091Addr, only, profile         string
		htmlFile, jsonFile, mdFile                              string
		adminAddr, adminToken, adminUser, adminPass, restartCmd string
		login, passcode, note                                   string
		parallel                                                int
		timeout, quiet, restartTimeout                          time.Duration
		list, showConfig, verbose                               bool
	)
	cmd := &cobra.Command{
		Use:   "conformance --stomp HOST:PORT --amqp HOST:PORT --amqp091 HOST:PORT [--only PATTERN] [--profile sluice|activemq] [--report out.html] [--json out.json]",
		Short: "Run the JMS conformance suite against a broker over STOMP, AMQP 1.0 and AMQP 0-9-1",
		Long: `Run the JMS conformance suite (package conformance) against a running broker.

Every scenario runs over each protocol given (--stomp, --amqp, --amqp091),
and the cross-protocol scenarios over each ordered pair; the AMQP 0-9-1
client is amqp091-go (Sluice serves 0-9-1 on its AMQP port, so --amqp091
may be the --amqp address); the result is a scenario × protocol
matrix of pass, FAIL, not supported (the broker lacks what the scenario needs,
per the profile), not expressible (the protocol cannot say it, with the
reason) and n/a (the protocol's listener is not available). The command exits
non-zero when any cell fails; a listener that does not answer is reported,
not failed.

The profile describes the broker under test: "sluice" expects a Sluice
started with conformance/profiles/sluice.toml (print it with --show-config);
"activemq" is ActiveMQ Classic 5.17 with its stock configuration.

Destination deletion needs --admin (Sluice's admin HTTP API).

Scenarios that restart the broker (restart/*) run only with --restart-cmd,
a shell command that restarts the broker, keeping its data and its listener
addresses. The runner runs it with sh -c, in the current directory, once per
restart cell (the restart cells run last, one at a time), with the
environment of this command plus:

  SLUICE_CONFORMANCE_STOMP   the --stomp address (empty if not given)
  SLUICE_CONFORMANCE_AMQP    the --amqp address (empty if not given)
  SLUICE_CONFORMANCE_AMQP091 the --amqp091 address (empty if not given)
  SLUICE_CONFORMANCE_ADMIN   the --admin address (empty if not given)

Standard input is /dev/null; standard output and error go to a temporary
file that is quoted when the restart fails and then removed. The command
must stop the running broker and start a new one, and it must exit: start
the new broker in the background (with &) and redirect its output to a log
file of its own. The runner waits only for the command's own process, not
for what it leaves running. A restart then waits until the old broker has
closed the connections opened before the command (so a command may return
as soon as it has signalled the old broker) and until every listener
(--stomp, --amqp, --amqp091, and --admin when it answers) accepts connections again.
All of this must be done within --restart-timeout (default 60s) and within
the scenario's --timeout; otherwise, or when the command exits non-zero, the
cell fails with the command, its exit status and its output.

For Sluice, conformance/scripts/restart-sluice.sh DIR [SLUICE] is such a
command (it also does the first start; see docs/conformance/README.md):

  sluice conformance --stomp 127.0.0.1:61613 --amqp 127.0.0.1:5672 --admin 127.0.0.1:8161 \
    --restart-cmd 'conformance/scripts/restart-sluice.sh /tmp/conf sluice'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mk, ok := conformance.Profiles()[profile]
			if !ok {
				return fmt.Errorf("--profile %q: want sluice or activemq", profile)
			}
			prof := mk()
			out := cmd.OutOrStdout()
			if showConfig {
				fmt.Fprint(out, prof.Summary())
				if prof.Config != "" {
					fmt.Fprintf(out, "\n# configuration (%s):\n%s", prof.Name, prof.Config)
				}
				return nil
			}
			scenarios, err := conformance.Select(conformance.All(), only)
			if err != nil {
				return err
			}
			if list {
				for _, s := range scenarios {
					mode := ""
					if s.Mode == conformance.Cross {
						mode = " (cross-protocol)"
					}
					fmt.Fprintf(out, "%-48s %s%s\n", s.ID, s.Title, mode)
				}
				return nil
			}
			if stompAddr == "" && amqpAddr == "" && amqp091Addr == "" {
				return errors.New("give --stomp HOST:PORT, --amqp HOST:PORT and/or --amqp091 HOST:PORT")
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			candidates := map[string]conformance.Driver{}
			o := conformance.Options{Drivers: map[string]conformance.Driver{}, Unavailable: map[string]string{},
				Profile: prof, Parallel: parallel, Timeout: timeout, Quiet: quiet, Note: note}
			if stompAddr != "" {
				candidates["stomp"] = conformance.NewSTOMP(stompAddr, conformance.STOMPOptions{Login: login, Passcode: passcode, Dialect: prof.STOMPDialect})
			} else {
				o.Unavailable["stomp"] = "STOMP not tested (no --stomp)"
			}
			if amqpAddr != "" {
				candidates["amqp"] = conformance.NewAMQP(amqpAddr)
			} else {
				o.Unavailable["amqp"] = "AMQP not tested (no --amqp)"
			}
			if amqp091Addr != "" {
				candidates["amqp091"] = conformance.NewAMQP091(amqp091Addr, conformance.AMQP091Options{Login: login, Passcode: passcode})
			} else {
				o.Unavailable["amqp091"] = "AMQP 0-9-1 not tested (no --amqp091)"
			}
			conformance.Probe(ctx, candidates, o.Drivers, o.Unavailable)
			if len(o.Drivers) == 0 {
				return fmt.Errorf("no listener answers: %s", joinReasons(o.Unavailable))
			}
			if adminAddr != "" {
				a := conformance.NewSluiceAdmin(adminAddr, adminToken, adminUser, adminPass)
				pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				if err := a.Probe(pctx); err != nil {
					o.NoAdmin = err.Error()
				} else {
					o.Admin = a
				}
				cancel()
			}
			if restartCmd != "" {
				rc := &conformance.RestartCommand{
					Shell:   restartCmd,
					Timeout: restartTimeout,
					Env: []string{
						"SLUICE_CONFORMANCE_STOMP=" + stompAddr,
						"SLUICE_CONFORMANCE_AMQP=" + amqpAddr,
						"SLUICE_CONFORMANCE_AMQP091=" + amqp091Addr,
						"SLUICE_CONFORMANCE_ADMIN=" + adminAddr,
					},
					Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: logLevel(verbose)})),
				}
				for _, p := range conformance.Protocols {
					if d, ok := o.Drivers[p]; ok {
						rc.Addrs = append(rc.Addrs, d.Addr())
					}
				}
				if o.Admin != nil {
					rc.OtherAddrs = append(rc.OtherAddrs, adminAddr)
				}
				o.Restart = rc.Restart
			}
			if verbose {
				o.Progress = cmd.ErrOrStderr()
			}
			for p, why := range o.Unavailable {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %s\n", p, why)
			}
			rep := conformance.Run(ctx, scenarios, o)
			if err := rep.WriteText(out, true); err != nil {
				return err
			}
			for _, f := range []struct {
				name  string
				write func(io.Writer) error
			}{{htmlFile, rep.WriteHTML}, {jsonFile, rep.WriteJSON}, {mdFile, rep.WriteMarkdown}} {
				if f.name == "" {
					continue
				}
				var buf bytes.Buffer
				if err := f.write(&buf); err != nil {
					return err
				}
				if err := os.WriteFile(f.name, buf.Bytes(), 0o644); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", f.name)
			}
			if rep.Failed() {
				n := 0
				for _, c := range rep.Counts {
					n += c[conformance.Fail]
				}
				return fmt.Errorf("%d failing cells", n)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&stompAddr, "stomp", "", "STOMP listener of the broker under test, HOST:PORT")
	f.StringVar(&amqpAddr, "amqp", "", "AMQP 1.0 listener of the broker under test, HOST:PORT")
	f.StringVar(&amqp091Addr, "amqp091", "", "AMQP 0-9-1 listener of the broker under test, HOST:PORT (Sluice: its AMQP port)")
	f.StringVar(&only, "only", "", "run only scenarios whose ID matches: a glob (selector/*) or a substring")
	f.StringVar(&profile, "profile", "sluice", "broker profile: sluice or activemq")
	f.StringVar(&htmlFile, "report", "", "write the HTML report to this file")
	f.StringVar(&jsonFile, "json", "", "write the JSON report to this file")
	f.StringVar(&mdFile, "markdown", "", "write the Markdown matrix to this file")
	f.StringVar(&note, "note", "", "a line the Markdown and HTML reports show under the title (how the run was made)")
	f.StringVar(&adminAddr, "admin", "", "Sluice admin HTTP listener, HOST:PORT (destination deletion)")
	f.StringVar(&adminToken, "admin-token", "", "bearer token for the admin API")
	f.StringVar(&adminUser, "admin-user", "", "user for the admin API (basic authentication)")
	f.StringVar(&adminPass, "admin-password", "", "password for the admin API")
	f.StringVar(&restartCmd, "restart-cmd", "", "shell command that restarts the broker and exits, leaving the new broker running in the background (enables the restart scenarios; see above)")
	f.DurationVar(&restartTimeout, "restart-timeout", conformance.DefaultRestartTimeout, "bound on one restart: the --restart-cmd command, the old broker going away and the listeners accepting again")
	f.StringVar(&login, "login", "", "STOMP login and AMQP 0-9-1 PLAIN user (0-9-1: guest when empty)")
	f.StringVar(&passcode, "passcode", "", "STOMP passcode and AMQP 0-9-1 PLAIN password")
	f.IntVar(&parallel, "parallel", 4, "scenarios run at once")
	f.DurationVar(&timeout, "timeout", 60*time.Second, "bound on each scenario")
	f.DurationVar(&quiet, "quiet", 300*time.Millisecond, "how long to wait before concluding no message comes")
	f.BoolVar(&list, "list", false, "list the scenarios and exit")
	f.BoolVar(&showConfig, "show-config", false, "print what the profile expects of the broker (for sluice, its configuration file) and exit")
	f.BoolVarP(&verbose, "verbose", "v", false, "print each result as it comes")
	return cmd
}

func joinReasons(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, m[k])
	}
	return strings.Join(parts, "; ")
}

// logLevel is the level of the conformance command's log: restarts are
// logged with --verbose, problems always.
func logLevel(verbose bool) slog.Level {
	if verbose {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}
