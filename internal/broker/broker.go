// Package broker is Sluice's composition root: it opens the store, starts
// the engine, binds the protocol front-ends and the admin listener, and
// shuts everything down in order. cmd/sluice only parses flags and calls it.
package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/engine/store/boltstore"
	"github.com/sluicemq/sluice/engine/store/journal"
	"github.com/sluicemq/sluice/internal/admin"
	"github.com/sluicemq/sluice/internal/buildinfo"
	"github.com/sluicemq/sluice/internal/config"
	"github.com/sluicemq/sluice/internal/tlsconf"
	"github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp091"
	"github.com/sluicemq/sluice/protocol/stomp"
	"github.com/sluicemq/sluice/protocol/stomp/ws"
)

// Version is Sluice's version, reported to clients and in metadata: the
// build's version from internal/buildinfo, the one `sluice version` prints.
var Version = buildinfo.Version()

// Broker is a running Sluice: engine, store and listeners.
type Broker struct {
	cfg    config.Config
	log    *slog.Logger
	store  *journal.Store
	engine *engine.Broker
	admin  *admin.Server
	realm  *security.Realm // who may connect and do what, on every listener
	// cluster is the raft node of a clustered broker (cluster.go); nil for
	// a single node, whose engine and store are the fields above.
	cluster *clusterNode

	// tls are the TLS configurations of the TLS listeners by name
	// (stomps, amqps, admin, websocket), fixed once Start returns.
	tls       map[string]*tlsconf.Reloader
	stopWatch context.CancelFunc          // ends the TLS file watchers and the disk watcher
	disk      atomic.Pointer[diskReading] // the disk watcher's last reading (flow.go)
	restoreGC func()                      // puts back the runtime's memory limit (flow.go)

	mu        sync.Mutex
	listeners []net.Listener
	servers   []server
	httpSrv   *http.Server // the admin listener's
	wsSrv     *http.Server // the websocket listener's
	addrs     map[string]net.Addr
	wg        sync.WaitGroup
}

// startOptions are the settings of Start that are not configuration, for
// tests.
type startOptions struct {
	// tlsPoll is how often the TLS files are looked at for changes.
	tlsPoll time.Duration
	// diskPoll is how often the data directory's free space is looked
	// at, and diskUsage how.
	diskPoll  time.Duration
	diskUsage diskUsage
}

// server is a protocol front-end served on a listener.
type server interface {
	Serve(ln net.Listener) error
	Shutdown(ctx context.Context) error
}

// openStore opens the embedded store in dir: bbolt in sluice.db with a
// write-ahead journal in front of it (journal/), so that a persistent send
// is confirmed after one sequential sync; observeSync hears each sync's time.
func openStore(ctx context.Context, dir string, log *slog.Logger, observeSync func(time.Duration)) (*journal.Store, error) {
	bs, err := boltstore.Open(filepath.Join(dir, "sluice.db"), boltstore.Options{Logger: log.With(slog.String("component", "store"))})
	if err != nil {
		return nil, err
	}
	js, err := journal.Open(ctx, filepath.Join(dir, "journal"), bs, journal.Options{
		Validate:    boltstore.Validate,
		Logger:      log.With(slog.String("component", "journal")),
		ObserveSync: observeSync,
	})
	if err != nil {
		_ = bs.Close()
		return nil, err
	}
	return js, nil
}

// Start validates cfg, loads the certificates of the TLS listeners, opens
// the store under cfg.Data, recovers the engine and binds every configured
// listener. While the broker runs, the TLS files are reloaded when they
// change (tlsconf.PollInterval) and on ReloadTLS.
func Start(ctx context.Context, cfg config.Config, log *slog.Logger) (*Broker, error) {
	return startWith(ctx, cfg, log, startOptions{tlsPoll: tlsconf.PollInterval, diskPoll: DiskPollInterval, diskUsage: statfs})
}

