package broker

// A clustered broker ([cluster], docs/cluster.md). Every node runs its raft
// node (engine/store/raftstore) for its whole life; only the leader runs an
// engine, on the replicated store, and serves clients. Each leadership is a
// term: gaining it opens a fresh engine, which recovers from the local
// state (every committed entry is applied before the raft store reports the
// leadership), with its protocol servers and its admin server; losing it,
// or a write whose outcome is unknown (store.ErrIndeterminate), fences
// the term: its store refuses every further write, its connections are
// dropped and its engine is closed. Nothing in memory outlives its term; the
// next term rebuilds from the store.
//
// The listeners stay bound across terms. Each accepted connection goes to
// the current term's protocol server, or, on a follower, to a responder
// (cluster_redirect.go) that refuses it with its protocol's redirect to
// the leader.
//
// Locks: clusterNode.mu guards want and cur; it is never held while a term
// opens or closes (only the run goroutine does either).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/raftstore"
	"github.com/sluicemq/sluice/internal/admin"
	"github.com/sluicemq/sluice/internal/config"
	"github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp091"
	"github.com/sluicemq/sluice/protocol/stomp"
	"github.com/sluicemq/sluice/protocol/stomp/ws"
)

// clusterRetry is how long a leader whose engine failed to open waits
// before trying again.
const clusterRetry = time.Second

// clusterNode is the raft node of a clustered broker and the terms it
// runs.
type clusterNode struct {
	b   *Broker
	cfg *config.Cluster
	rs  *raftstore.Store
	log *slog.Logger

	// follower is the admin server of the follower's role: probes (not
	// ready) and the cluster API.
	follower *admin.Server
	// adminBase are the options of every term's admin server.
	adminBase admin.Options
	// engineBase is the engine configuration of every term, Store aside.
	engineBase engine.Config
	// clients are the messaging listeners (cluster_listen.go).
	clients *clientListeners
	// metrics are the node's sluice_cluster_* series, served by every
	// admin server it runs; stopMetrics ends their sampler.
	metrics     *admin.ClusterMetrics
	stopMetrics context.CancelFunc
	metricsDone chan struct{}

	wake chan struct{} // cap 1: want changed, or closing
	stop chan struct{} // closed by shutdown
	done chan struct{} // closed when run returns

	mu   sync.Mutex
	want raftstore.Leadership // the latest leadership news
	cur  *term                // the serving term; nil on a follower
}

// term is one leadership of this node: an engine and the servers on it.
type term struct {
	epoch   uint64
	store   *fencedStore
	eng     *engine.Broker
	stomp   *stomp.Server
	amqp    *amqp.Server
	amqp091 *amqp091.Server
	admin   *admin.Server
}

