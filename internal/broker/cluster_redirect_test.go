package broker

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"
	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/internal/config"
)

// A follower sends each client to the leader's listener of the kind the
// client came in on: a stomps client to the leader's stomps address, an
// amqps client (amqp:connection:redirect) to its amqps one, a WebSocket
// client to its WebSocket URL (wss:// here, as the listener is TLS; ws://
// for /ws of the plain admin listener). The leader serves STOMP over both
// WebSocket listeners. Every node, follower or leader, reloads replaced
// TLS files by itself.
func TestClusterRedirectsToTheLeadersListenerOfTheSameKind(t *testing.T) {
	s := newTLSSetup(t)
	a := freeAddrs(t, 21)
	var members []config.Member
	for i := range 3 {
		x := a[7*i:]
		members = append(members, config.Member{ID: fmt.Sprintf("n%d", i+1), Raft: x[0], STOMP: x[1], STOMPS: x[2],
			AMQP: x[3], AMQPS: x[4], WebSocket: x[5], Admin: x[6]})
	}
	c := &testCluster{t: t, opts: startOptions{tlsPoll: 20 * time.Millisecond}}
	for i, m := range members {
		cfg := s.config(t)
		cfg.ConsumeBeforeStore = false
		cfg.Listeners = config.Listeners{STOMP: m.STOMP, STOMPS: m.STOMPS, AMQP: m.AMQP, AMQPS: m.AMQPS,
			WebSocket: m.WebSocket, WebSocketTLS: true, Admin: m.Admin, AdminWebSocket: true}
		cfg.Cluster = &config.Cluster{NodeID: m.ID, Bootstrap: true, Members: members}
		c.cfgs = append(c.cfgs, cfg)
		c.nodes = append(c.nodes, nil)
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	l := c.leader(15 * time.Second)
	leader := members[l]
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: s.client()}}

	// The leader serves STOMP over wss and over /ws of the admin listener.
	for _, url := range []string{"wss://" + leader.WebSocket + "/ws", "ws://" + leader.Admin + "/ws"} {
		w, _, err := dialWS(t, url, &websocket.DialOptions{HTTPClient: hc})
		if err != nil {
			t.Fatalf("leader %s: %v", url, err)
		}
		if cmd, rest := w.connect(); cmd != "CONNECTED" {
			t.Fatalf("leader %s: CONNECT answered %s %q", url, cmd, rest)
		}
		w.send("SEND", "hello", "destination", "/queue/ws", "receipt", "r1")
		if cmd, rest := w.next(); cmd != "RECEIPT" {
			t.Fatalf("leader %s: SEND answered %s %q", url, cmd, rest)
		}
	}

	for f, fm := range members {
		if f == l {
			continue
		}
		// stomps: an ERROR naming the leader's stomps address.
		d := &net.Dialer{Timeout: 5 * time.Second}
		tc, err := tls.DialWithDialer(d, "tcp", fm.STOMPS, s.client())
		if err != nil {
			t.Fatalf("n%d stomps: %v", f+1, err)
		}
		if sc, err := stomp.Connect(tc, stomp.ConnOpt.HeartBeat(0, 0)); err == nil {
			_ = sc.Disconnect()
			t.Errorf("n%d (follower) accepted a stomps connection", f+1)
		} else if !strings.Contains(err.Error(), "the leader is at "+leader.STOMPS) {
			t.Errorf("stomps refusal %q does not name the leader's stomps %s", err, leader.STOMPS)
		}
		_ = tc.Close()

		// amqps: amqp:connection:redirect to the leader's amqps host and port.
		ac, err := dialAMQP("amqps://"+fm.AMQPS, s.client())
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err = ac.NewSession(ctx, nil)
			cancel()
			_ = ac.Close()
		}
		var ce *amqp.ConnError
		host, port, _ := net.SplitHostPort(leader.AMQPS)
		switch {
		case err == nil:
			t.Errorf("n%d (follower) accepted an amqps connection", f+1)
		case !errors.As(err, &ce) || ce.RemoteErr == nil || ce.RemoteErr.Condition != "amqp:connection:redirect":
			t.Errorf("amqps refusal %v, want amqp:connection:redirect", err)
		case fmt.Sprint(ce.RemoteErr.Info["network-host"]) != host || fmt.Sprint(ce.RemoteErr.Info["port"]) != port:
			t.Errorf("amqps redirect info %v, want network-host %s port %s", ce.RemoteErr.Info, host, port)
		}

		// WebSocket: the upgrade succeeds; CONNECT is answered ERROR with
		// the leader's URL for that listener, in the message header too.
		for _, x := range []struct{ url, want string }{
			{"wss://" + fm.WebSocket + "/ws", "wss://" + leader.WebSocket + "/ws"},
			{"ws://" + fm.Admin + "/ws", "ws://" + leader.Admin + "/ws"},
		} {
			w, _, err := dialWS(t, x.url, &websocket.DialOptions{HTTPClient: hc})
			if err != nil {
				t.Fatalf("n%d %s: %v", f+1, x.url, err)
			}
			cmd, rest := w.connect()
			rest = strings.ReplaceAll(rest, `\c`, ":") // STOMP 1.2 header escaping
			if cmd != "ERROR" || !strings.Contains(rest, "\nleader:"+x.want+"\n") || !strings.Contains(rest, "the leader is at "+x.want+"\n") {
				t.Errorf("n%d %s: CONNECT answered %s %q, want an ERROR naming %s", f+1, x.url, cmd, rest, x.want)
			}
		}
	}

	// /api/cluster lists every member's listener addresses.
	resp, err := client.Get("http://" + leader.Admin + "/api/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Members []struct{ ID, STOMP, STOMPS, AMQP, AMQPS, WebSocket, Admin string }
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || len(st.Members) != 3 {
		t.Fatalf("/api/cluster: %+v, %v", st, err)
	}
	for _, m := range st.Members {
		want := members[m.ID[1]-'1']
		if m.STOMP != want.STOMP || m.STOMPS != want.STOMPS || m.AMQP != want.AMQP || m.AMQPS != want.AMQPS || m.WebSocket != want.WebSocket || m.Admin != want.Admin {
			t.Errorf("/api/cluster member %+v, want the addresses of %+v", m, want)
		}
	}

	next := s.ca.Server(t, "127.0.0.1")
	next.Write(t, filepath.Join(s.dir, "tls"), "server")
	for i, m := range members {
		for _, addr := range []string{m.STOMPS, m.AMQPS, m.WebSocket} {
			deadline := time.Now().Add(30 * time.Second)
			for !isCert(peerCert(t, addr, s.client()), next) {
				if time.Now().After(deadline) {
					t.Fatalf("n%d did not reload the replaced certificate for %s", i+1, addr)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

// What a refused client is told, in each state of the leadership.
func TestRedirectText(t *testing.T) {
	for _, tt := range []struct {
		rd   redirect
		want string
	}{
		{redirect{}, "no leader is elected yet; try another node"},
		{redirect{known: true, addr: "10.0.0.2:61613"}, "the leader is at 10.0.0.2:61613"},
		{redirect{known: true}, "the leader's address for this protocol is not configured (cluster.members)"},
		{redirect{known: true, self: true}, "this node leads its Sluice cluster but is not serving clients at the moment"},
	} {
		if got := tt.rd.text(); !strings.Contains(got, tt.want) {
			t.Errorf("%+v: %q, want it to say %q", tt.rd, got, tt.want)
		}
	}
}