func startWith(ctx context.Context, cfg config.Config, log *slog.Logger, opts startOptions) (*Broker, error) {
	if err := Check(cfg); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	authMetrics := admin.NewAuthMetrics()
	realm, err := newRealm(cfg, authMetrics.Attempt, log)
	if err != nil {
		return nil, err
	}
	auth, err := adminAuth(cfg, realm)
	if err != nil {
		return nil, err
	}
	b := &Broker{cfg: cfg, log: log, realm: realm, addrs: map[string]net.Addr{}}
	if err := os.MkdirAll(cfg.Data, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory %s: %w", cfg.Data, err)
	}
	if err := b.loadTLS(); err != nil {
		return nil, err
	}
	if cfg.Cluster != nil {
		if err := b.startCluster(auth, authMetrics); err != nil {
			_ = b.Shutdown(context.Background())
			return nil, err
		}
		b.startWatchers(opts)
		return b, nil
	}
	storeSync := admin.NewStoreSyncLatency()
	st, err := openStore(ctx, cfg.Data, log, storeSync.Observe)
	if err != nil {
		return nil, err
	}
	b.store = st
	policy, err := cfg.PolicyFunc()
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	dests, err := cfg.EngineDestinations()
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	latency := admin.NewDeliveryLatency()
	memLimit := memoryLimit(cfg, log)
	eng, err := engine.New(ctx, engine.Config{
		MemoryLimit:        heldAt(memLimit),
		ObserveDelivery:    latency.Observe,
		ObserveDenied:      authMetrics.Denied,
		StampUserID:        cfg.Security.SetUserID,
		Destinations:       dests,
		Store:              st,
		Logger:             log.With(slog.String("component", "engine")),
		Policy:             policy,
		AutoCreate:         cfg.AutoCreate,
		ConsumeBeforeStore: cfg.ConsumeBeforeStore,
		ExpiryScanInterval: time.Duration(cfg.ExpiryScanInterval),
		WindowMessages:     cfg.WindowMessages,
		WindowBytes:        cfg.WindowBytes,
		ProviderVersion:    Version,
	})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	b.engine = eng
	// Recovery read every index record (and a crash's journal replay wrote
	// to the store): give back what only caches the disk, and the heap
	// that reading left behind, before the broker takes load.
	b.store.ReleaseMemory()
	debug.FreeOSMemory()
	b.restoreGC = setRuntimeLimit(memLimit)
	log.Info("limits", slog.Int64("memory_limit", memLimit), slog.String("disk_free_limit", cfg.Limits.DiskFreeLimit))
	b.admin = admin.New(admin.Options{Version: Version, Engine: eng, Auth: auth, AuthMetrics: authMetrics, Latency: latency, Logger: log.With(slog.String("component", "admin")),
		StoreSync: storeSync, DataDir: cfg.Data, Policy: cfg.ExplainPolicy,
		StoreStats: func() admin.StoreStats {
			st := b.store.Stats()
			return admin.StoreStats{Commits: st.Commits, Updates: st.Updates, Ops: st.Ops, JournalBytes: st.Bytes, AppliedOps: st.Applied}
		}})
	if err := b.listen(); err != nil {
		_ = b.Shutdown(context.Background())
		return nil, err
	}
	b.startWatchers(opts)
	b.admin.SetReady(true)
	return b, nil
}

// startWatchers starts the TLS file watchers and the disk watcher, which
// run until Shutdown.
func (b *Broker) startWatchers(opts startOptions) {
	watchCtx, stop := context.WithCancel(context.Background())
	b.stopWatch = stop
	if opts.tlsPoll <= 0 {
		opts.tlsPoll = tlsconf.PollInterval
	}
	for _, r := range b.tls {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			r.Watch(watchCtx, opts.tlsPoll)
		}()
	}
	if opts.diskUsage == nil {
		opts.diskUsage = statfs
	}
	if opts.diskPoll <= 0 {
		opts.diskPoll = DiskPollInterval
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.watchDisk(watchCtx, opts.diskPoll, opts.diskUsage)
	}()
}

