#!/usr/bin/python3
"""AMQP 0-9-1 interop scenarios with pika (Debian's python3-pika).

Run by interop/amqp091_test.go as `pika_py.py PORT SCENARIO`; prints
"PASS SCENARIO" and exits 0, or prints what went wrong and exits 1. Each
scenario is written as an application for RabbitMQ would be, with nothing
Sluice-specific, so that it runs unchanged against either broker (the
`app` scenario is the one the AMQP 0-9-1 issue names: declare, bind,
publish with confirms, consume with manual ack, nack, qos). Every wait is
bounded.

SLUICE_AMQP091_USER and SLUICE_AMQP091_PASSWORD give the credentials
(guest/guest when unset). The scenarios after `fanout` reach Sluice's JMS
features through 0-9-1 (docs/amqp091.md): `selector` (the x-selector
consumer argument), `redelivery` (nack with requeue counted, the
redelivery limit and error destination of the test's configuration),
`delay` (x-delay), `priority`, `expiry` and `cross` (with STOMP, whose
port is in SLUICE_STOMP_PORT); RabbitMQ lacks most of them.
"""

import os
import sys
import time
import uuid

import pika
import pika.exceptions

TIMEOUT = 10.0  # seconds any single wait may take


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def connect(port):
    creds = pika.PlainCredentials(os.environ.get("SLUICE_AMQP091_USER", "guest"),
                                  os.environ.get("SLUICE_AMQP091_PASSWORD", "guest"))
    params = pika.ConnectionParameters(host="127.0.0.1", port=port, credentials=creds,
                                       heartbeat=30, blocked_connection_timeout=30,
                                       connection_attempts=3, retry_delay=0.5)
    return pika.BlockingConnection(params)


def unique(prefix):
    return "%s.%s" % (prefix, uuid.uuid4().hex[:8])


def drain(ch, queue, want, on_message, auto_ack=False, arguments=None):
    """Consume from queue until want messages were handled or TIMEOUT passes
    without one; on_message(ch, method, props, body) returns how many it
    counts (0 for a message it nacked back). Returns the count."""
    got = 0
    deadline = time.time() + 3 * TIMEOUT
    for method, props, body in ch.consume(queue, auto_ack=auto_ack, inactivity_timeout=TIMEOUT,
                                          arguments=arguments):
        if method is None or time.time() > deadline:
            break
        got += on_message(ch, method, props, body)
        if got >= want:
            break
    ch.cancel()
    return got


def scenario_app(port):
    conn = connect(port)
    ch = conn.channel()
    ex, q = unique("pyapp.ex"), unique("pyapp.orders")
    ch.exchange_declare(exchange=ex, exchange_type="direct", durable=True)
    ch.queue_declare(queue=q, durable=True)
    ch.queue_bind(queue=q, exchange=ex, routing_key="orders")
    ch.confirm_delivery()
    n = 20
    for i in range(n):
        props = pika.BasicProperties(delivery_mode=2, content_type="text/plain", message_id="m-%d" % i,
                                     correlation_id="c-%d" % i, headers={"i": i, "kind": "order"})
        # With confirms on, basic_publish returns once the broker confirmed
        # (and raises if it nacked or returned the message).
        ch.basic_publish(exchange=ex, routing_key="orders", body=("order %d" % i).encode(),
                         properties=props, mandatory=True)
    try:
        ch.basic_publish(exchange=ex, routing_key="nowhere", body=b"lost", mandatory=True)
        fail("a mandatory message with no route was confirmed, not returned")
    except pika.exceptions.UnroutableError:
        pass
    ok = ch.queue_declare(queue=q, durable=True, passive=True)
    if ok.method.message_count != n:
        fail("queue holds %d messages after the confirms, want %d" % (ok.method.message_count, n))

    ch.basic_qos(prefetch_count=5)
    seen = {}
    state = {"unacked": 0, "max_unacked": 0}

    def on_message(ch, method, props, body):
        i = props.headers.get("i")
        if not isinstance(i, int):
            fail("header i came back as %r" % (i,))
        if props.content_type != "text/plain" or props.message_id != "m-%d" % i or props.correlation_id != "c-%d" % i:
            fail("properties lost: %r" % (props,))
        if body != ("order %d" % i).encode():
            fail("body %r for message %d" % (body, i))
        seen.setdefault(i, []).append(method.redelivered)
        if i == 3 and len(seen[i]) == 1:
            ch.basic_nack(delivery_tag=method.delivery_tag, requeue=True)
            return 0
        if i == 7:
            ch.basic_reject(delivery_tag=method.delivery_tag, requeue=False)
            return 1
        ch.basic_ack(delivery_tag=method.delivery_tag)
        return 1

    got = drain(ch, q, n, on_message)
    if got != n:
        fail("handled %d messages, want %d (seen %s)" % (got, n, sorted(seen)))
    if seen.get(3) != [False, True]:
        fail("message 3 nacked with requeue: deliveries %r, want [False, True] (redelivered the second time)" % (seen.get(3),))
    if len(seen.get(7, [])) != 1:
        fail("message 7 rejected without requeue came back: %r" % (seen.get(7),))
    ok = ch.queue_declare(queue=q, durable=True, passive=True)
    if ok.method.message_count != 0:
        fail("queue holds %d messages after the drain" % ok.method.message_count)
    ch.queue_delete(queue=q)
    ch.exchange_delete(exchange=ex)
    conn.close()


