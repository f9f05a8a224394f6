#!/usr/bin/python3
"""Interop scenarios for Sluice's AMQP 1.0 server with Qpid Proton Python
(Debian's python3-qpid-proton).

Usage: proton_py.py PORT SCENARIO

PORT is the AMQP port of a running Sluice on 127.0.0.1 (SLUICE_AMQP_PORT is
used when PORT is "-"); the cross-protocol scenario also needs the STOMP port
in SLUICE_STOMP_PORT. Each scenario prints what it checks and ends with the
line "PASS SCENARIO"; any failed check prints "FAIL SCENARIO: reason" and
exits 1. Every wait is bounded (WAIT seconds). Destination names are per
scenario (py.*). The outcomes scenario expects py.outcomes to have the error
destination py.outcomes.DLQ (interop/amqp_test.go configures it).

Most scenarios use proton.utils.BlockingConnection; link options (terminus
capabilities, filters, durability) are the reactor's LinkOption classes.

The security scenario logs in with SASL PLAIN as SLUICE_AMQP_USER /
SLUICE_AMQP_PASSWORD against a broker with a realm that lets that user send to
and consume from queues py.sec.ok.* only (interop/amqp_test.go starts one).

interop/amqp_test.go (build tag interop) starts the broker and runs these.
"""

import os
import socket
import sys
import time
import traceback

import proton
from proton import (Condition, ConnectionException, Data, Delivery, Described, Endpoint, Message, SSLDomain,
                    Timeout, byte, float32, int32, short, symbol, ulong)
from proton.reactor import Container, DurableSubscription, Filter, LinkOption, Selector
from proton.utils import BlockingConnection, LinkDetached, SendException

HOST = "127.0.0.1"
WAIT = 10.0  # seconds for any one expected message or frame
QUIET = 0.5  # seconds of silence taken as "nothing more arrives"

SELECTOR_CODE = 0x0000468C00000004  # apache.org:selector-filter:string


class Fail(Exception):
    """A failed check."""


def check(cond, what, *detail):
    if not cond:
        raise Fail(what + ("" if not detail else ": " + " ".join(repr(d) for d in detail)))
    print("ok   " + what, flush=True)


class Caps(LinkOption):
    """Terminus capabilities: on the source of a receiver, the target of a sender."""

    def __init__(self, *caps):
        self.caps = caps

    def apply(self, link):
        t = link.source if link.is_receiver else link.target
        t.capabilities.put_array(False, Data.SYMBOL)
        t.capabilities.enter()
        for c in self.caps:
            t.capabilities.put_symbol(c)
        t.capabilities.exit()


TOPIC = Caps("topic")
QUEUE = Caps("queue")


def connect(port, container_id=None):
    """A BlockingConnection (SASL ANONYMOUS), optionally with a container-id."""
    cont = Container()
    if container_id:
        cont.container_id = container_id
    return BlockingConnection("amqp://%s:%d" % (HOST, port), timeout=WAIT, container=cont)


def recv(rcv, what, timeout=WAIT):
    """The next message on a BlockingReceiver, or a failure naming it."""
    try:
        return rcv.receive(timeout=timeout)
    except Timeout:
        raise Fail("no message within %ss (%s)" % (timeout, what))


def nothing(rcv, what):
    """Checks that no message arrives for QUIET seconds."""
    try:
        m = rcv.receive(timeout=QUIET)
    except Timeout:
        check(True, what)
        return
    raise Fail("%s: got %r" % (what, m.body))


def delivery(rcv):
    """The delivery of the message last taken from rcv (unsettled)."""
    return rcv.fetcher.unsettled.popleft()


def settle_as(conn, d, state, failed=False, undeliverable=False):
    """Settles delivery d with an outcome and lets the disposition go out."""
    if state == Delivery.MODIFIED:
        d.local.failed = failed
        d.local.undeliverable = undeliverable
    d.update(state)
    d.settle()
    conn.container.process()


def selector_of(terminus):
    """The JMS selector in a terminus' filter set (any key), or None."""
    d = terminus.filter
    d.rewind()
    if not d.next():
        return None
    for v in (d.get_object() or {}).values():
        if isinstance(v, Described) and v.descriptor in (symbol("apache.org:selector-filter:string"), SELECTOR_CODE):
            return v.value
    return None