func (b *Broker) listen() error {
	connOpts, err := b.cfg.ConnectionOptions()
	if err != nil {
		return err
	}
	l := b.cfg.Listeners
	adminWS := l.AdminWebSocket && l.Admin != ""
	// One server per protocol serves its plain and its TLS listener (and,
	// for STOMP, the WebSocket ones): its Shutdown closes them all and
	// every connection of any.
	var adminHandler http.Handler = b.admin
	if l.STOMP != "" || l.STOMPS != "" || l.WebSocket != "" || adminWS {
		srv := stomp.NewServer(b.engine, stomp.Options{
			Connection:      connOpts,
			DefaultPrefetch: b.cfg.Connection.Prefetch,
			ServerName:      "Sluice/" + Version,
			Realm:           b.realm,
			Logger:          b.log.With(slog.String("component", "stomp")),
		})
		if err := b.serveBoth(srv, "stomp", l.STOMP, "stomps", l.STOMPS); err != nil {
			return err
		}
		if l.WebSocket != "" {
			ws, err := b.serveWebSocket(srv, l.WebSocket)
			if err != nil {
				return err
			}
			b.mu.Lock()
			b.wsSrv = ws
			b.mu.Unlock()
		}
		if adminWS {
			if adminHandler, err = b.withWebSocket(srv, l.Admin, b.admin); err != nil {
				return err
			}
		}
	}
	// The AMQP 0-9-1 server takes the 0-9-1 connections of the amqp and
	// amqps listeners (sniff.go) and serves the amqp091 listener.
	var srv091 *amqp091.Server
	if l.AMQP != "" || l.AMQPS != "" || l.AMQP091 != "" {
		srv091 = amqp091.NewServer(b.engine, amqp091.Options{
			Connection:      connOpts,
			DefaultPrefetch: b.cfg.Connection.Prefetch,
			Realm:           b.realm,
			Version:         Version,
			Logger:          b.log.With(slog.String("component", "amqp091")),
		})
		if err := b.serveBoth(srv091, "amqp091", l.AMQP091, "", ""); err != nil {
			return err
		}
	}
	if l.AMQP != "" || l.AMQPS != "" {
		srv := amqp.NewServer(b.engine, amqp.Options{
			Connection:  connOpts,
			ContainerID: "sluice",
			Realm:       b.realm,
			Version:     Version,
			Logger:      b.log.With(slog.String("component", "amqp")),
		})
		sniffing := &sniffingServer{amqp: srv, amqp091: srv091, log: b.log.With(slog.String("component", "amqp"))}
		if err := b.serveBoth(sniffing, "amqp", l.AMQP, "amqps", l.AMQPS); err != nil {
			return err
		}
	}
	if addr := l.Admin; addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("admin listener %s: %w", addr, err)
		}
		b.addrs["admin"] = ln.Addr()
		proto, served := "admin-http", ln
		if r := b.tls["admin"]; r != nil {
			proto, served = "admin-https", tls.NewListener(ln, r.TLSConfig())
		}
		b.httpSrv = &http.Server{Handler: adminHandler, ReadHeaderTimeout: 10 * time.Second,
			// Failed TLS handshakes and the like: the client's problem.
			ErrorLog: slog.NewLogLogger(b.log.With(slog.String("component", "admin")).Handler(), slog.LevelDebug)}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if err := b.httpSrv.Serve(served); err != nil && !errors.Is(err, http.ErrServerClosed) {
				b.log.Error("admin listener stopped", slog.Any("err", err))
			}
		}()
		b.log.Info("listening", slog.String("protocol", proto), slog.String("addr", ln.Addr().String()),
			slog.Bool("tls", b.tls["admin"] != nil), slog.Bool("websocket", adminWS))
	}
	return nil
}

// webSocketHandler serves STOMP over WebSocket with srv on the listener of
// address addr. A loopback listener that lets clients in without
// credentials answers only requests addressed to this machine (the DNS
// rebinding guard of ws.Options.LoopbackOnly).
func (b *Broker) webSocketHandler(srv ws.ConnServer, addr string) (*ws.Handler, error) {
	loop, err := config.LoopbackAddr(addr)
	if err != nil {
		return nil, err
	}
	open := !b.realm.Enabled() || b.cfg.Security.AnonymousRole != ""
	h, err := ws.NewHandler(srv, ws.Options{
		AllowedOrigins: b.cfg.Listeners.WebSocketAllowedOrigins,
		LoopbackOnly:   loop && open,
		Logger:         b.log.With(slog.String("component", "websocket")),
	})
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	return h, nil
}

