#!/usr/bin/python3
"""Interop scenarios for Sluice's STOMP server with stomp.py (Debian's python3-stomp).

Usage: stomp_py.py PORT SCENARIO

PORT is the STOMP port of a running Sluice on 127.0.0.1 (SLUICE_STOMP_PORT is
used when PORT is "-"). Each scenario prints what it checks and ends with the
line "PASS SCENARIO"; any failed check prints "FAIL SCENARIO: reason" and
exits 1. Every wait is bounded (WAIT seconds), so a missing frame fails fast
instead of hanging. Destination names are per scenario, so scenarios do not
see each other's messages even on one broker.

interop/stomp_test.go (build tag interop) starts the broker and runs these.
"""

import os
import queue
import socket
import ssl
import sys
import threading
import time
import traceback

import stomp

HOST = "127.0.0.1"
WAIT = 10.0  # seconds for any one expected frame


class Fail(Exception):
    """A failed check."""


def check(cond, what, *detail):
    if not cond:
        raise Fail(what + ("" if not detail else ": " + " ".join(repr(d) for d in detail)))
    print("ok   " + what, flush=True)


class Collector(stomp.ConnectionListener):
    """Records every frame stomp.py hands the application."""

    def __init__(self, name):
        self.name = name
        self.connected = None
        self.messages = queue.Queue()
        self.receipts = queue.Queue()
        self.errors = queue.Queue()
        self.heartbeat = threading.Event()
        self.disconnected = threading.Event()
        self.timed_out = threading.Event()

    def on_connected(self, frame):
        self.connected = frame

    def on_message(self, frame):
        self.messages.put(frame)

    def on_receipt(self, frame):
        self.receipts.put(frame.headers.get("receipt-id"))

    def on_error(self, frame):
        self.errors.put(frame)

    def on_heartbeat(self):
        self.heartbeat.set()

    def on_disconnected(self):
        self.disconnected.set()

    def on_heartbeat_timeout(self):
        print("     %s: stomp.py reports a heart-beat timeout" % self.name, flush=True)
        self.timed_out.set()

    def message(self, what):
        """The next MESSAGE, or a failure naming what was expected."""
        try:
            m = self.messages.get(timeout=WAIT)
        except queue.Empty:
            self._no_errors(what)
            raise Fail("%s: no MESSAGE within %ss (%s)" % (self.name, WAIT, what))
        return m

    def receipt(self, rid):
        """Waits for RECEIPT receipt-id:rid; receipts arrive in order."""
        try:
            got = self.receipts.get(timeout=WAIT)
        except queue.Empty:
            self._no_errors("receipt " + rid)
            raise Fail("%s: no RECEIPT %s within %ss" % (self.name, rid, WAIT))
        if got != rid:
            raise Fail("%s: RECEIPT %r, want %r" % (self.name, got, rid))

    def error(self, what):
        try:
            return self.errors.get(timeout=WAIT)
        except queue.Empty:
            raise Fail("%s: no ERROR within %ss (%s)" % (self.name, WAIT, what))

    def _no_errors(self, what):
        try:
            e = self.errors.get_nowait()
        except queue.Empty:
            return
        raise Fail("%s: ERROR while waiting for %s: %s %s" % (
            self.name, what, e.headers.get("message"), (e.body or "").strip()))


