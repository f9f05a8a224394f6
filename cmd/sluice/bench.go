package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	rpprof "runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluicemq/sluice/internal/loadgen"
)

// newBenchCommand is "sluice bench": the load generator (package
// internal/loadgen) against any STOMP or AMQP 1.0 broker, or an in-process
// Sluice.
func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load generator: measure a STOMP or AMQP 1.0 broker (Sluice or any other)",
		Long: `Load generator for Sluice and for any other STOMP or AMQP 1.0 broker.

Scenarios (every option below can change them):
  queue       queue, 1 producer, 1 consumer, 1 KiB, non-persistent
  persistent  queue, 1 producer, 1 consumer, 1 KiB, persistent, a receipt
              (broker confirmation) per message before the next send
  fanout      topic, 1 producer, 50 subscribers, 1 KiB, non-persistent
  backlog     queue, fill then drain: the producers send --count persistent
              messages with receipts (--receipt-window, default 64), and
              only once every one is confirmed do the consumers attach and
              drain them all with --ack (client-individual: one ACK, or one
              AMQP accept, per message). The report gives the fill rate,
              the drain rate and, with --broker-pid, the broker's CPU per
              100k messages of each phase and its RSS (/proc/PID/status
              VmRSS) before the fill, after it and after the drain. Its
              latencies include the time in the backlog.
  slow        (STOMP) a subscriber that subscribes, then never reads its
              socket, while the producers send --count messages of --size
              bytes with receipts (--receipt-window, default 64): with
              --broker-pid the report gives the broker's RSS before, at its
              peak and after, what a consumer that reads nothing costs it.
              Producers held by the broker's flow control are waited for up
              to --drain-timeout without a receipt.

Every run is bounded (--count or --duration). It reports the rates, the
end-to-end latency percentiles (from a send timestamp in each message, so
the clocks of producer and consumer are this machine's) and whether every
message arrived exactly once per consumer. Each run uses a fresh destination
(--prefix, the scenario and a run ID), so a broker's leftovers never count.

--rate paces the queue and persistent scenarios: that many messages per
second across the producers, evenly spaced, for a latency figure at a fixed,
light load (e.g. --scenario persistent --rate 2000 --receipt-window 64
--count 20000). Latency runs from each actual send; the report counts the
sends that started over 1 ms behind their schedule.

Without --addr, a Sluice broker starts inside this process (temporary data
directory, STOMP or AMQP 1.0 on 127.0.0.1:0); --cpuprofile then profiles it, client
included. "sluice bench serve" runs such a broker alone, with a pprof
endpoint, to profile the broker without the load generator.`,
	}
	cmd.AddCommand(newBenchSTOMPCommand(), newBenchAMQPCommand(), newBenchAMQP091Command(), newBenchServeCommand(), newBenchSummarizeCommand())
	return cmd
}

// benchFlags are the scenario options shared by every protocol.
type benchFlags struct {
	o          loadgen.Options
	scenario   string
	ack        string
	jsonOut    bool
	addr       string
	data       string
	cpuprofile string
	pprofAddr  string
	// runSlow runs the slow scenario against addr (STOMP only).
	runSlow func(ctx context.Context, addr string, o loadgen.Options) (*loadgen.SlowReport, error)
}