// withWebSocket returns next with STOMP over WebSocket, served by srv, at
// ws.Path of the listener at addr (the admin one).
func (b *Broker) withWebSocket(srv ws.ConnServer, addr string, next http.Handler) (http.Handler, error) {
	h, err := b.webSocketHandler(srv, addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(ws.Path, h)
	if next != nil {
		mux.Handle("/", next)
	}
	return mux, nil
}

// serveWebSocket binds the websocket listener at addr and serves STOMP
// over WebSocket on it at ws.Path with stomps (a STOMP server): HTTP/1.1,
// through TLS when websocket_tls is set (wss). The WebSocket connections
// themselves belong to stomps once upgraded; closing the server returned
// stops the listener.
func (b *Broker) serveWebSocket(stomps ws.ConnServer, addr string) (*http.Server, error) {
	h, err := b.withWebSocket(stomps, addr, nil)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("websocket listener %s: %w", addr, err)
	}
	served := ln
	r := b.tls["websocket"]
	if r != nil {
		served = tls.NewListener(ln, r.TLSConfig())
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(b.log.With(slog.String("component", "websocket")).Handler(), slog.LevelDebug)}
	b.mu.Lock()
	b.addrs["websocket"] = ln.Addr()
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := srv.Serve(served); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("websocket listener stopped", slog.Any("err", err))
		}
	}()
	b.log.Info("listening", slog.String("protocol", "stomp-websocket"), slog.String("addr", ln.Addr().String()),
		slog.String("path", ws.Path), slog.Bool("tls", r != nil))
	return srv, nil
}

// serveBoth registers srv and serves it on its plain listener (name,
// addr) and its TLS listener (tlsName, tlsAddr), each when it has an
// address.
func (b *Broker) serveBoth(srv server, name, addr, tlsName, tlsAddr string) error {
	b.mu.Lock()
	b.servers = append(b.servers, srv)
	b.mu.Unlock()
	if addr != "" {
		if err := b.serve(name, addr, srv, nil); err != nil {
			return err
		}
	}
	if tlsAddr != "" {
		if err := b.serve(tlsName, tlsAddr, srv, b.tls[tlsName].TLSConfig()); err != nil {
			return err
		}
	}
	return nil
}

// serve binds addr and serves srv on it, through TLS with tlsCfg unless it
// is nil. The protocol server is then handed *tls.Conn connections whose
// handshake runs on their first read (netserve.PeerCertificate).
func (b *Broker) serve(name, addr string, srv server, tlsCfg *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s listener %s: %w", name, addr, err)
	}
	served := ln
	if tlsCfg != nil {
		served = tls.NewListener(ln, tlsCfg)
	}
	b.mu.Lock()
	b.listeners = append(b.listeners, ln)
	b.addrs[name] = ln.Addr()
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := srv.Serve(served); err != nil && !errors.Is(err, net.ErrClosed) {
			b.log.Error("listener stopped", slog.String("protocol", name), slog.Any("err", err))
		}
	}()
	b.log.Info("listening", slog.String("protocol", name), slog.String("addr", ln.Addr().String()),
		slog.Bool("tls", tlsCfg != nil))
	return nil
}

// Check runs every check Start makes before it opens the store and binds
// a listener: the configuration's Validate, then building what Start
// builds from it (the security realm, the admin credentials and the
// admin-listener rule, the destination policies, the configured
// destinations, the connection defaults), and the data directory, which
// must be a directory or creatable as one. It opens nothing and binds
// nothing, so it can run beside a broker using the same configuration;
// problems only opening the store can find (a store of a newer incarnation,
// a locked or damaged file) are left to Start. `sluice serve
// --check-config` is Check.
func Check(cfg config.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	realm, err := newRealm(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	var errs []error
	if _, err := adminAuth(cfg, realm); err != nil {
		errs = append(errs, err)
	}
	if _, err := cfg.PolicyFunc(); err != nil {
		errs = append(errs, fmt.Errorf("invalid configuration: %w", err))
	}
	if _, err := cfg.EngineDestinations(); err != nil {
		errs = append(errs, fmt.Errorf("invalid configuration: %w", err))
	}
	if _, err := cfg.ConnectionOptions(); err != nil {
		errs = append(errs, fmt.Errorf("invalid configuration: %w", err))
	}
	if err := checkDataDir(cfg.Data); err != nil {
		errs = append(errs, fmt.Errorf("invalid configuration: %w", err))
	}
	return errors.Join(errs...)
}

// checkDataDir reports a data directory Start could not create or use: a
// path that names something other than a directory, or lies under one. It
// creates nothing.
func checkDataDir(dir string) error {
	if dir == "" {
		return errors.New("data: the data directory is empty")
	}
	// Up the path to the first part that exists; bounded by its depth.
	p := filepath.Clean(dir)
	for range 4096 {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return nil
		case err == nil:
			return fmt.Errorf("data %s: %s is not a directory", dir, p)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return fmt.Errorf("data %s: %w", dir, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
	return nil
}

// newRealm builds the one security realm of every listener from
// [security] and the [admin] users (administrators with no messaging
// grants); observe counts its authentications.
func newRealm(cfg config.Config, observe func(protocol, result string), log *slog.Logger) (*security.Realm, error) {
	opts := cfg.SecurityOptions()
	opts.ObserveAttempt = observe
	opts.Logger = log.With(slog.String("component", "security"))
	realm, err := security.New(opts)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: security: %w", err)
	}
	return realm, nil
}

// adminAuth builds the admin listener's credentials, realm's users and
// cfg.Admin's tokens, and refuses an admin address other machines could
// reach without them.
func adminAuth(cfg config.Config, realm *security.Realm) (*admin.Auth, error) {
	auth, err := admin.NewAuth(realm, cfg.Admin.Tokens)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: admin: %w", err)
	}
	if addr := cfg.Listeners.Admin; addr != "" {
		if err := admin.CheckListen(addr, auth); err != nil {
			return nil, err
		}
	}
	return auth, nil
}

// Engine returns the engine, for embedding and tests: in a cluster the
// serving term's, nil on a follower.
func (b *Broker) Engine() *engine.Broker {
	if b.cluster != nil {
		if t := b.cluster.current(); t != nil {
			return t.eng
		}
		return nil
	}
	return b.engine
}

// Addr returns the bound address of a listener ("stomp", "amqp", "amqp091", "stomps",
// "amqps", "admin", "websocket"), or nil when it is not enabled.
func (b *Broker) Addr(name string) net.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.addrs[name]
}