class Client:
    """A STOMP 1.2 connection with a Collector and receipt helpers."""

    _seq = 0

    def __init__(self, port, name, heartbeats=(0, 0), headers=None, stomp_command=False, version="1.2",
                 ca_certs=None):
        self.name = name
        self.version = version
        if version == "1.0":
            self.conn = stomp.Connection10([(HOST, port)], reconnect_attempts_max=1, timeout=WAIT)
        else:
            cls = stomp.Connection11 if version == "1.1" else stomp.Connection12
            self.conn = cls([(HOST, port)], heartbeats=heartbeats, reconnect_attempts_max=1, timeout=WAIT)
        if ca_certs:
            # TLS, verifying the broker's certificate against ca_certs.
            self.conn.set_ssl(for_hosts=[(HOST, port)], ca_certs=ca_certs)
        self.col = Collector(name)
        self.conn.set_listener("collector", self.col)
        if version == "1.2":
            # stomp.py opens 1.2 with a STOMP frame by default; CONNECT is
            # what most clients send, so use it unless asked.
            self.conn.connect(wait=True, headers=dict(headers or {}), with_connect_command=not stomp_command)
        else:
            self.conn.connect(wait=True, headers=dict(headers or {}))
        if self.col.connected is None:
            raise Fail(name + ": no CONNECTED frame")

    def rid(self, what):
        Client._seq += 1
        return "%s-%s-%d" % (self.name, what, Client._seq)

    def send(self, dest, body, receipt=True, **headers):
        hdrs = dict(headers)
        rid = None
        if receipt:
            rid = self.rid("send")
            hdrs["receipt"] = rid
        ct = hdrs.pop("content_type", None)
        self.conn.send(dest, body, content_type=ct, headers=hdrs)
        if rid:
            self.col.receipt(rid)

    def subscribe(self, dest, sid, ack="auto", **headers):
        rid = self.rid("sub")
        hdrs = dict(headers)
        hdrs["receipt"] = rid
        self.conn.subscribe(dest, sid, ack=ack, headers=hdrs)
        self.col.receipt(rid)

    def unsubscribe(self, sid, **headers):
        rid = self.rid("unsub")
        hdrs = dict(headers)
        hdrs["receipt"] = rid
        self.conn.unsubscribe(sid, headers=hdrs)
        self.col.receipt(rid)

    def ack(self, m, transaction=None):
        rid = self.rid("ack")
        self.conn.ack(m.headers["ack"], transaction=transaction, receipt=rid)
        self.col.receipt(rid)

    def nack(self, m):
        rid = self.rid("nack")
        self.conn.nack(m.headers["ack"], receipt=rid)
        self.col.receipt(rid)

    def begin(self, tx):
        rid = self.rid("begin")
        self.conn.begin(tx, headers={"receipt": rid})
        self.col.receipt(rid)

    def commit(self, tx):
        rid = self.rid("commit")
        self.conn.commit(tx, headers={"receipt": rid})
        self.col.receipt(rid)

    def abort(self, tx):
        rid = self.rid("abort")
        self.conn.abort(tx, headers={"receipt": rid})
        self.col.receipt(rid)

    def message(self, what):
        return self.col.message(what)

    def close(self):
        """DISCONNECT with a receipt, waiting for it and for the close."""
        if self.conn.is_connected():
            self.conn.disconnect(receipt=self.rid("bye"))
        self.col.disconnected.wait(WAIT)


def hdr(m, name):
    return m.headers.get(name)


# --- scenarios -----------------------------------------------------------


def scenario_heartbeat(port):
    """CONNECT 1.2 with heart-beats: negotiation, a server beat, still usable."""
    c = Client(port, "hb", heartbeats=(1000, 1000), stomp_command=True)
    cf = c.col.connected
    check(hdr(cf, "version") == "1.2", "CONNECTED version 1.2", hdr(cf, "version"))
    # The server offers 10s,10s; the client can send every 1s and wants one
    # every 1s, so both directions settle on the larger, 10s.
    check(hdr(cf, "heart-beat") == "10000,10000", "CONNECTED heart-beat 10000,10000", hdr(cf, "heart-beat"))
    check((hdr(cf, "server") or "").startswith("Sluice/"), "CONNECTED server Sluice/<version>", hdr(cf, "server"))
    check(bool(hdr(cf, "session")), "CONNECTED session", hdr(cf, "session"))
    # A quiet connection: the server must beat within its 10s interval (plus slack).
    t0 = time.monotonic()
    check(c.col.heartbeat.wait(12), "server heart-beat received while idle (10s interval)")
    print("     first server heart-beat after %.1fs" % (time.monotonic() - t0), flush=True)
    # A frame right after a beat, then quiet again: the next beat must still
    # come within the interval of the last frame. stomp.py gives the server
    # 1.5 times the interval (15s) before it declares the connection dead.
    c.subscribe("/queue/py.hb", "1")
    c.send("/queue/py.hb", "between beats", content_type="text/plain")
    m = c.message("message between heart-beats")
    last = time.monotonic()
    c.col.heartbeat.clear()
    got = c.col.heartbeat.wait(16)
    gap = time.monotonic() - last
    check(got and not c.col.timed_out.is_set(), "next server heart-beat within the interval of the last frame",
          "%.1fs" % gap)
    check(gap < 11.5, "heart-beat gap at most the negotiated 10s (+ slack)", "%.1fs" % gap)
    check(c.conn.is_connected(), "connection alive after the idle periods")
    c.send("/queue/py.hb", "after beats", content_type="text/plain")
    m = c.message("message after heart-beats")
    check(m.body == "after beats", "send/receive after heart-beats", m.body)
    c.close()
    check(c.col.errors.empty(), "no ERROR frames")