// startCluster is Start's path for a configuration with [cluster]: b has
// its configuration, realm and TLS loaded.
func (b *Broker) startCluster(auth *admin.Auth, authMetrics *admin.AuthMetrics) error {
	cl := b.cfg.Cluster
	c := &clusterNode{b: b, cfg: cl, log: b.log.With(slog.String("component", "cluster")),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	policy, err := b.cfg.PolicyFunc()
	if err != nil {
		return err
	}
	dests, err := b.cfg.EngineDestinations()
	if err != nil {
		return err
	}
	latency := admin.NewDeliveryLatency()
	memLimit := memoryLimit(b.cfg, b.log)
	b.restoreGC = setRuntimeLimit(memLimit)
	c.engineBase = engine.Config{
		MemoryLimit:        heldAt(memLimit),
		ObserveDelivery:    latency.Observe,
		ObserveDenied:      authMetrics.Denied,
		StampUserID:        b.cfg.Security.SetUserID,
		Destinations:       dests,
		Logger:             b.log.With(slog.String("component", "engine")),
		Policy:             policy,
		AutoCreate:         b.cfg.AutoCreate,
		ConsumeBeforeStore: b.cfg.ConsumeBeforeStore, // confirmed only by a leader that verified it still leads (fencedStore.Verify)
		ExpiryScanInterval: time.Duration(b.cfg.ExpiryScanInterval),
		WindowMessages:     b.cfg.WindowMessages,
		WindowBytes:        b.cfg.WindowBytes,
		ProviderVersion:    Version,
	}
	c.metrics = admin.NewClusterMetrics(c)
	c.adminBase = admin.Options{Version: Version, Auth: auth, AuthMetrics: authMetrics, Latency: latency,
		Logger: b.log.With(slog.String("component", "admin")), DataDir: b.cfg.Data, Policy: b.cfg.ExplainPolicy, Cluster: c,
		ClusterMetrics: c.metrics}
	fo := c.adminBase
	c.follower = admin.New(fo)
	b.admin = c.follower
	var peers []raftstore.Peer
	for _, m := range cl.Members {
		if m.ID != cl.NodeID {
			peers = append(peers, raftstore.Peer{ID: m.ID, Addr: m.Raft})
		}
	}
	var raftTLS *raftstore.TLS
	if r := b.tls["raft"]; r != nil {
		raftTLS = &raftstore.TLS{Server: r.TLSConfig(), Client: func(addr string) *tls.Config {
			host, _, _ := net.SplitHostPort(addr)
			return r.ClientConfig(host)
		}}
	}
	self, _ := cl.Self()
	rs, err := raftstore.Open(raftstore.Options{
		NodeID:           cl.NodeID,
		BindAddr:         cl.RaftAddr(),
		Advertise:        self.Raft, // the address peers dial, when the node binds 0.0.0.0
		TLS:              raftTLS,
		DataDir:          filepath.Join(b.cfg.Data, "raft"),
		Bootstrap:        cl.Bootstrap,
		Peers:            peers,
		HeartbeatTimeout: time.Duration(cl.HeartbeatTimeout),
		ElectionTimeout:  time.Duration(cl.ElectionTimeout),
		// The lease must not exceed the heartbeat timeout.
		LeaderLeaseTimeout: min(time.Duration(cl.HeartbeatTimeout), 500*time.Millisecond),
		OnLeadership:       c.lead,
		Logger:             b.log.With(slog.String("component", "raft")),
	})
	if err != nil {
		return err
	}
	c.rs = rs
	b.cluster = c
	mctx, stopMetrics := context.WithCancel(context.Background())
	c.stopMetrics, c.metricsDone = stopMetrics, make(chan struct{})
	go func() { defer close(c.metricsDone); c.metrics.Run(mctx) }()
	go c.run()
	if err := b.listenCluster(); err != nil {
		return err
	}
	c.log.Info("cluster node started", slog.String("node_id", cl.NodeID), slog.String("raft", rs.Addr()),
		slog.Int("members", len(cl.Members)), slog.Bool("bootstrap", cl.Bootstrap))
	return nil
}

// lead is raftstore's OnLeadership: it records the news and wakes run. A
// lost leadership fences the serving term at once, so that its engine
// writes nothing more, whatever run is doing.
func (c *clusterNode) lead(l raftstore.Leadership) {
	c.mu.Lock()
	c.want = l
	cur := c.cur
	c.mu.Unlock()
	if cur != nil && (!l.Leader || l.Epoch != cur.epoch) {
		cur.store.fence()
	}
	c.poke()
}

func (c *clusterNode) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run opens and closes terms as leadership comes and goes, until stop.
func (c *clusterNode) run() {
	defer close(c.done)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-c.stop:
			c.closeTerm("shutdown")
			return
		case <-c.wake:
		case <-retry.C:
		}
		c.mu.Lock()
		want, cur := c.want, c.cur
		c.mu.Unlock()
		if cur != nil && (!want.Leader || want.Epoch != cur.epoch || cur.store.fenced()) {
			// Fenced by a write's unknown outcome while still leading:
			// the state may or may not hold that write; the next engine
			// reads which, after a barrier (openTerm) and a pause.
			rebuild := want.Leader && want.Epoch == cur.epoch
			reason := "leadership lost"
			if rebuild {
				reason = "a write's outcome is unknown"
			}
			c.closeTerm(reason)
			if rebuild {
				retry.Reset(clusterRetry)
				continue
			}
			cur = nil
		}
		if cur == nil && want.Leader && c.rs.IsLeader() {
			if err := c.openTerm(want.Epoch); err != nil {
				c.log.Error("leader could not open its engine; retrying", slog.Uint64("epoch", want.Epoch), slog.Any("err", err))
				retry.Reset(clusterRetry)
			}
		}
	}
}