func (b *benchFlags) register(f *pflag.FlagSet) {
	f.StringVar(&b.addr, "addr", "", "broker address host:port (default: start a Sluice in this process)")
	f.StringVar(&b.scenario, "scenario", "queue", "queue, persistent, fanout, backlog or slow (STOMP)")
	f.IntVar(&b.o.Count, "count", 0, "messages to send in all (default: 100000 for queue, 5000 for persistent, fanout and backlog, unless --duration)")
	f.DurationVar(&b.o.Duration, "duration", 0, "send for this long instead (with --count too: whichever ends first)")
	f.Float64Var(&b.o.Rate, "rate", 0, "pace the sends: this many messages/s across the producers, evenly spaced (0: as fast as the broker takes them)")
	f.IntVar(&b.o.Size, "size", 1024, "body size in bytes")
	f.IntVar(&b.o.Producers, "producers", 1, "producers, each on its own connection")
	f.IntVar(&b.o.Consumers, "consumers", 0, "consumers of the queue or subscribers of the topic, each on its own connection (default 1; fanout 50)")
	f.BoolVar(&b.o.Persistent, "persistent", false, "persistent messages (the persistent scenario sets it)")
	f.BoolVar(&b.o.Receipts, "receipts", false, "a broker confirmation per message (the persistent scenario sets it)")
	f.IntVar(&b.o.ReceiptWindow, "receipt-window", 1, "confirmations a producer may have outstanding (backlog: default 64)")
	f.StringVar(&b.ack, "ack", "auto", "consumer acknowledgement: auto, client (cumulative) or client-individual")
	f.IntVar(&b.o.AckEvery, "ack-every", 1, "with --ack client: acknowledge every n-th message")
	f.IntVar(&b.o.Prefetch, "prefetch", 0, "consumer prefetch (STOMP activemq.prefetchSize and prefetch-count; AMQP link credit); 0: the broker's default")
	f.IntVar(&b.o.MaxBacklog, "max-backlog", 0, "hold producers while this many messages are sent but not yet received (0: no limit)")
	f.StringVar(&b.o.Prefix, "prefix", "sluicebench", "destination name prefix; the scenario and a run ID follow")
	f.StringVar(&b.o.Destination, "destination", "", "use this destination name as it is (a reused queue's leftovers are counted as foreign)")
	f.DurationVar(&b.o.DrainTimeout, "drain-timeout", 10*time.Second, "after sending, give up once no message arrived for this long")
	f.IntVar(&b.o.BrokerPID, "broker-pid", 0, "measure this process's CPU time (/proc/PID/stat) over the run, and with --scenario backlog its RSS (/proc/PID/status)")
	f.StringVar(&b.o.AfterFill, "after-fill", "", "with --scenario backlog: a shell command run between the fill and the drain, with SLUICE_BENCH_QUEUE and SLUICE_BENCH_BROKER_PID set (e.g. one that restarts the broker and waits until it is ready); a number on its last line of output is the broker's PID from then on")
	f.StringVar(&b.o.Label, "label", "", "name of the broker in the report and in summaries (default: protocol and address)")
	f.BoolVar(&b.jsonOut, "json", false, "print the report as JSON")
	f.StringVar(&b.data, "data", "", "in-process Sluice: data directory (default: a temporary one, removed afterwards)")
	f.StringVar(&b.cpuprofile, "cpuprofile", "", "in-process Sluice: write a CPU profile of this process (broker and load generator) to this file")
	f.StringVar(&b.pprofAddr, "pprof", "", "in-process Sluice: serve net/http/pprof on this address during the run")
}

// options returns the loadgen options the flags describe.
func (b *benchFlags) options(flags *pflag.FlagSet) (loadgen.Options, error) {
	o := b.o
	o.Scenario = loadgen.Scenario(b.scenario)
	o.AckMode = loadgen.AckMode(b.ack)
	if o.Scenario == loadgen.ScenarioPersistent || o.Scenario == loadgen.ScenarioBacklog {
		if (flags.Changed("persistent") && !o.Persistent) || (flags.Changed("receipts") && !o.Receipts) {
			return o, fmt.Errorf("the %s scenario is persistent with receipts: use --scenario queue to turn either off", o.Scenario)
		}
	}
	if o.Scenario == loadgen.ScenarioSlow {
		if b.runSlow == nil {
			return o, errors.New("the slow scenario is for STOMP (sluice bench stomp)")
		}
		if o.Count == 0 {
			o.Count = 5000
		}
		if !flags.Changed("receipt-window") {
			o.ReceiptWindow = 64
		}
		if o.Prefix == "" {
			o.Prefix = "sluicebench"
		}
		return o, nil
	}
	if o.Scenario == loadgen.ScenarioBacklog && !flags.Changed("receipt-window") {
		o.ReceiptWindow = 0 // the scenario's default
	}
	if o.Count == 0 && o.Duration == 0 {
		switch o.Scenario {
		case loadgen.ScenarioQueue:
			o.Count = 100000
		default:
			o.Count = 5000
		}
	}
	if err := o.Resolve(); err != nil {
		return o, err
	}
	if b.addr != "" && (b.cpuprofile != "" || b.pprofAddr != "" || b.data != "") {
		return o, errors.New("--data, --cpuprofile and --pprof are for the in-process Sluice (no --addr)")
	}
	return o, nil
}