def scenario_versions(port):
    """STOMP 1.0 and 1.1 clients: version negotiation, ACK/NACK by message-id."""
    c10 = Client(port, "v10", version="1.0")
    check(hdr(c10.col.connected, "version") == "1.0", "stomp.py 1.0 negotiates 1.0", hdr(c10.col.connected, "version"))
    dest = "/queue/py.versions"
    c10.subscribe(dest, "s10", ack="client")
    c10.send(dest, "for 1.0", content_type="text/plain")
    m = c10.message("1.0 message")
    check(m.body == "for 1.0" and "ack" not in m.headers, "1.0 MESSAGE (no ack header)", m.body, hdr(m, "ack"))
    rid = c10.rid("ack")
    c10.conn.ack(hdr(m, "message-id"), receipt=rid)
    c10.col.receipt(rid)
    check(True, "1.0 ACK by message-id")
    c10.close()

    c11 = Client(port, "v11", version="1.1", heartbeats=(0, 0))
    check(hdr(c11.col.connected, "version") == "1.1", "stomp.py 1.1 negotiates 1.1", hdr(c11.col.connected, "version"))
    c11.subscribe(dest, "s11", ack="client-individual")
    c11.send(dest, "for 1.1", content_type="text/plain", **{"x-colon": "a:b"})
    m = c11.message("1.1 message")
    check(m.body == "for 1.1" and hdr(m, "x-colon") == "a:b", "1.1 MESSAGE with an escaped header",
          m.body, hdr(m, "x-colon"))
    rid = c11.rid("nack")
    c11.conn.nack(hdr(m, "message-id"), "s11", receipt=rid)
    c11.col.receipt(rid)
    m2 = c11.message("1.1 redelivery")
    check(m2.body == "for 1.1" and hdr(m2, "redelivered") == "true" and hdr(m2, "JMSXDeliveryCount") == "2",
          "1.1 NACK by message-id + subscription redelivers", m2.body, hdr(m2, "redelivered"),
          hdr(m2, "JMSXDeliveryCount"))
    rid = c11.rid("ack")
    c11.conn.ack(hdr(m2, "message-id"), "s11", receipt=rid)
    c11.col.receipt(rid)
    c11.send(dest, "marker", content_type="text/plain")
    m = c11.message("marker")
    check(m.body == "marker", "1.1 ACK by message-id + subscription removes it", m.body)
    rid = c11.rid("ack")
    c11.conn.ack(hdr(m, "message-id"), "s11", receipt=rid)
    c11.col.receipt(rid)
    c11.close()