// loadTLS reads the certificates of the TLS listeners.
func (b *Broker) loadTLS() error {
	b.tls = map[string]*tlsconf.Reloader{}
	for _, name := range b.cfg.TLSListeners() {
		s, err := b.cfg.ListenerTLS(name)
		if err != nil {
			return fmt.Errorf("invalid configuration: %w", err)
		}
		switch name {
		case "admin":
			s.NextProtos = []string{"h2", "http/1.1"}
		case "websocket":
			s.NextProtos = []string{"http/1.1"} // WebSocket is an HTTP/1.1 upgrade
		}
		r, err := tlsconf.New(s, b.log.With(slog.String("component", "tls")))
		if err != nil {
			return err
		}
		b.tls[name] = r
	}
	return nil
}

// ReloadTLS reads the certificate, key and client CA files of every TLS
// listener again (cmd/sluice calls it on SIGHUP). New connections get the
// new files; open connections are not affected. A listener whose files
// fail to load keeps serving its previous certificate; the errors of all
// such listeners are returned together (and logged). Without TLS
// listeners it does nothing.
func (b *Broker) ReloadTLS() error {
	names := make([]string, 0, len(b.tls))
	for name := range b.tls {
		names = append(names, name)
	}
	slices.Sort(names)
	var errs []error
	for _, name := range names {
		if err := b.tls[name].Reload(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Shutdown stops accepting, closes client connections (their unacknowledged
// messages stay stored), stops the engine and closes the store.
func (b *Broker) Shutdown(ctx context.Context) error {
	if b.stopWatch != nil {
		b.stopWatch()
	}
	if b.admin != nil {
		b.admin.SetReady(false)
	}
	var errs []error
	if b.httpSrv != nil {
		if err := b.httpSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("admin: %w", err))
		}
	}
	b.mu.Lock()
	servers, wsSrv := b.servers, b.wsSrv
	b.mu.Unlock()
	if wsSrv != nil {
		// Stops the handshakes; the STOMP server below closes the
		// connections.
		if err := wsSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("websocket: %w", err))
		}
	}
	for _, s := range servers {
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	b.mu.Lock()
	lns := b.listeners
	b.mu.Unlock()
	if b.cluster != nil {
		// The cluster's accept loops end with their listeners; the term
		// ends (its clients dropped) before the raft node closes.
		for _, ln := range lns {
			_ = ln.Close()
		}
		if b.cluster.clients != nil {
			b.cluster.clients.unbind()
		}
		if err := b.cluster.shutdown(); err != nil {
			errs = append(errs, fmt.Errorf("cluster: %w", err))
		}
	}
	b.wg.Wait()
	if b.admin != nil && b.cluster == nil {
		b.admin.Close()
	}
	if b.engine != nil {
		if err := b.engine.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.store != nil {
		if err := b.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	if b.restoreGC != nil {
		b.restoreGC()
	}
	return errors.Join(errs...)
}