// run runs one benchmark with the driver newDriver makes for the address
// (the in-process Sluice's when there is no --addr) and prints the report.
func (b *benchFlags) run(cmd *cobra.Command, amqp bool, newDriver func(addr string) (loadgen.Driver, error)) error {
	o, err := b.options(cmd.Flags())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	addr := b.addr
	if addr == "" {
		stompAddr, amqpAddr := "127.0.0.1:0", ""
		if amqp {
			stompAddr, amqpAddr = "", "127.0.0.1:0"
		}
		inproc, err := loadgen.StartInProcessAt(ctx, b.data, stompAddr, amqpAddr, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			return err
		}
		defer func() { _ = inproc.Stop() }()
		// Its CPU time is in the report's client CPU.
		addr = inproc.STOMPAddr()
		if amqp {
			addr = inproc.AMQPAddr()
		}
		stopProf, err := startProfiling(cmd.ErrOrStderr(), b.cpuprofile, b.pprofAddr)
		if err != nil {
			return err
		}
		defer stopProf()
	}
	if o.Scenario == loadgen.ScenarioSlow {
		rep, err := b.runSlow(ctx, addr, o)
		if err != nil {
			return err
		}
		if err := rep.Write(cmd.OutOrStdout(), b.jsonOut); err != nil {
			return err
		}
		if !rep.OK() {
			return errors.New("the run failed: see the report")
		}
		return nil
	}
	d, err := newDriver(addr)
	if err != nil {
		return err
	}
	rep, err := loadgen.Run(ctx, d, o)
	if err != nil {
		return err
	}
	if err := writeReport(cmd.OutOrStdout(), rep, b.jsonOut); err != nil {
		return err
	}
	if !rep.OK {
		return errors.New("the run failed: see the report")
	}
	return nil
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

func writeReport(w io.Writer, rep *loadgen.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(w)
}

// startProfiling starts a CPU profile into file and a pprof HTTP endpoint
// on addr (either may be ""); the returned function stops both.
func startProfiling(stderr io.Writer, file, addr string) (func(), error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if file != "" {
		f, err := os.Create(file)
		if err != nil {
			return nil, err
		}
		if err := rpprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			return nil, err
		}
		stops = append(stops, func() { rpprof.StopCPUProfile(); _ = f.Close() })
	}
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("pprof listener: %w", err)
		}
		runtime.SetMutexProfileFraction(100)
		runtime.SetBlockProfileRate(100000)
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		fmt.Fprintf(stderr, "pprof on http://%s/debug/pprof/\n", ln.Addr())
		stops = append(stops, func() { _ = srv.Close() })
	}
	return stopAll, nil
}