def scenario_get(port):
    conn = connect(port)
    ch = conn.channel()
    q = unique("pyget")
    ch.queue_declare(queue=q)
    method, _, _ = ch.basic_get(queue=q)
    if method is not None:
        fail("basic.get on an empty queue returned a message")
    ch.basic_publish(exchange="", routing_key=q, body=b"one")
    body = None
    deadline = time.time() + TIMEOUT
    while body is None and time.time() < deadline:
        method, _, body = ch.basic_get(queue=q)
        if body is None:
            time.sleep(0.05)
    if body != b"one":
        fail("basic.get returned %r" % (body,))
    ch.basic_ack(delivery_tag=method.delivery_tag)
    ch.queue_delete(queue=q)
    conn.close()


def scenario_tx(port):
    conn = connect(port)
    ch = conn.channel()
    q = unique("pytx")
    ch.queue_declare(queue=q)
    ch.tx_select()
    ch.basic_publish(exchange="", routing_key=q, body=b"rolled back")
    ch.tx_rollback()
    ch.basic_publish(exchange="", routing_key=q, body=b"committed")
    ch.tx_commit()
    ok = ch.queue_declare(queue=q, passive=True)
    if ok.method.message_count != 1:
        fail("after rollback and commit the queue holds %d, want 1" % ok.method.message_count)
    bodies = []
    drain(ch, q, 1, lambda ch, m, p, b: (bodies.append(b), ch.basic_ack(m.delivery_tag), 1)[2])
    if bodies != [b"committed"]:
        fail("received %r, want only the committed message" % (bodies,))
    conn.close()


def scenario_topic(port):
    conn = connect(port)
    ch = conn.channel()
    # A server-named exclusive queue, as RabbitMQ tutorials make them.
    res = ch.queue_declare(queue="", exclusive=True)
    q = res.method.queue
    if not q:
        fail("no server-named queue")
    ch.queue_bind(queue=q, exchange="amq.topic", routing_key="pytopic.*.eu")
    ch.basic_publish(exchange="amq.topic", routing_key="pytopic.sales.eu", body=b"match")
    ch.basic_publish(exchange="amq.topic", routing_key="pytopic.sales.us", body=b"no match")
    bodies = []
    drain(ch, q, 1, lambda ch, m, p, b: (bodies.append(b), 1)[1], auto_ack=True)
    if bodies != [b"match"]:
        fail("topic binding received %r, want [b'match']" % (bodies,))
    conn.close()


def scenario_fanout(port):
    conn = connect(port)
    ch = conn.channel()
    ex = unique("pyfan")
    ch.exchange_declare(exchange=ex, exchange_type="fanout")
    qs = []
    for _ in range(2):
        q = ch.queue_declare(queue="", exclusive=True).method.queue
        ch.queue_bind(queue=q, exchange=ex)
        qs.append(q)
    ch.basic_publish(exchange=ex, routing_key="", body=b"to all")
    for q in qs:
        bodies = []
        drain(ch, q, 1, lambda ch, m, p, b: (bodies.append(b), 1)[1], auto_ack=True)
        if bodies != [b"to all"]:
            fail("fanout queue %s received %r" % (q, bodies))
    ch.exchange_delete(exchange=ex)
    conn.close()