def scenario_queue(port):
    """SEND/MESSAGE on a queue: persistent, JMS headers, custom properties, escaping, bodies."""
    c = Client(port, "queue")
    dest = "/queue/py.orders"
    c.send(dest, "hello h\u00e9llo \u2713", content_type="text/plain",
           persistent="true", priority="7", **{
               "correlation-id": "corr-1", "type": "order", "reply-to": "/queue/py.replies",
               "region": "emea", "x-escaped": "a:b\\c\nd"})
    c.send(dest, "raw bytes", persistent="false")  # stomp.py adds content-length: a bytes message
    big = "".join(chr(0x41 + i % 26) for i in range(1 << 20))
    c.send(dest, big, content_type="text/plain")
    c.subscribe(dest, "orders")
    m = c.message("first order")
    want = {
        "destination": dest, "subscription": "orders", "persistent": "true", "priority": "7",
        "correlation-id": "corr-1", "type": "order", "reply-to": "/queue/py.replies",
        "region": "emea", "x-escaped": "a:b\\c\nd", "JMSXDeliveryCount": "1",
        "x-delivery-count": "1", "content-type": "text/plain",
    }
    for k, v in want.items():
        check(hdr(m, k) == v, "MESSAGE header %s = %r" % (k, v), hdr(m, k))
    check(m.body == "hello h\u00e9llo \u2713", "UTF-8 text body round trip", m.body)
    check((hdr(m, "message-id") or "").startswith("ID:"), "message-id is a JMS ID", hdr(m, "message-id"))
    check(hdr(m, "redelivered") is None, "first delivery not redelivered", hdr(m, "redelivered"))
    check(int(hdr(m, "timestamp")) > 1600000000000, "timestamp in epoch ms", hdr(m, "timestamp"))
    check(hdr(m, "expires") == "0", "expires 0 (never)", hdr(m, "expires"))
    check("ack" not in m.headers, "no ack header for ack:auto", hdr(m, "ack"))
    m2 = c.message("second order")
    check(m2.body == "raw bytes", "bytes body round trip", m2.body)
    check(hdr(m2, "persistent") == "false", "persistent:false kept", hdr(m2, "persistent"))
    check(hdr(m2, "content-length") == str(len("raw bytes")), "bytes message has content-length",
          hdr(m2, "content-length"))
    m3 = c.message("1 MiB message")
    check(m3.body == big, "1 MiB body round trip", len(m3.body or ""))
    c.close()


def scenario_persist_send(port):
    """Phase 1 of the restart test: one persistent and one non-persistent message."""
    c = Client(port, "psend")
    c.send("/queue/py.durable-q", "kept", content_type="text/plain", persistent="true", keep="yes")
    c.send("/queue/py.durable-q", "lost", content_type="text/plain", persistent="false")
    c.close()


def scenario_persist_recv(port):
    """Phase 2, after the broker restarted on the same data: only the persistent one."""
    c = Client(port, "precv")
    c.subscribe("/queue/py.durable-q", "q", ack="client-individual")
    m = c.message("the persistent message after restart")
    check(m.body == "kept", "persistent message survived the restart", m.body)
    check(hdr(m, "keep") == "yes" and hdr(m, "persistent") == "true", "its headers survived too",
          hdr(m, "keep"), hdr(m, "persistent"))
    c.ack(m)
    c.send("/queue/py.durable-q", "marker", content_type="text/plain")
    m = c.message("marker")
    check(m.body == "marker", "the non-persistent message did not survive", m.body)
    c.ack(m)
    c.close()


def scenario_selector(port):
    """Topic fan-out with selectors on a property and on JMSPriority."""
    c = Client(port, "sel")
    p = Client(port, "selpub")
    dest = "/topic/py.prices"
    c.subscribe(dest, "all")
    c.subscribe(dest, "red", selector="color = 'red'")
    c.subscribe(dest, "urgent", selector="JMSPriority >= 7 AND color IN ('blue', 'red')")
    p.send(dest, "blue-low", color="blue", priority="1")
    p.send(dest, "red-low", color="red", priority="2")
    p.send(dest, "blue-high", color="blue", priority="8")
    p.send(dest, "green-high", color="green", priority="9")
    p.send(dest, "end", color="red", priority="9")
    got = {"all": [], "red": [], "urgent": []}
    # One connection, three subscriptions: frames interleave, each in order.
    while len(got["all"]) < 5 or len(got["red"]) < 2 or len(got["urgent"]) < 2:
        m = c.message("topic deliveries so far %r" % got)
        sub = hdr(m, "subscription")
        if sub not in got or hdr(m, "destination") != dest:
            raise Fail("MESSAGE subscription %r destination %r" % (sub, hdr(m, "destination")))
        got[sub].append(m.body)
        if len(got[sub]) > {"all": 5, "red": 2, "urgent": 2}[sub]:
            raise Fail("subscription %s got too many: %r" % (sub, got[sub]))
    check(got["all"] == ["blue-low", "red-low", "blue-high", "green-high", "end"],
          "unfiltered subscription gets everything in order", got["all"])
    check(got["red"] == ["red-low", "end"], "selector color = 'red'", got["red"])
    check(got["urgent"] == ["blue-high", "end"], "selector on JMSPriority and IN", got["urgent"])
    c.close()
    p.close()