// newBenchSTOMPCommand is "sluice bench stomp".
func newBenchSTOMPCommand() *cobra.Command {
	var (
		b                             benchFlags
		login, passcode, host, client string
	)
	cmd := &cobra.Command{
		Use:   "stomp",
		Short: "Benchmark a STOMP broker (default: an in-process Sluice)",
		Example: `  sluice bench stomp --scenario queue
  sluice bench stomp --addr 127.0.0.1:61613 --scenario persistent --count 5000
  sluice bench stomp --addr 127.0.0.1:61613 --client lean --scenario backlog --count 200000 --ack client-individual --broker-pid PID
  sluice bench stomp --addr 127.0.0.1:63613 --login guest --passcode guest --host / --scenario fanout --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return b.run(cmd, false, func(addr string) (loadgen.Driver, error) {
				if client != loadgen.ClientGoSTOMP && client != loadgen.ClientLean {
					return nil, fmt.Errorf("--client %q: want go-stomp or lean", client)
				}
				return loadgen.NewSTOMP(loadgen.STOMPConfig{Addr: addr, Login: login, Passcode: passcode, Host: host, Client: client}), nil
			})
		},
	}
	b.register(cmd.Flags())
	b.runSlow = func(ctx context.Context, addr string, o loadgen.Options) (*loadgen.SlowReport, error) {
		return loadgen.RunSlow(ctx, addr, login, passcode, host, o)
	}
	cmd.Flags().StringVar(&login, "login", "", "CONNECT login")
	cmd.Flags().StringVar(&passcode, "passcode", "", "CONNECT passcode")
	cmd.Flags().StringVar(&client, "client", loadgen.ClientGoSTOMP, "STOMP client: go-stomp (github.com/go-stomp/stomp/v3) or lean (a minimal client that costs far less CPU, for when go-stomp is the bottleneck)")
	cmd.Flags().StringVar(&host, "host", "", `CONNECT host header (RabbitMQ reads it as the virtual host: give "/"); default the address's host`)
	return cmd
}

// newBenchAMQPCommand is "sluice bench amqp".
func newBenchAMQPCommand() *cobra.Command {
	var (
		b                         benchFlags
		user, password, vhost     string
		style, client             string
		sendWindow, defaultCredit int
	)
	cmd := &cobra.Command{
		Use:   "amqp",
		Short: "Benchmark an AMQP 1.0 broker",
		Long: `Benchmark an AMQP 1.0 broker with the scenarios of "sluice bench".

Producers send unsettled transfers and keep --send-window of them outstanding
(with --receipts, as in the persistent scenario: --receipt-window, default 1:
each send waits for the broker's settlement). Persistent messages are durable.
Consumers with --ack auto ask the broker for pre-settled deliveries; with
client acks they accept each message. --prefetch is the link credit.
--client lean uses a minimal client on Sluice's own AMQP codec instead of
go-amqp, which costs far less CPU per message.

Without --addr, a Sluice broker starts inside this process with its AMQP 1.0
listener on 127.0.0.1:0.`,
		Example: `  sluice bench amqp --scenario queue
  sluice bench amqp --scenario persistent --count 5000 --client lean
  sluice bench amqp --addr 127.0.0.1:5672 --client lean --scenario backlog --count 200000 --ack client-individual --broker-pid PID
  sluice bench amqp --addr 127.0.0.1:5673 --user guest --password guest --address-style rabbitmq --scenario queue --ack client-individual --prefetch 100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch loadgen.AddressStyle(style) {
			case loadgen.AddressPlain, loadgen.AddressPrefix, loadgen.AddressRabbitMQ:
			default:
				return fmt.Errorf("--address-style %q: want plain, prefix or rabbitmq", style)
			}
			if client != loadgen.ClientGoAMQP && client != loadgen.ClientLean {
				return fmt.Errorf("--client %q: want go-amqp or lean", client)
			}
			if b.o.Prefetch == 0 {
				b.o.Prefetch = defaultCredit // so the report shows the credit in use
			}
			return b.run(cmd, true, func(addr string) (loadgen.Driver, error) {
				return loadgen.NewAMQP(loadgen.AMQPConfig{Addr: addr, User: user, Password: password, VirtualHost: vhost,
					Addresses: loadgen.AddressStyle(style), SendWindow: sendWindow, DefaultCredit: defaultCredit, Client: client}), nil
			})
		},
	}
	b.register(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&user, "user", "", "SASL PLAIN user (default: SASL ANONYMOUS)")
	f.StringVar(&password, "password", "", "SASL PLAIN password")
	f.StringVar(&vhost, "vhost", "", `open frame hostname (RabbitMQ: "vhost:NAME"); default none`)
	f.StringVar(&style, "address-style", "plain", "plain (name + queue/topic capability), prefix (queue://, topic://) or rabbitmq (/queue/, /topic/)")
	f.IntVar(&sendWindow, "send-window", 1000, "unsettled sends a producer keeps outstanding without --receipts")
	f.IntVar(&defaultCredit, "credit", 100, "link credit when --prefetch is 0")
	f.StringVar(&client, "client", loadgen.ClientGoAMQP, "AMQP 1.0 client: go-amqp (github.com/Azure/go-amqp) or lean (a minimal client on Sluice's own codec that costs far less CPU, for when go-amqp is the bottleneck)")
	return cmd
}

// newBenchServeCommand is "sluice bench serve": the in-process broker of
// the benchmarks, alone, with profiling, until SIGINT or SIGTERM.
func newBenchServeCommand() *cobra.Command {
	var (
		data, stompAddr, amqpAddr, cpuprofile, pprofAddr string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the benchmarks' Sluice alone, with pprof, until interrupted",
		Long: `Run the Sluice broker that "sluice bench" starts in-process (temporary data
directory unless --data, no admin listener) until SIGINT or SIGTERM, with a pprof
endpoint and optionally a CPU profile of the whole run, so a load generator in
another process ("sluice bench stomp --addr ...") can be profiled apart from
the broker.`,
		Example: `  sluice bench serve --stomp 127.0.0.1:61613 --pprof 127.0.0.1:6060 &
  sluice bench stomp --addr 127.0.0.1:61613 --scenario queue
  go tool pprof -top 'http://127.0.0.1:6060/debug/pprof/profile?seconds=10'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			p, err := loadgen.StartInProcessAt(ctx, data, stompAddr, amqpAddr, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err != nil {
				return err
			}
			stopProf, err := startProfiling(cmd.ErrOrStderr(), cpuprofile, pprofAddr)
			if err != nil {
				_ = p.Stop()
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sluice (pid %d) STOMP on %q, AMQP 1.0 on %q\n", os.Getpid(), p.STOMPAddr(), p.AMQPAddr())
			<-ctx.Done()
			stopProf()
			return p.Stop()
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "data directory (default: a temporary one, removed afterwards)")
	f.StringVar(&stompAddr, "stomp", "127.0.0.1:0", `STOMP listener address ("" disables)`)
	f.StringVar(&amqpAddr, "amqp", "127.0.0.1:0", `AMQP 1.0 listener address ("" disables)`)
	f.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	f.StringVar(&pprofAddr, "pprof", "127.0.0.1:0", `serve net/http/pprof here ("" disables)`)
	return cmd
}

// newBenchSummarizeCommand is "sluice bench summarize": medians and ratios
// over --json reports.
func newBenchSummarizeCommand() *cobra.Command {
	var baseline string
	cmd := &cobra.Command{
		Use:   "summarize FILE...",
		Short: "Medians per scenario and broker over --json reports, and the ratio to the better peer",
		Long: `Read reports written by "sluice bench ... --json --label NAME" (one or more
per file; "-" is standard input), group them by scenario, protocol and label,
and print each group's medians: end-to-end messages/s (with the range),
deliveries/s, latency p50 and p99, the broker's CPU seconds per 100k
deliveries and the load generator's CPU seconds. Then, per scenario, the
ratio of --baseline to the better of the other brokers, against issue 4's bar.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var reps []*loadgen.Report
			for _, name := range args {
				var r io.Reader = cmd.InOrStdin()
				if name != "-" {
					f, err := os.Open(name)
					if err != nil {
						return err
					}
					defer f.Close()
					r = f
				}
				got, err := loadgen.ReadReports(r)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				reps = append(reps, got...)
			}
			if len(reps) == 0 {
				return errors.New("no reports")
			}
			return loadgen.WriteSummary(cmd.OutOrStdout(), reps, baseline)
		},
	}
	cmd.Flags().StringVar(&baseline, "baseline", "sluice", "label of the broker to compare with the better of the others")
	return cmd
}