// openTerm opens an engine on the replicated store and its servers, and
// makes them the serving term.
func (c *clusterNode) openTerm(epoch uint64) error {
	b := c.b
	// A new writer generation: every entry of earlier terms, and of an
	// engine fenced by an unknown outcome, is applied here before the
	// engine reads the state, and none of their writes that reach the log
	// later is applied.
	gen, err := c.rs.Begin(raftstore.DefaultApplyTimeout)
	if err != nil {
		return fmt.Errorf("begin the term's writer generation: %w", err)
	}
	fs := &fencedStore{rs: c.rs, gen: gen}
	fs.onIndeterminate = func() { c.poke() }
	ecfg := c.engineBase
	ecfg.Store = fs
	ecfg.Logger = c.engineBase.Logger.With(slog.Uint64("epoch", epoch))
	eng, err := engine.New(context.Background(), ecfg)
	if err != nil {
		fs.fence()
		return fmt.Errorf("open engine: %w", err)
	}
	b.applyDisk(eng.Flow()) // the disk watcher's last word, until its next
	connOpts, err := b.cfg.ConnectionOptions()
	if err != nil {
		_ = eng.Close()
		return err
	}
	t := &term{epoch: epoch, store: fs, eng: eng}
	t.stomp = stomp.NewServer(eng, stomp.Options{Connection: connOpts, DefaultPrefetch: b.cfg.Connection.Prefetch,
		ServerName: "Sluice/" + Version, Realm: b.realm, Logger: b.log.With(slog.String("component", "stomp"))})
	t.amqp091 = amqp091.NewServer(eng, amqp091.Options{Connection: connOpts, DefaultPrefetch: b.cfg.Connection.Prefetch,
		Realm: b.realm, Version: Version, Logger: b.log.With(slog.String("component", "amqp091"))})
	t.amqp = amqp.NewServer(eng, amqp.Options{Connection: connOpts, ContainerID: "sluice", Realm: b.realm,
		Version: Version, Logger: b.log.With(slog.String("component", "amqp"))})
	ao := c.adminBase
	ao.Engine = eng
	t.admin = admin.New(ao)
	t.admin.SetReady(true)
	c.mu.Lock()
	stale := !c.want.Leader || c.want.Epoch != epoch
	if !stale {
		c.cur = t
	}
	c.mu.Unlock()
	if stale {
		c.shutdownTerm(t)
		return nil
	}
	if err := c.clients.termOpened(); err != nil {
		c.closeTerm("its client listeners could not be bound")
		return fmt.Errorf("bind the client listeners: %w", err)
	}
	c.metrics.TermServed()
	c.log.Info("leader: serving clients", slog.Uint64("epoch", epoch))
	return nil
}

// closeTerm fences the serving term, if any, drops its clients and closes
// its engine.
func (c *clusterNode) closeTerm(reason string) {
	c.mu.Lock()
	t := c.cur
	c.cur = nil
	c.mu.Unlock()
	if t == nil {
		return
	}
	c.log.Warn("no longer serving clients: engine closed", slog.Uint64("epoch", t.epoch), slog.String("reason", reason))
	c.clients.termClosed()
	c.shutdownTerm(t)
}

func (c *clusterNode) shutdownTerm(t *term) {
	t.store.fence()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range []server{t.stomp, t.amqp, t.amqp091} {
		if err := s.Shutdown(ctx); err != nil {
			c.log.Warn("protocol server shutdown", slog.Any("err", err))
		}
	}
	t.admin.SetReady(false)
	t.admin.Close()
	if err := t.eng.Close(); err != nil {
		c.log.Warn("engine close", slog.Any("err", err))
	}
}