def scenario_nack(port):
    """client-individual: NACK is a failed delivery, redelivered with count 2."""
    c = Client(port, "nack")
    dest = "/queue/py.work"
    c.subscribe(dest, "w", ack="client-individual")
    c.send(dest, "job", content_type="text/plain", persistent="true", attempt="x")
    m1 = c.message("first delivery")
    check(m1.body == "job", "first delivery body", m1.body)
    check(bool(hdr(m1, "ack")), "STOMP 1.2 MESSAGE carries an ack header", hdr(m1, "ack"))
    check(hdr(m1, "JMSXDeliveryCount") == "1" and hdr(m1, "redelivered") is None,
          "first delivery: count 1, not redelivered", hdr(m1, "JMSXDeliveryCount"), hdr(m1, "redelivered"))
    c.nack(m1)
    m2 = c.message("redelivery after NACK")
    check(m2.body == "job" and hdr(m2, "message-id") == hdr(m1, "message-id"),
          "the same message comes back", m2.body, hdr(m2, "message-id"))
    check(hdr(m2, "redelivered") == "true", "redelivered:true", hdr(m2, "redelivered"))
    check(hdr(m2, "JMSXDeliveryCount") == "2" and hdr(m2, "x-delivery-count") == "2",
          "JMSXDeliveryCount 2 (and x-delivery-count)", hdr(m2, "JMSXDeliveryCount"), hdr(m2, "x-delivery-count"))
    check(hdr(m2, "attempt") == "x", "properties kept on redelivery", hdr(m2, "attempt"))
    c.ack(m2)
    # Individual acks: ack the second of two, leave the first; it is the one
    # that comes back to the next subscriber.
    c.send(dest, "a", content_type="text/plain")
    c.send(dest, "b", content_type="text/plain")
    ma, mb = c.message("a"), c.message("b")
    check([ma.body, mb.body] == ["a", "b"], "a then b", ma.body, mb.body)
    c.ack(mb)
    c.close()
    c2 = Client(port, "nack2")
    c2.subscribe(dest, "w2", ack="client")
    m = c2.message("unacknowledged a after reconnect")
    check(m.body == "a" and hdr(m, "redelivered") == "true" and hdr(m, "JMSXDeliveryCount") == "2",
          "only the unacknowledged message is redelivered after disconnect",
          m.body, hdr(m, "redelivered"), hdr(m, "JMSXDeliveryCount"))
    c2.ack(m)
    c2.send(dest, "marker", content_type="text/plain")
    m = c2.message("marker")
    check(m.body == "marker", "nothing else was left on the queue", m.body)
    c2.ack(m)
    c2.close()


def scenario_transaction(port):
    """BEGIN/SEND/COMMIT delivers at commit; ABORT discards; ACK in a transaction."""
    c = Client(port, "tx")
    dest = "/queue/py.tx"
    c.subscribe(dest, "t", ack="client-individual")
    c.begin("tx1")
    c.send(dest, "in-tx-1", content_type="text/plain", transaction="tx1")
    c.send(dest, "in-tx-2", content_type="text/plain", transaction="tx1")
    c.send(dest, "outside", content_type="text/plain")
    m = c.message("the non-transactional message")
    check(m.body == "outside", "uncommitted sends are not delivered before the commit", m.body)
    c.ack(m)
    c.commit("tx1")
    got = [c.message("committed 1").body, c.message("committed 2").body]
    check(got == ["in-tx-1", "in-tx-2"], "COMMIT delivers the transaction's sends in order", got)
    c.begin("tx2")
    c.send(dest, "aborted", content_type="text/plain", transaction="tx2")
    c.abort("tx2")
    c.send(dest, "after-abort", content_type="text/plain")
    m = c.message("message after ABORT")
    check(m.body == "after-abort", "ABORT discards the transaction's sends", m.body)
    c.ack(m)
    c.close()
    # The acks of the two committed messages were never sent: they return.
    c2 = Client(port, "tx2")
    c2.subscribe(dest, "t2", ack="client-individual")
    m1, m2 = c2.message("redelivered 1"), c2.message("redelivered 2")
    check([m1.body, m2.body] == ["in-tx-1", "in-tx-2"], "unacknowledged messages come back", m1.body, m2.body)
    c2.begin("tx3")
    c2.ack(m1, transaction="tx3")
    c2.ack(m2, transaction="tx3")
    c2.commit("tx3")
    c2.close()
    c3 = Client(port, "tx3")
    c3.subscribe(dest, "t3")
    c3.send(dest, "marker", content_type="text/plain")
    m = c3.message("marker")
    check(m.body == "marker", "ACKs committed in a transaction remove the messages", m.body)
    c3.close()