def ann(m, key):
    return (m.annotations or {}).get(symbol(key))


def tname(v):
    return type(v).__name__


# --- scenarios -----------------------------------------------------------


def scenario_properties(port):
    """Application properties keep their AMQP types; text, data and map bodies."""
    c = connect(port)
    snd = c.create_sender("py.props", options=QUEUE)
    props = {
        "an-int": int32(42),
        "a-long": 1 << 40,
        "a-float": float32(1.5),
        "a-double": 2.25,
        "a-bool": True,
        "a-false": False,
        "a-string": "h\u00e9llo",
        "a-short": short(-7),
        "a-byte": byte(3),
        "neg-long": -5,
    }
    snd.send(Message(body="typed", properties=props, durable=True))
    snd.send(Message(body=b"\x00\x01\xfe\xff", inferred=True, properties={"kind": "bytes"}))
    snd.send(Message(body={"k": "v", "n": int32(7)}, properties={"kind": "map"}))
    check(True, "three messages accepted (BlockingSender raises on rejected/released)")
    rcv = c.create_receiver("py.props", credit=10, options=QUEUE)
    m = recv(rcv, "typed message")
    rcv.accept()
    check(m.body == "typed", "text body (amqp-value string)", m.body)
    p = m.properties or {}
    want = {
        "an-int": (42, "int32"),
        "a-long": (1 << 40, "int"),
        "a-float": (1.5, "float32"),
        "a-double": (2.25, "float"),
        "a-bool": (True, "bool"),
        "a-false": (False, "bool"),
        "a-string": ("h\u00e9llo", "str"),
        "a-short": (-7, "short"),
        "a-byte": (3, "byte"),
        "neg-long": (-5, "int"),
    }
    for k, (v, t) in want.items():
        check(p.get(k) == v and tname(p.get(k)) == t,
              "property %s = %r kept as %s" % (k, v, t), p.get(k), tname(p.get(k)))
    check(set(p) == set(want), "no property added or lost", sorted(p))
    check(ann(m, "x-opt-jms-msg-type") == 5, "x-opt-jms-msg-type 5 (text)", ann(m, "x-opt-jms-msg-type"))
    b = recv(rcv, "bytes message")
    rcv.accept()
    check(b.body == b"\x00\x01\xfe\xff", "data section body round trip", b.body)
    check(ann(b, "x-opt-jms-msg-type") == 3 and b.content_type == "application/octet-stream",
          "bytes message type 3, content-type application/octet-stream",
          ann(b, "x-opt-jms-msg-type"), b.content_type)
    mp = recv(rcv, "map message")
    rcv.accept()
    check(mp.body == {"k": "v", "n": 7} and tname(mp.body.get("n")) == "int32",
          "map body round trip, values typed", mp.body)
    check(ann(mp, "x-opt-jms-msg-type") == 2, "x-opt-jms-msg-type 2 (map)", ann(mp, "x-opt-jms-msg-type"))
    rcv.close()
    c.close()