// current returns the serving term, nil on a follower.
func (c *clusterNode) current() *term {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// shutdown ends the term, hands the leadership over if this node has it,
// and closes the raft node.
func (c *clusterNode) shutdown() error {
	close(c.stop)
	<-c.done
	c.handOff()
	c.stopMetrics()
	<-c.metricsDone
	c.follower.Close()
	return c.rs.Close()
}

// handOffTimeout bounds the leadership transfer of a stopping leader.
const handOffTimeout = 5 * time.Second

// handOff transfers the leadership of a stopping node, if it leads, to
// another voter: with its term closed it has no write in flight, and the
// cluster gets its next leader after a round trip rather than after the
// followers' heartbeat timeout and an election. A failed transfer only
// costs that wait.
func (c *clusterNode) handOff() {
	if !c.rs.IsLeader() {
		return
	}
	start := time.Now()
	id, err := c.rs.TransferLeadership("", handOffTimeout)
	switch {
	case errors.Is(err, raftstore.ErrNoTransferTarget):
	case err != nil:
		c.log.Warn("stopping leader could not hand its leadership over; the others elect one after their heartbeat timeout", slog.Any("err", err))
	default:
		c.log.Info("stopping leader handed its leadership over", slog.String("to", id), slog.Duration("took", time.Since(start)))
	}
}

// ClusterTransfer is admin.Cluster's Transfer: hands the leadership to
// the voter to ("": raft's pick), on the leader, and returns the new
// leader's ID. This node's clients are dropped as its term ends; they
// find the new leader by the redirects.
func (c *clusterNode) ClusterTransfer(to string) (string, error) {
	id, err := c.rs.TransferLeadership(to, membershipTimeout)
	return id, clusterErr(err)
}

// leaderMember returns the member entry of the leader this node knows of.
func (c *clusterNode) leaderMember() (config.Member, bool) {
	id, _ := c.rs.Leader()
	if id == "" {
		return config.Member{}, false
	}
	return c.cfg.Member(id)
}

// ClusterStatus is admin.Cluster's Status.
func (c *clusterNode) ClusterStatus() (admin.ClusterStatus, error) {
	st, err := c.rs.Status()
	out := admin.ClusterStatus{NodeID: c.cfg.NodeID, Role: strings.ToLower(st.State), Term: st.Term, Leader: st.LeaderID,
		CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, LastIndex: st.LastIndex}
	if t := c.current(); t != nil {
		out.Serving, out.Epoch = true, t.epoch
	}
	if !st.LastContact.IsZero() {
		lc := st.LastContact
		out.LastContact = &lc
	}
	for _, m := range st.Members {
		cm := admin.ClusterMember{ID: m.ID, Raft: m.Addr, Voter: m.Voter, Leader: m.ID == st.LeaderID, Self: m.ID == c.cfg.NodeID}
		if st.State == "Leader" && !cm.Self {
			reachable := !m.Unreachable
			cm.Reachable = &reachable
			if m.Unreachable && !m.LastContact.IsZero() {
				lc := m.LastContact
				cm.LastContact = &lc
			}
		}
		if conf, ok := c.cfg.Member(m.ID); ok {
			cm.STOMP, cm.STOMPS, cm.AMQP, cm.AMQPS = conf.STOMP, conf.STOMPS, conf.AMQP, conf.AMQPS
			cm.AMQP091, cm.WebSocket, cm.Admin = conf.AMQP091, conf.WebSocket, conf.Admin
		}
		out.Members = append(out.Members, cm)
	}
	if err != nil {
		return out, err
	}
	return out, nil
}

// membershipTimeout bounds a join or a leave.
const membershipTimeout = 10 * time.Second

// ClusterJoin is admin.Cluster's Join: adds a voter, on the leader.
func (c *clusterNode) ClusterJoin(id, raftAddr string) error {
	return clusterErr(c.rs.AddVoter(id, raftAddr, membershipTimeout))
}

// ClusterLeave is admin.Cluster's Leave: removes a member, on the leader.
func (c *clusterNode) ClusterLeave(id string) error {
	return clusterErr(c.rs.RemoveServer(id, membershipTimeout))
}

func clusterErr(err error) error {
	if errors.Is(err, raftstore.ErrNoTransferTarget) {
		return fmt.Errorf("%w: %w", admin.ErrRefused, err)
	}
	var nl *raftstore.NotLeaderError
	if errors.As(err, &nl) {
		return fmt.Errorf("%w: %w", admin.ErrNotLeader, err)
	}
	return err
}

// errFenced is the error of a write of a term that has ended.
var errFenced = errors.New("cluster: this node's leadership term has ended; the write was not made")

// fencedStore is the engine's store in one term: the raft store, refusing
// every write once the term is fenced. A write whose outcome is unknown
// (store.ErrIndeterminate) fences the term itself, so the engine that
// saw it makes no further write and is rebuilt from the store. Its writes
// carry the term's writer generation (raftstore.Store.Begin), so a write
// it had queued before it was fenced, which reaches the log after the next
// term began, is applied nowhere (raftstore.ErrStale).
type fencedStore struct {
	rs              *raftstore.Store
	gen             uint64 // the term's writer generation; 0 in tests of the fence alone
	onIndeterminate func()
	closed          atomic.Bool
}

var (
	_ store.Submitter = (*fencedStore)(nil)
	_ store.Lingerer  = (*fencedStore)(nil)
	_ store.Verifier  = (*fencedStore)(nil)
)

func (s *fencedStore) fence()       { s.closed.Store(true) }
func (s *fencedStore) fenced() bool { return s.closed.Load() }

// check fences on an indeterminate outcome and passes err on.
func (s *fencedStore) check(err error) error {
	if err != nil && errors.Is(err, store.ErrIndeterminate) && !s.closed.Swap(true) {
		s.onIndeterminate()
	}
	return err
}

// Update is the raft store's, refused once fenced.
func (s *fencedStore) Update(ctx context.Context, ops []store.Op) error {
	if s.fenced() {
		return errFenced
	}
	return s.check(s.rs.UpdateGen(ctx, s.gen, ops))
}

// UpdateLinger is Update.
func (s *fencedStore) UpdateLinger(ctx context.Context, ops []store.Op, _ time.Duration) error {
	return s.Update(ctx, ops)
}

// Submit is the raft store's, refused once fenced.
func (s *fencedStore) Submit(ops []store.Op, linger time.Duration) store.Pending {
	if s.fenced() {
		return donePending{err: errFenced}
	}
	return &fencedPending{Pending: s.rs.SubmitGen(s.gen, ops, linger), s: s}
}

// HoldFunc is the raft store's, refused once fenced: the engine holds a
// message's first write with it (consume before store).
func (s *fencedStore) HoldFunc(makeOps func() []store.Op, hold time.Duration) store.Pending {
	if s.fenced() {
		return donePending{err: errFenced}
	}
	return &fencedPending{Pending: s.rs.HoldFuncGen(s.gen, makeOps, hold), s: s}
}

// Verify is the raft store's for the term's generation: it confirms that
// this node still leads in the leadership that began the term.
func (s *fencedStore) Verify() store.Pending {
	if s.fenced() {
		return donePending{err: errFenced}
	}
	return &fencedPending{Pending: s.rs.VerifyGen(s.gen), s: s}
}

func (s *fencedStore) ForEach(bucket string, fn func(key, value []byte) error) error {
	return s.rs.ForEach(bucket, fn)
}

func (s *fencedStore) Get(bucket string, keys [][]byte, fn func(i int, value []byte) error) error {
	return s.rs.Get(bucket, keys, fn)
}

func (s *fencedStore) Range(bucket string, from []byte, limit int, fn func(key, value []byte) error) error {
	return s.rs.Range(bucket, from, limit, fn)
}

func (s *fencedStore) Buckets(fn func(name string) error) error { return s.rs.Buckets(fn) }

// Close fences the term; the raft store lives on (the broker closes it).
func (s *fencedStore) Close() error {
	s.fence()
	return nil
}

// fencedPending reports an indeterminate outcome to its store.
type fencedPending struct {
	store.Pending
	s *fencedStore
}

func (p *fencedPending) Err() error { return p.s.check(p.Pending.Err()) }

// donePending is a write refused before it was queued.
type donePending struct{ err error }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (p donePending) Done() <-chan struct{} { return closedChan }
func (p donePending) Err() error            { return p.err }
func (p donePending) Withdraw() bool        { return false }

// listenCluster binds the messaging listeners (clientListeners: now, or
// with follower_clients = "refuse" while a term serves), whose connections
// go to the serving term or to the redirect responders, and the admin
// listener.
func (b *Broker) listenCluster() error {
	c := b.cluster
	l := b.cfg.Listeners
	c.clients = &clientListeners{b: b, c: c}
	if err := c.clients.start(); err != nil {
		return err
	}
	var adminHandler http.Handler = http.HandlerFunc(c.serveAdmin)
	if l.AdminWebSocket && l.Admin != "" {
		var err error
		if adminHandler, err = b.withWebSocket(clusterConns{c: c, listener: "admin_websocket"}, l.Admin, adminHandler); err != nil {
			return err
		}
	}
	if addr := l.Admin; addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("admin listener %s: %w", addr, err)
		}
		b.addrs["admin"] = ln.Addr()
		served := net.Listener(ln)
		if r := b.tls["admin"]; r != nil {
			served = tls.NewListener(ln, r.TLSConfig())
		}
		b.httpSrv = &http.Server{Handler: adminHandler, ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(b.log.With(slog.String("component", "admin")).Handler(), slog.LevelDebug)}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if err := b.httpSrv.Serve(served); err != nil && !errors.Is(err, http.ErrServerClosed) {
				b.log.Error("admin listener stopped", slog.Any("err", err))
			}
		}()
		b.log.Info("listening", slog.String("protocol", "admin-http"), slog.String("addr", ln.Addr().String()),
			slog.Bool("tls", b.tls["admin"] != nil), slog.Bool("websocket", l.AdminWebSocket))
	}
	return nil
}