def scenario_durable(port):
    """Durable topic subscription by client-id + activemq.subscriptionName."""
    dest = "/topic/py.news"
    sub = {"activemq.subscriptionName": "py-news"}
    p = Client(port, "durpub")
    c1 = Client(port, "dur1", headers={"client-id": "py-durable-app"})
    c1.subscribe(dest, "d", **sub)
    p.send(dest, "first", content_type="text/plain", persistent="true")
    m = c1.message("first")
    check(m.body == "first", "durable subscriber receives while connected", m.body)
    c1.close()
    p.send(dest, "while-away-1", content_type="text/plain", persistent="true")
    p.send(dest, "while-away-2", content_type="text/plain", persistent="true")
    c2 = Client(port, "dur2", headers={"client-id": "py-durable-app"})
    c2.subscribe(dest, "d", **sub)
    got = [c2.message("while away 1").body, c2.message("while away 2").body]
    check(got == ["while-away-1", "while-away-2"],
          "messages published while disconnected are kept for the durable subscription", got)
    # UNSUBSCRIBE with the name deletes the subscription.
    c2.unsubscribe("d", **sub)
    c2.close()
    p.send(dest, "after-delete", content_type="text/plain", persistent="true")
    c3 = Client(port, "dur3", headers={"client-id": "py-durable-app"})
    c3.subscribe(dest, "d", **sub)
    p.send(dest, "marker", content_type="text/plain", persistent="true")
    m = c3.message("marker")
    check(m.body == "marker", "a deleted durable subscription keeps nothing", m.body)
    c3.unsubscribe("d", **sub)
    c3.close()
    p.close()


def scenario_tempqueue(port):
    """Request/reply through a /temp-queue/ reply-to."""
    req = Client(port, "requester")
    srv = Client(port, "responder")
    req.subscribe("/temp-queue/replies", "r")
    srv.subscribe("/queue/py.requests", "s")
    req.send("/queue/py.requests", "ping", content_type="text/plain",
             **{"reply-to": "/temp-queue/replies", "correlation-id": "req-1"})
    r = srv.message("request")
    reply_to = hdr(r, "reply-to") or ""
    check(r.body == "ping" and reply_to.startswith("/temp-queue/"),
          "responder sees a /temp-queue/ reply-to", r.body, reply_to)
    srv.send(reply_to, "pong", content_type="text/plain", **{"correlation-id": hdr(r, "correlation-id")})
    a = req.message("reply")
    check(a.body == "pong" and hdr(a, "correlation-id") == "req-1", "reply arrives with its correlation-id",
          a.body, hdr(a, "correlation-id"))
    check(hdr(a, "destination") == "/temp-queue/replies",
          "the requester sees its own name for the temporary queue", hdr(a, "destination"))
    req.close()
    srv.close()