def scenario_headers(port):
    """Header and properties sections: durable, priority, ttl, ids, subject, reply-to."""
    c = connect(port)
    snd = c.create_sender("py.headers", options=QUEUE)
    t0 = int(time.time() * 1000)
    snd.send(Message(body="plain"))
    snd.send(Message(body="full", durable=True, priority=7, ttl=60, id="py-msg-1",
                     correlation_id="corr-1", subject="order", reply_to="py.replies",
                     group_id="grp-a", properties={"region": "emea"}))
    snd.send(Message(body="ulong-corr", correlation_id=ulong(12345), priority=200))
    rcv = c.create_receiver("py.headers", credit=10, options=QUEUE)
    # Delivered by priority: 9 (200 counts as 9), 7, then the default 4.
    u = recv(rcv, "ulong correlation-id")
    rcv.accept()
    check(u.body == "ulong-corr", "highest priority first", u.body)
    check(str(u.correlation_id) == "12345", "a ulong correlation-id arrives as its string form",
          u.correlation_id, tname(u.correlation_id))
    check(u.priority == 9, "priority above 9 counts as 9", u.priority)
    m = recv(rcv, "full message")
    rcv.accept()
    check(m.body == "full", "body", m.body)
    check(m.durable is True, "header durable kept", m.durable)
    check(m.priority == 7, "header priority 7", m.priority)
    check(0 < m.ttl <= 60, "header ttl is the time left (<= 60s)", m.ttl)
    check(m.id == "py-msg-1", "properties message-id kept (the producer's id)", m.id)
    check(m.correlation_id == "corr-1", "correlation-id", m.correlation_id)
    check(m.subject == "order", "subject (JMSType)", m.subject)
    check(m.reply_to == "py.replies", "reply-to", m.reply_to)
    check(ann(m, "x-opt-jms-reply-to") == 0, "x-opt-jms-reply-to 0 (queue)", ann(m, "x-opt-jms-reply-to"))
    check(m.group_id == "grp-a", "group-id (JMSXGroupID)", m.group_id)
    check(m.address == "py.headers", "to = the destination", m.address)
    check(ann(m, "x-opt-jms-dest") == 0, "x-opt-jms-dest 0 (queue)", ann(m, "x-opt-jms-dest"))
    ct = m.creation_time * 1000
    check(t0 - 5000 <= ct <= t0 + 5000, "creation-time set (JMSTimestamp)", m.creation_time)
    exp = m.expiry_time * 1000
    check(abs(exp - (ct + 60000)) < 5000, "absolute-expiry-time = creation + ttl", m.expiry_time)
    check(m.delivery_count == 0, "delivery-count 0 on first delivery", m.delivery_count)
    check((m.properties or {}).get("region") == "emea", "application property kept", m.properties)
    p = recv(rcv, "plain message")
    rcv.accept()
    check(p.durable is False, "no header: non-persistent (the AMQP default)", p.durable)
    check(p.priority == 4, "no priority: 4", p.priority)
    check(p.ttl == 0 and p.expiry_time == 0, "no ttl: never expires", p.ttl, p.expiry_time)
    check(isinstance(p.id, str) and p.id.startswith("ID:"), "message-id assigned by the broker (ID:...)", p.id)
    rcv.close()
    c.close()


def scenario_selector(port):
    """Topic subscriptions with JMS selector filters; an invalid selector refused."""
    c = connect(port)
    pub = connect(port)
    code_filter = Filter({symbol("jms-selector"): Described(ulong(SELECTOR_CODE), "JMSPriority >= 7 AND color IN ('blue', 'red')")})
    all_ = c.create_receiver("py.prices", credit=20, options=TOPIC)
    red = c.create_receiver("py.prices", name="red", credit=20, options=[TOPIC, Selector("color = 'red'")])
    urgent = c.create_receiver("topic://py.prices", name="urgent", credit=20, options=code_filter)
    check(selector_of(red.remote_source) == "color = 'red'", "attach answer carries the accepted selector filter",
          selector_of(red.remote_source))
    snd = pub.create_sender("py.prices", options=TOPIC)
    for body, color, prio in [("blue-low", "blue", 1), ("red-low", "red", 2), ("blue-high", "blue", 8),
                              ("green-high", "green", 9), ("end", "red", 9)]:
        snd.send(Message(body=body, priority=prio, properties={"color": color}))
    got = {}
    for name, r, n in [("all", all_, 5), ("red", red, 2), ("urgent", urgent, 2)]:
        got[name] = []
        for _ in range(n):
            got[name].append(recv(r, "%s: %d of %d" % (name, len(got[name]) + 1, n)).body)
            r.accept()
    check(got["all"] == ["blue-low", "red-low", "blue-high", "green-high", "end"],
          "unfiltered topic receiver gets everything in order", got["all"])
    check(got["red"] == ["red-low", "end"], "Selector (apache.org:selector-filter:string) color = 'red'", got["red"])
    check(got["urgent"] == ["blue-high", "end"], "filter by ulong code 0x0000468C00000004, JMSPriority and IN",
          got["urgent"])
    nothing(red, "nothing more for the selector")
    # An invalid selector: the attach is refused with amqp:invalid-field.
    try:
        c.create_receiver("py.prices", name="bad", credit=1, options=[TOPIC, Selector("color = ")])
        raise Fail("a receiver with selector 'color = ' was attached")
    except LinkDetached as e:
        check(e.condition == "amqp:invalid-field", "invalid selector refused with amqp:invalid-field",
              e.condition, str(e))
        desc = (e.link.remote_condition.description or "") if e.link.remote_condition else ""
        check(desc != "", "the detach carries the parse error", desc)
        print("     refused: %s" % desc, flush=True)
    # The connection is still usable after the refused link.
    snd.send(Message(body="after", properties={"color": "red"}))
    m = recv(red, "message after the refused attach")
    red.accept()
    check(m.body == "after", "the connection and its links carry on", m.body)
    c.close()
    pub.close()