def scenario_selector(port):
    conn = connect(port)
    ch = conn.channel()
    q = unique("pysel")
    ch.queue_declare(queue=q)
    for color in ["red", "blue", "red", "green"]:
        ch.basic_publish(exchange="", routing_key=q, body=color.encode(),
                         properties=pika.BasicProperties(headers={"color": color}))
    bodies = []
    drain(ch, q, 2, lambda ch, m, p, b: (bodies.append(b), ch.basic_ack(m.delivery_tag), 1)[2],
          arguments={"x-selector": "color = 'red'"})
    if bodies != [b"red", b"red"]:
        fail("selector color = 'red' received %r" % (bodies,))
    try:
        drain(ch, q, 1, lambda *a: 1, arguments={"x-selector": "color = = 'red'"})
        fail("a bad selector was accepted")
    except pika.exceptions.ChannelClosedByBroker as e:
        if e.reply_code not in (400, 406) and "selector" not in str(e.reply_text).lower():
            fail("bad selector closed the channel with %d %s" % (e.reply_code, e.reply_text))
    conn.close()


def scenario_redelivery(port):
    """Sluice's JMS redelivery over 0-9-1: nack with requeue is a failed
    delivery, counted (x-delivery-count on redeliveries) and, past the
    destination's redelivery limit (2, from the test's configuration),
    moved to its error destination pika.redelivery.DLQ."""
    conn = connect(port)
    ch = conn.channel()
    q, dlq = "pika.redelivery", "pika.redelivery.DLQ"
    ch.queue_declare(queue=q, durable=True)
    ch.queue_declare(queue=dlq, durable=True)
    ch.confirm_delivery()
    ch.basic_publish(exchange="", routing_key=q, body=b"poison",
                     properties=pika.BasicProperties(delivery_mode=2, message_id="poison-1"))
    counts = []

    def nack(ch, m, p, b):
        counts.append(((p.headers or {}).get("x-delivery-count"), m.redelivered))
        ch.basic_nack(delivery_tag=m.delivery_tag, requeue=True)
        return 1

    drain(ch, q, 3, nack)
    if [r for _, r in counts] != [False, True, True]:
        fail("deliveries before the limit: %r, want the first not redelivered and two redelivered" % (counts,))
    if counts[1][0] != 1 or counts[2][0] != 2:
        fail("x-delivery-count on redeliveries: %r, want 1 then 2" % ([c for c, _ in counts],))
    got = []
    drain(ch, dlq, 1, lambda ch, m, p, b: (got.append((b, p.message_id)), ch.basic_ack(m.delivery_tag), 1)[2])
    if got != [(b"poison", "poison-1")]:
        fail("error destination received %r, want the poison message" % (got,))
    left = ch.queue_declare(queue=q, durable=True, passive=True).method.message_count
    if left != 0:
        fail("%d messages left on the queue past the redelivery limit" % left)
    conn.close()


def scenario_delay(port):
    """A delivery delay through RabbitMQ's delayed-message header x-delay:
    the message is held back, then comes with its JMSDeliveryTime."""
    conn = connect(port)
    ch = conn.channel()
    q = unique("pydelay")
    ch.queue_declare(queue=q)
    sent = time.time()
    ch.basic_publish(exchange="", routing_key=q, body=b"later",
                     properties=pika.BasicProperties(headers={"x-delay": 700}))
    ch.basic_publish(exchange="", routing_key=q, body=b"now")
    got = []
    drain(ch, q, 2, lambda ch, m, p, b: (got.append((b, time.time() - sent, (p.headers or {}).get("JMSDeliveryTime"))), 1)[1],
          auto_ack=True)
    if [b for b, _, _ in got] != [b"now", b"later"]:
        fail("order %r, want the delayed message last" % ([b for b, _, _ in got],))
    if got[1][1] < 0.6:
        fail("the delayed message came after %.3f s, want at least 0.7 s (less clock slack)" % got[1][1])
    if not isinstance(got[1][2], int):
        fail("JMSDeliveryTime of the delayed message: %r" % (got[1][2],))
    conn.close()