// protoKind is what a messaging listener speaks.
type protoKind int

const (
	kindSTOMP   protoKind = iota
	kindAMQP              // AMQP 1.0 and 0-9-1, told apart by the header
	kindAMQP091           // AMQP 0-9-1 only
)

// clusterConns is the ws.ConnServer of a cluster's WebSocket listener
// (listener "websocket", or "admin_websocket" for /ws of the admin one):
// it routes each upgraded connection as a STOMP connection.
type clusterConns struct {
	c        *clusterNode
	listener string
}

// ServeConn serves nc with the serving term's STOMP server, or refuses it
// naming the leader's URL for the listener.
func (cc clusterConns) ServeConn(nc net.Conn) { cc.c.route(nc, kindSTOMP, cc.listener) }

// accept hands ln's connections to the serving term or the redirect
// responder until ln is closed; name is the listener's (its key in
// [listeners]), for the redirect's address.
func (c *clusterNode) accept(ln net.Listener, kind protoKind, name string) {
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			if !errors.Is(err, net.ErrClosed) {
				c.log.Error("listener stopped", slog.String("protocol", name), slog.Any("err", err))
			}
			return
		}
		delay = 0
		go c.route(nc, kind, name)
	}
}

// route serves nc, a connection of the listener named listener, with the
// serving term's server for its protocol, or refuses it with a redirect
// to the leader's address for the same listener.
func (c *clusterNode) route(nc net.Conn, kind protoKind, listener string) {
	var conn net.Conn = nc
	is091Conn := kind == kindAMQP091
	if kind == kindAMQP {
		_ = nc.SetReadDeadline(time.Now().Add(sniffTimeout))
		hdr := make([]byte, 8)
		n, err := io.ReadFull(nc, hdr)
		_ = nc.SetReadDeadline(time.Time{})
		is091Conn = err == nil && is091(hdr)
		conn = &peekedConn{Conn: nc, head: hdr[:n]}
	}
	t := c.current()
	if t != nil && !t.store.fenced() {
		switch {
		case kind == kindSTOMP:
			t.stomp.ServeConn(conn)
		case is091Conn:
			t.amqp091.ServeConn(conn)
		default:
			t.amqp.ServeConn(conn)
		}
		return
	}
	rd := c.redirectFor(listener)
	switch {
	case kind == kindSTOMP:
		refuseSTOMP(conn, rd)
	case is091Conn:
		refuseAMQP091(conn, rd)
	default:
		refuseAMQP(conn, rd)
	}
}