def scenario_outcomes(port):
    """released, modified(delivery-failed) and rejected: counts and the error destination."""
    c = connect(port)
    snd = c.create_sender("py.outcomes", options=QUEUE)
    snd.send(Message(body="job", durable=True, properties={"attempt": "x"}))
    rcv = c.create_receiver("py.outcomes", credit=1, options=QUEUE)
    m = recv(rcv, "first delivery")
    check(m.body == "job" and m.delivery_count == 0, "first delivery, delivery-count 0", m.body, m.delivery_count)
    settle_as(c, delivery(rcv), Delivery.RELEASED)
    m = recv(rcv, "after released")
    check(m.body == "job" and m.delivery_count == 0,
          "released: back on the queue, not counted (delivery-count 0)", m.body, m.delivery_count)
    settle_as(c, delivery(rcv), Delivery.MODIFIED, failed=True)
    m = recv(rcv, "after modified(delivery-failed)")
    check(m.body == "job" and m.delivery_count == 1,
          "modified delivery-failed: a failed delivery (delivery-count 1)", m.body, m.delivery_count)
    check((m.properties or {}).get("attempt") == "x", "properties kept on redelivery", m.properties)
    settle_as(c, delivery(rcv), Delivery.MODIFIED)
    m = recv(rcv, "after modified without flags")
    check(m.body == "job" and m.delivery_count == 1,
          "modified without delivery-failed: as released (delivery-count still 1)", m.body, m.delivery_count)
    settle_as(c, delivery(rcv), Delivery.MODIFIED, failed=True)
    m = recv(rcv, "after a second modified(delivery-failed)")
    check(m.delivery_count == 2, "a second failed delivery: delivery-count 2", m.delivery_count)
    d = delivery(rcv)
    d.local.condition = Condition("app:bad-job", "cannot process")
    settle_as(c, d, Delivery.REJECTED)
    nothing(rcv, "rejected: not redelivered")
    rcv.close()
    dlq = c.create_receiver("py.outcomes.DLQ", credit=1, options=QUEUE)
    m = recv(dlq, "the rejected message on the error destination")
    dlq.accept()
    check(m.body == "job" and (m.properties or {}).get("attempt") == "x",
          "rejected: moved to the error destination with its properties", m.body, m.properties)
    dlq.close()
    # Nothing is left on the queue.
    snd.send(Message(body="marker"))
    rcv = c.create_receiver("py.outcomes", credit=1, options=QUEUE)
    m = recv(rcv, "marker")
    rcv.accept()
    check(m.body == "marker", "the rejected message is gone from the queue", m.body)
    rcv.close()
    # Without an error destination a rejected message is deleted.
    plain = c.create_sender("py.outcomes-plain", options=QUEUE)
    plain.send(Message(body="doomed", durable=True))
    rcv = c.create_receiver("py.outcomes-plain", credit=1, options=QUEUE)
    m = recv(rcv, "message on a queue without an error destination")
    settle_as(c, delivery(rcv), Delivery.REJECTED)
    plain.send(Message(body="marker"))
    m = recv(rcv, "marker after the rejected message")
    rcv.accept()
    check(m.body == "marker", "no error destination: the rejected message is deleted", m.body)
    c.close()