def scenario_priority(port):
    """JMS priority: waiting messages go highest priority first (no queue
    argument needed: every Sluice queue orders by priority)."""
    conn = connect(port)
    ch = conn.channel()
    q = unique("pyprio")
    ch.queue_declare(queue=q)
    ch.confirm_delivery()
    for prio in [1, 9, 4, 7]:
        ch.basic_publish(exchange="", routing_key=q, body=str(prio).encode(),
                         properties=pika.BasicProperties(priority=prio))
    got = []
    drain(ch, q, 4, lambda ch, m, p, b: (got.append((int(b), p.priority)), ch.basic_ack(m.delivery_tag), 1)[2])
    if got != [(9, 9), (7, 7), (4, 4), (1, 1)]:
        fail("delivery order %r, want priorities 9, 7, 4, 1" % (got,))
    conn.close()


def scenario_expiry(port):
    """A per-message expiration: an expired message is never delivered."""
    conn = connect(port)
    ch = conn.channel()
    q = unique("pyexp")
    ch.queue_declare(queue=q)
    ch.confirm_delivery()
    ch.basic_publish(exchange="", routing_key=q, body=b"stale", properties=pika.BasicProperties(expiration="100"))
    ch.basic_publish(exchange="", routing_key=q, body=b"fresh", properties=pika.BasicProperties(expiration="60000"))
    time.sleep(0.4)
    got = []
    drain(ch, q, 1, lambda ch, m, p, b: (got.append(b), 1)[1], auto_ack=True)
    if got != [b"fresh"]:
        fail("received %r, want only the unexpired message" % (got,))
    conn.close()


def scenario_cross(port):
    """Typed properties across protocols: a raw STOMP SEND to /topic/K
    reaches a pika queue bound to amq.topic with key K, and a pika publish
    with typed headers to a queue is read back over STOMP (strings)."""
    import socket
    stomp_port = int(os.environ["SLUICE_STOMP_PORT"])
    conn = connect(port)
    ch = conn.channel()
    q = ch.queue_declare(queue="", exclusive=True).method.queue
    ch.queue_bind(queue=q, exchange="amq.topic", routing_key="pika.cross")
    s = socket.create_connection(("127.0.0.1", stomp_port), timeout=TIMEOUT)
    s.sendall(b"CONNECT\naccept-version:1.2\nhost:/\n\n\x00")
    buf = b""
    while b"\x00" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            fail("STOMP connection closed before CONNECTED")
        buf += chunk
    if not buf.startswith(b"CONNECTED"):
        fail("STOMP: %r" % buf[:80])
    s.sendall(b"SEND\ndestination:/topic/pika.cross\ncolor:red\nreceipt:r1\n\nfrom stomp\x00")
    buf = b""
    while b"RECEIPT" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            fail("STOMP connection closed before the RECEIPT")
        buf += chunk
    got = []
    drain(ch, q, 1, lambda ch, m, p, b: (got.append((b, (p.headers or {}).get("color"))), 1)[1], auto_ack=True)
    if got != [(b"from stomp", "red")]:
        fail("amq.topic binding received %r, want the STOMP message with color red" % (got,))
    dq = unique("pika.cross.q")
    ch.queue_declare(queue=dq)
    ch.basic_publish(exchange="", routing_key=dq, body=b"from pika",
                     properties=pika.BasicProperties(headers={"n": 42, "ok": True, "name": "x"}))
    s.sendall(("SUBSCRIBE\nid:1\ndestination:/queue/%s\nack:auto\n\n\x00" % dq).encode())
    buf = b""
    deadline = time.time() + TIMEOUT
    while b"from pika" not in buf and time.time() < deadline:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    frame = buf[buf.find(b"MESSAGE"):]
    for want in (b"\nn:42\n", b"\nok:true\n", b"\nname:x\n"):
        if want not in frame:
            fail("STOMP MESSAGE lacks %r: %r" % (want, frame[:300]))
    s.close()
    conn.close()


SCENARIOS = {
    "app": scenario_app,
    "get": scenario_get,
    "tx": scenario_tx,
    "topic": scenario_topic,
    "fanout": scenario_fanout,
    "selector": scenario_selector,
    "redelivery": scenario_redelivery,
    "delay": scenario_delay,
    "priority": scenario_priority,
    "expiry": scenario_expiry,
    "cross": scenario_cross,
}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in SCENARIOS:
        print("usage: pika_py.py PORT {%s}" % "|".join(SCENARIOS))
        sys.exit(2)
    SCENARIOS[sys.argv[2]](int(sys.argv[1]))
    print("PASS " + sys.argv[2])


if __name__ == "__main__":
    main()