// redirectFor is where a node that serves no clients sends a client of
// the listener named listener: the leader's advertised address for that
// listener (a URL for the WebSocket ones, ws:// or wss:// as this node
// serves them), none when its members entry has none or the leader is
// this node.
func (c *clusterNode) redirectFor(listener string) redirect {
	m, known := c.leaderMember()
	switch {
	case !known:
		return redirect{}
	case m.ID == c.cfg.NodeID:
		return redirect{known: true, self: true}
	}
	rd := redirect{known: true, addr: m.Addr(listener)}
	l := c.b.cfg.Listeners
	switch listener {
	case "websocket":
		rd.addr = webSocketURL(l.WebSocketTLS, m.WebSocket)
	case "admin_websocket":
		rd.addr = webSocketURL(c.b.tls["admin"] != nil, m.Admin)
	case "amqp091":
		if m.AMQP091 == "" {
			// Its amqp listener serves AMQP 0-9-1 too (sniff.go).
			rd.addr = m.AMQP
		}
	}
	return rd
}

// webSocketURL is the STOMP-over-WebSocket URL at host:port addr ("" for
// none).
func webSocketURL(secure bool, addr string) string {
	if addr == "" {
		return ""
	}
	if secure {
		return "wss://" + addr + ws.Path
	}
	return "ws://" + addr + ws.Path
}

// serveAdmin answers the admin listener: the serving term's admin server
// on the leader; on a follower its own admin server (the probes, not
// ready; the cluster API; the console's session and pages; /metrics), and
// for the rest 503 naming the leader's admin address.
func (c *clusterNode) serveAdmin(w http.ResponseWriter, r *http.Request) {
	if t := c.current(); t != nil {
		t.admin.ServeHTTP(w, r)
		return
	}
	if c.follower.Handles(r) {
		c.follower.ServeHTTP(w, r)
		return
	}
	msg := "this node is a follower: it serves no clients and no management API"
	if m, ok := c.leaderMember(); ok && m.Admin != "" {
		msg += "; the leader's admin listener is " + m.Admin
		w.Header().Set("X-Sluice-Leader", m.Admin)
	} else {
		msg += "; no leader is known yet"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = fmt.Fprintf(w, "{\"error\":%q}\n", msg)
}