def scenario_durable(port):
    """Durable subscription: container-id + link name, source durable=2, expiry never."""
    cid, sub = "py-durable-app", "py-news"
    pub = connect(port)
    snd = pub.create_sender("py.news", options=TOPIC)

    c1 = connect(port, cid)
    r1 = c1.create_receiver("py.news", name=sub, credit=10, options=[TOPIC, DurableSubscription()])
    rs = r1.remote_source
    check(rs.durability == proton.Terminus.DELIVERIES and rs.expiry_policy == proton.Terminus.EXPIRE_NEVER,
          "attach answer: durable unsettled-state, expiry never", rs.durability, rs.expiry_policy)
    snd.send(Message(body="first", durable=True))
    m = recv(r1, "first")
    r1.accept()
    check(m.body == "first", "durable subscriber receives while attached", m.body)
    # A detach without closed keeps the subscription.
    detached = []
    # Proton reports a detach without closed as an event only (the link's
    # state does not change); the receiver's handler is its Fetcher.
    r1.fetcher.on_link_remote_detach = lambda event: detached.append(event.link.remote_condition)
    r1.link.detach()
    c1.wait(lambda: detached, msg="detach answer")
    check(detached == [None], "the server answers the detach (no error)", detached)
    snd.send(Message(body="while-detached", durable=True))
    r1b = c1.create_receiver("py.news", name=sub, credit=10, options=[TOPIC, DurableSubscription()])
    m = recv(r1b, "message sent while detached")
    r1b.accept()
    check(m.body == "while-detached", "re-attached link gets what was sent while detached", m.body)
    # The connection ends: the subscription stays.
    c1.close()
    snd.send(Message(body="while-away-1", durable=True))
    snd.send(Message(body="while-away-2", durable=True))
    c2 = connect(port, cid)
    r2 = c2.create_receiver("py.news", name=sub, credit=10, options=[TOPIC, DurableSubscription()])
    got = []
    for i in range(2):
        got.append(recv(r2, "while away %d" % (i + 1)).body)
        r2.accept()
    check(got == ["while-away-1", "while-away-2"],
          "reconnected with the same container-id and link name: messages sent while away", got)
    nothing(r2, "nothing else kept")
    # Detach with closed=true deletes the subscription.
    r2.close()
    snd.send(Message(body="after-delete", durable=True))
    r3 = c2.create_receiver("py.news", name=sub, credit=10, options=[TOPIC, DurableSubscription()])
    snd.send(Message(body="marker", durable=True))
    m = recv(r3, "marker")
    r3.accept()
    check(m.body == "marker", "a closed detach deleted the subscription (nothing kept)", m.body)
    r3.close()
    c2.close()
    # Another connection cannot take the client ID while it is in use.
    c3 = connect(port, cid)
    try:
        # The server answers open, then closes: the close may come in a
        # later read than the open, so wait for it.
        c4 = connect(port, cid)
        c4.wait(lambda: c4.conn.state & Endpoint.REMOTE_CLOSED, msg="close of the second connection")
        raise Fail("a second connection took container-id %s" % cid)
    except proton.ConnectionException as e:
        check("invalid-field" in str(e), "container-id in use: close with amqp:invalid-field", str(e))
    c3.close()
    pub.close()