def scenario_error(port):
    """A malformed header gets an ERROR frame, with the receipt-id, then the close."""
    c = Client(port, "err")
    c.conn.send("/queue/py.bad", "x", content_type="text/plain", headers={"priority": "12", "receipt": "bad-1"})
    e = c.col.error("SEND with priority:12")
    msg = hdr(e, "message") or ""
    check("priority" in msg, "ERROR message header names the priority header", msg)
    check(hdr(e, "receipt-id") == "bad-1", "ERROR carries the failing frame's receipt-id", hdr(e, "receipt-id"))
    check("priority" in (e.body or ""), "ERROR body has the detail", e.body)
    check(c.col.disconnected.wait(WAIT), "the server closes the connection after ERROR")
    check(c.col.receipts.empty(), "no RECEIPT for the refused frame")
    c2 = Client(port, "err2")
    c2.conn.subscribe("/queue/py.bad", "s", headers={"selector": "color = ", "receipt": "bad-2"})
    e = c2.col.error("SUBSCRIBE with a bad selector")
    check("selector" in ((hdr(e, "message") or "") + (e.body or "")).lower(), "a bad selector is refused",
          hdr(e, "message"), e.body)
    check(c2.col.disconnected.wait(WAIT), "closed after the selector ERROR")
    c3 = Client(port, "err3")
    c3.subscribe("/queue/py.bad", "ok")
    c3.send("/queue/py.bad", "fine", content_type="text/plain", priority="9")
    m = c3.message("after errors")
    check(m.body == "fine" and hdr(m, "priority") == "9", "the broker carries on for other connections",
          m.body, hdr(m, "priority"))
    c3.close()


def scenario_tls(port):
    """SEND/MESSAGE through the stomps listener: TLS with the broker's certificate verified
    against SLUICE_TLS_CA; a client that trusts only SLUICE_TLS_OTHER_CA is refused."""
    ca, other = os.environ["SLUICE_TLS_CA"], os.environ["SLUICE_TLS_OTHER_CA"]
    c = Client(port, "tls", ca_certs=ca)
    sock = c.conn.transport.socket
    check(sock.version() in ("TLSv1.2", "TLSv1.3"), "TLS 1.2 or later", sock.version())
    sans = sock.getpeercert().get("subjectAltName", ())
    check(("IP Address", HOST) in sans, "the verified certificate names " + HOST, sans)
    dest = "/queue/py.tls"
    c.send(dest, "over TLS \u2713", content_type="text/plain", persistent="true", region="emea")
    c.subscribe(dest, "tls")
    m = c.message("the message sent over TLS")
    check(m.body == "over TLS \u2713", "text body round trip over TLS", m.body)
    check(hdr(m, "region") == "emea" and hdr(m, "persistent") == "true", "headers over TLS",
          hdr(m, "region"), hdr(m, "persistent"))
    c.close()
    try:
        Client(port, "tls-other-ca", ca_certs=other).close()
    except stomp.exception.ConnectFailedException:
        check(True, "stomp.py trusting another CA cannot connect")
    else:
        raise Fail("stomp.py trusting another CA connected")
    # Why: the handshake stomp.py makes, by hand (its context verifies the
    # chain, not the name).
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_verify_locations(other)
    with socket.create_connection((HOST, port), timeout=WAIT) as raw:
        try:
            ctx.wrap_socket(raw, server_hostname=HOST).close()
        except ssl.SSLCertVerificationError as e:
            check(True, "refused because the certificate does not verify (%s)" % e.verify_message)
        else:
            raise Fail("a TLS client trusting another CA completed the handshake")


SCENARIOS = {name[len("scenario_"):].replace("_", "-"): fn
             for name, fn in sorted(globals().items()) if name.startswith("scenario_")}


def main(argv):
    if len(argv) != 3 or argv[2] not in SCENARIOS:
        print("usage: stomp_py.py PORT SCENARIO\nscenarios: " + " ".join(SCENARIOS), file=sys.stderr)
        return 2
    port = int(os.environ["SLUICE_STOMP_PORT"] if argv[1] == "-" else argv[1])
    name = argv[2]
    print("stomp.py %s, scenario %s, port %d" % (".".join(map(str, stomp.__version__)), name, port), flush=True)
    start = time.monotonic()
    try:
        SCENARIOS[name](port)
    except Fail as e:
        print("FAIL %s: %s" % (name, e), flush=True)
        return 1
    except Exception:
        traceback.print_exc()
        print("FAIL %s: unexpected exception" % name, flush=True)
        return 1
    print("PASS %s (%.1fs)" % (name, time.monotonic() - start), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
