package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
	"github.com/sluicemq/sluice/internal/sdnotify"
)

// newServeCommand builds `sluice serve`: the broker itself.
func newServeCommand() *cobra.Command {
	var (
		file, data, stomp, amqp, stomps, amqps, amqp091, adminAddr, websocket, level, format string
		check                                                                                bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the broker (data in ./sluice-data, listeners on 127.0.0.1)",
		Long: `Run the Sluice broker.

With no flags it needs no set-up: the embedded store lives in ./sluice-data and
every listener binds 127.0.0.1 (STOMP 61613, AMQP 1.0 5672, admin HTTP 8161,
STOMP over WebSocket 15674 at /ws). AMQP 0-9-1 clients are served on the AMQP
port too; --amqp091 adds a listener of their own.
Settings come from the defaults, then the --config file (TOML, see
docs/configuration.md), then SLUICE_* environment variables, then flags.
The TLS listeners (--stomps, --amqps) need a certificate: [tls] in the file.
SIGINT or SIGTERM shut it down cleanly; SIGHUP reloads the TLS certificate
files.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(file)
			if err != nil {
				return err
			}
			cfg.ApplyEnv(os.Getenv)
			flags := cmd.Flags()
			if flags.Changed("data") {
				cfg.Data = data
			}
			if flags.Changed("stomp") {
				cfg.Listeners.STOMP = stomp
			}
			if flags.Changed("amqp") {
				cfg.Listeners.AMQP = amqp
			}
			if flags.Changed("stomps") {
				cfg.Listeners.STOMPS = stomps
			}
			if flags.Changed("amqps") {
				cfg.Listeners.AMQPS = amqps
			}
			if flags.Changed("amqp091") {
				cfg.Listeners.AMQP091 = amqp091
			}
			if flags.Changed("admin") {
				cfg.Listeners.Admin = adminAddr
			}
			if flags.Changed("websocket") {
				cfg.Listeners.WebSocket = websocket
			}
			if flags.Changed("log-level") {
				cfg.LogLevel = level
			}
			if flags.Changed("log-format") {
				cfg.LogFormat = format
			}
			if check {
				// Every check serve makes before it opens the store and
				// binds its listeners.
				if err := broker.Check(cfg); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "configuration ok")
				return nil
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			return serve(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "config", "", "TOML configuration file")
	f.StringVar(&data, "data", "./sluice-data", "data directory of the embedded store")
	f.StringVar(&stomp, "stomp", "127.0.0.1:61613", "STOMP listener address (empty disables)")
	f.StringVar(&amqp, "amqp", "127.0.0.1:5672", "AMQP 1.0 listener address (empty disables)")
	f.StringVar(&stomps, "stomps", "", "STOMP over TLS listener address, conventionally port 61614 (empty disables)")
	f.StringVar(&amqps, "amqps", "", "AMQP 1.0 over TLS listener address, conventionally port 5671 (empty disables)")
	f.StringVar(&amqp091, "amqp091", "", "AMQP 0-9-1 listener address of its own, e.g. 127.0.0.1:5673 (empty: 0-9-1 only on the AMQP ports)")
	f.StringVar(&adminAddr, "admin", "127.0.0.1:8161", "admin HTTP listener address (empty disables)")
	f.StringVar(&websocket, "websocket", "127.0.0.1:15674", "STOMP over WebSocket listener address, served at /ws (empty disables)")
	f.StringVar(&level, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&format, "log-format", "text", "log format: text (key=value) or json")
	f.BoolVar(&check, "check-config", false, "validate the configuration and exit")
	return cmd
}

func serve(ctx context.Context, cfg config.Config) error {
	log, err := newLogger(os.Stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGHUP reloads the TLS files; it is caught from the start, so that
	// one sent early does not end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	b, err := broker.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	log.Info("sluice started", slog.String("version", broker.Version), slog.String("data", cfg.Data))
	notifySystemd(log, sdnotify.Ready)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-hup:
			log.Info("SIGHUP: reloading the TLS certificate files")
			_ = b.ReloadTLS() // a failure is logged, and the previous certificates stay
		}
	}
	log.Info("shutting down")
	notifySystemd(log, sdnotify.Stopping)
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("sluice stopped")
	return nil
}