def scenario_tempqueue(port):
    """Request/reply through a dynamic temporary queue and the anonymous relay."""
    req = connect(port)
    srv = connect(port)
    replies = req.create_receiver(None, dynamic=True, credit=5)
    addr = replies.remote_source.address
    check(bool(addr) and addr.startswith("temp-queue://"), "dynamic source gets a temporary queue address", addr)
    requests = srv.create_receiver("py.requests", credit=5, options=QUEUE)
    snd = req.create_sender("py.requests", options=QUEUE)
    snd.send(Message(body="ping", reply_to=addr, correlation_id="req-1"))
    r = recv(requests, "request")
    requests.accept()
    check(r.body == "ping" and r.reply_to == addr, "responder sees the reply-to address", r.body, r.reply_to)
    check(ann(r, "x-opt-jms-reply-to") == 2, "x-opt-jms-reply-to 2 (temporary queue)", ann(r, "x-opt-jms-reply-to"))
    relay = srv.create_sender(None)
    relay.send(Message(address=r.reply_to, body="pong", correlation_id=r.correlation_id))
    check(True, "reply sent over the anonymous relay (properties.to)")
    a = recv(replies, "reply")
    replies.accept()
    check(a.body == "pong" and a.correlation_id == "req-1", "reply arrives with its correlation-id",
          a.body, a.correlation_id)
    check(ann(a, "x-opt-jms-dest") == 2, "x-opt-jms-dest 2 on the reply", ann(a, "x-opt-jms-dest"))
    # Closing the link that made it deletes the temporary queue.
    replies.close()
    try:
        relay.send(Message(address=addr, body="too late"))
        raise Fail("a send to the deleted temporary queue was accepted")
    except SendException as e:
        check(e.state == Delivery.REJECTED, "send to a deleted temporary queue is rejected", e.state)
    req.close()
    srv.close()


def scenario_delay(port):
    """x-opt-delivery-delay holds a message back; it arrives with x-opt-delivery-time."""
    c = connect(port)
    snd = c.create_sender("py.delay", options=QUEUE)
    rcv = c.create_receiver("py.delay", credit=5, options=QUEUE)
    t0 = time.monotonic()
    sent_ms = int(time.time() * 1000)
    snd.send(Message(body="later", annotations={symbol("x-opt-delivery-delay"): 1500}))
    snd.send(Message(body="now"))
    m = recv(rcv, "undelayed message")
    rcv.accept()
    check(m.body == "now", "the undelayed message comes first", m.body)
    nothing(rcv, "the delayed message is held back")
    m = recv(rcv, "delayed message")
    rcv.accept()
    waited = time.monotonic() - t0
    check(m.body == "later", "the delayed message arrives", m.body)
    check(waited >= 1.4, "not before its delay of 1.5s", "%.2fs" % waited)
    check(waited < 6, "and not much later", "%.2fs" % waited)
    dt = ann(m, "x-opt-delivery-time")
    check(dt is not None and int(dt) >= sent_ms + 1400, "x-opt-delivery-time is the due time", dt, sent_ms)
    rcv.close()
    c.close()


def tls_connect(port, ca):
    """A BlockingConnection over TLS (amqps://) that verifies the broker's certificate and name against ca."""
    dom = SSLDomain(SSLDomain.MODE_CLIENT)
    dom.set_trusted_ca_db(ca)
    dom.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    return BlockingConnection("amqps://localhost:%d" % port, timeout=WAIT, container=Container(), ssl_domain=dom)


def scenario_tls(port):
    """Send and receive through the amqps listener: TLS with the broker's certificate verified
    against SLUICE_TLS_CA (name localhost); a client that trusts only SLUICE_TLS_OTHER_CA is refused."""
    ca, other = os.environ["SLUICE_TLS_CA"], os.environ["SLUICE_TLS_OTHER_CA"]
    c = tls_connect(port, ca)
    session = c.conn.transport.ssl()  # the transport's SSL layer, its handshake done
    check(session.protocol_name() in ("TLSv1.2", "TLSv1.3"), "TLS 1.2 or later", session.protocol_name())
    snd = c.create_sender("py.tls", options=QUEUE)
    snd.send(Message(body="over TLS", durable=True, properties={"region": "emea"}))
    rcv = c.create_receiver("py.tls", options=QUEUE)
    m = recv(rcv, "the message sent over TLS")
    rcv.accept()
    check(m.body == "over TLS", "body round trip over TLS", m.body)
    check(m.durable and m.properties.get("region") == "emea", "header and properties over TLS",
          m.durable, m.properties)
    c.close()
    try:
        tls_connect(port, other).close()
    except ConnectionException as e:
        check("certificate verify failed" in str(e), "a client trusting another CA cannot connect", str(e))
    else:
        raise Fail("a client trusting another CA connected")


class RawStomp:
    """A tiny STOMP 1.2 client over a socket (no library)."""

    def __init__(self, port):
        self.sock = socket.create_connection((HOST, port), timeout=WAIT)
        self.buf = b""
        self.frame("CONNECT", {"accept-version": "1.2", "host": "sluice"})
        cmd, hdrs, _ = self.read()
        check(cmd == "CONNECTED", "raw STOMP CONNECTED", cmd, hdrs)

    @staticmethod
    def esc(s):
        return s.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c")

    def frame(self, cmd, hdrs, body=b""):
        lines = [cmd] + ["%s:%s" % (self.esc(k), self.esc(v)) for k, v in hdrs.items()]
        self.sock.sendall(("\n".join(lines) + "\n\n").encode() + body + b"\x00")

    def read(self):
        while b"\x00" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Fail("STOMP connection closed")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\x00", 1)
        raw = raw.lstrip(b"\r\n")
        head, _, body = raw.partition(b"\n\n")
        lines = head.decode().split("\n")
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            k = k.replace("\\c", ":").replace("\\n", "\n").replace("\\\\", "\\")
            v = v.replace("\\c", ":").replace("\\n", "\n").replace("\\\\", "\\")
            hdrs.setdefault(k, v)
        return lines[0], hdrs, body

    def expect(self, want):
        cmd, hdrs, body = self.read()
        if cmd != want:
            raise Fail("STOMP %s, want %s: %r %r" % (cmd, want, hdrs, body))
        return hdrs, body

    def close(self):
        self.frame("DISCONNECT", {"receipt": "bye"})
        self.expect("RECEIPT")
        self.sock.close()


def scenario_cross(port):
    """STOMP SEND received over AMQP, AMQP send received over STOMP: fields mapped."""
    sport = int(os.environ["SLUICE_STOMP_PORT"])
    st = RawStomp(sport)
    body = "from stomp \u2713".encode()
    st.frame("SEND", {"destination": "/queue/py.cross", "content-type": "text/plain",
                      "content-length": str(len(body)), "persistent": "true", "priority": "6",
                      "correlation-id": "stomp-corr", "type": "order", "reply-to": "/queue/py.cross.replies",
                      "expires": str(int(time.time() * 1000) + 60000), "region": "emea", "receipt": "s1"}, body)
    hdrs, _ = st.expect("RECEIPT")
    check(hdrs.get("receipt-id") == "s1", "STOMP SEND receipt", hdrs)

    c = connect(port)
    rcv = c.create_receiver("py.cross", credit=5, options=QUEUE)
    m = recv(rcv, "STOMP message over AMQP")
    rcv.accept()
    check(m.body == "from stomp \u2713", "text body (STOMP content-type text/plain)", m.body)
    check(m.durable is True, "persistent:true -> header durable", m.durable)
    check(m.priority == 6, "priority:6 -> header priority", m.priority)
    check(0 < m.ttl <= 60, "expires -> ttl (time left)", m.ttl)
    check(m.correlation_id == "stomp-corr", "correlation-id", m.correlation_id)
    check(m.subject == "order", "type -> subject", m.subject)
    check(m.reply_to == "py.cross.replies" and ann(m, "x-opt-jms-reply-to") == 0,
          "reply-to /queue/... -> plain address + x-opt-jms-reply-to 0", m.reply_to, ann(m, "x-opt-jms-reply-to"))
    check(isinstance(m.id, str) and m.id.startswith("ID:"), "message-id is the JMS ID", m.id)
    p = m.properties or {}
    check(p.get("region") == "emea" and tname(p.get("region")) == "str",
          "STOMP header -> string application property", p)
    check("content-length" not in p and "receipt" not in p and "destination" not in p,
          "STOMP frame headers are not properties", sorted(p))

    # And back: AMQP typed properties reach STOMP as their string form.
    snd = c.create_sender("py.cross.back", options=QUEUE)
    snd.send(Message(body="from amqp", durable=False, priority=2, correlation_id="amqp-corr", subject="reply",
                     properties={"count": int32(42), "big": 1 << 40, "ok": True, "ratio": 0.5}))
    st.frame("SUBSCRIBE", {"id": "b", "destination": "/queue/py.cross.back", "ack": "auto", "receipt": "sub"})
    st.expect("RECEIPT")
    hdrs, sbody = st.expect("MESSAGE")
    check(sbody == b"from amqp", "AMQP text body over STOMP", sbody)
    want = {"persistent": "false", "priority": "2", "correlation-id": "amqp-corr", "type": "reply",
            "count": "42", "big": str(1 << 40), "ok": "true", "ratio": "0.5", "destination": "/queue/py.cross.back"}
    for k, v in want.items():
        check(hdrs.get(k) == v, "STOMP header %s = %r" % (k, v), hdrs.get(k))
    st.close()
    c.close()


def scenario_security(port):
    """SASL PLAIN against a realm: the right password is let in, a wrong one
    refused; a send to a denied queue is refused with amqp:unauthorized-access
    (at attach, and on the anonymous relay as a rejected outcome) while the
    connection and its other links carry on."""
    user, password = os.environ["SLUICE_AMQP_USER"], os.environ["SLUICE_AMQP_PASSWORD"]
    url = "amqp://%s:%d" % (HOST, port)

    try:
        bad = BlockingConnection(url, timeout=WAIT, user=user, password="wrong-" + password,
                                 allowed_mechs="PLAIN")
        bad.close()
        raise Fail("a wrong password was let in")
    except proton.ConnectionException as e:
        print("     " + str(e))
        check("unauthorized-access" in str(e), "a wrong password is refused (SASL outcome auth)", str(e))

    # Without credentials Proton offers ANONYMOUS, which this realm does not
    # offer: Proton gives up itself.
    try:
        anon = BlockingConnection(url, timeout=WAIT)
        anon.close()
        raise Fail("a client without credentials was let in")
    except proton.ConnectionException as e:
        print("     " + str(e))
        check("unauthorized-access" in str(e), "no credentials: refused", str(e))

    c = BlockingConnection(url, timeout=WAIT, user=user, password=password, allowed_mechs="PLAIN")
    check(True, "PLAIN login with the right password")
    ok = c.create_sender("py.sec.ok.orders", options=QUEUE)
    ok.send(Message(body="allowed 1"))
    check(True, "send to an allowed queue accepted")

    try:
        c.create_sender("py.sec.denied", options=QUEUE)
        raise Fail("a sender on a denied queue attached")
    except LinkDetached as e:
        check(e.condition == "amqp:unauthorized-access", "sender on a denied queue refused with amqp:unauthorized-access",
              e.condition)
        check(user in (e.link.remote_condition.description or ""), "the refusal names the user",
              e.link.remote_condition.description)

    relay = c.create_sender(None)
    d = relay.send(Message(address="py.sec.denied", body="denied"), error_states=[])
    check(d.remote_state == Delivery.REJECTED and d.remote.condition is not None
          and d.remote.condition.name == "amqp:unauthorized-access",
          "anonymous relay to a denied queue: rejected with amqp:unauthorized-access",
          d.remote_state, d.remote.condition)
    relay.send(Message(address="py.sec.ok.orders", body="allowed 2"))
    check(True, "the relay link carries on: a send to an allowed queue accepted")
    ok.send(Message(body="allowed 3"))
    check(True, "the named link carries on")

    rcv = c.create_receiver("py.sec.ok.orders", credit=10, options=QUEUE)
    got = []
    for i in range(3):
        got.append(recv(rcv, "allowed message %d" % (i + 1)).body)
        rcv.accept()
    check(got == ["allowed 1", "allowed 2", "allowed 3"], "every allowed message arrives, nothing else", got)
    nothing(rcv, "nothing more arrives")
    c.close()


SCENARIOS = {name[len("scenario_"):].replace("_", "-"): fn
             for name, fn in sorted(globals().items()) if name.startswith("scenario_")}


def main(argv):
    if len(argv) != 3 or argv[2] not in SCENARIOS:
        print("usage: proton_py.py PORT SCENARIO\nscenarios: " + " ".join(SCENARIOS), file=sys.stderr)
        return 2
    port = int(os.environ["SLUICE_AMQP_PORT"] if argv[1] == "-" else argv[1])
    name = argv[2]
    print("qpid-proton %s, scenario %s, port %d" % (".".join(map(str, proton.VERSION)), name, port), flush=True)
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
