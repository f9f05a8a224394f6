#!/usr/bin/python3
"""Real clients against a three-node Sluice cluster (docs/cluster.md).

Run by interop/cluster_test.go as `cluster_py.py PORT SCENARIO` (PORT is
unused); SLUICE_CLUSTER_STOMP and SLUICE_CLUSTER_AMQP list the nodes'
host:port, comma-separated, followers first. Each scenario connects the way
docs/cluster.md tells users of that client to, sends a message with a
confirmation and receives it, and prints "PASS SCENARIO" (exit 0), or what
went wrong (exit 1). Every wait is bounded.

- stomp-py: stomp.py's host list moves on only when a TCP connect fails,
  and a follower accepts the connection and answers ERROR, so connect()
  raises ConnectFailedException. The application tries the node the
  ERROR's `leader` header names, else the next in its list.
- pika: a list of ConnectionParameters; pika tries each in turn, and a
  follower's connection.close during the handshake counts as a failure.
- proton: Qpid Proton's reconnect does not follow amqp:connection:redirect;
  the handler connects to the redirect's network-host and port itself.

With follower_clients = "refuse" (the followers' ports refuse the
connection) the clients' own lists do it all:

- stomp-py-list: stomp.Connection(hosts) with every node.
- proton-urls: container.connect(urls=[...]) with its default reconnect.
"""

import os
import queue
import sys
import time

TIMEOUT = 10.0  # seconds any single wait may take


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def nodes(var):
    out = []
    for n in os.environ[var].split(","):
        host, port = n.rsplit(":", 1)
        out.append((host, int(port)))
    return out


def stomp_py():
    import stomp
    import stomp.exception

    class Listener(stomp.ConnectionListener):
        def __init__(self):
            self.leader = None
            self.receipts = queue.Queue()
            self.messages = queue.Queue()

        def on_error(self, frame):
            self.leader = frame.headers.get("leader")

        def on_receipt(self, frame):
            self.receipts.put(frame.headers.get("receipt-id"))

        def on_message(self, frame):
            self.messages.put(frame.body)

    todo = nodes("SLUICE_CLUSTER_STOMP")
    leader = todo[-1]
    conn, lis, refused = None, None, 0
    for _ in range(2 * len(todo)):
        host = todo.pop(0)
        c, l = stomp.Connection([host], reconnect_attempts_max=1), Listener()
        c.set_listener("l", l)
        try:
            c.connect(wait=True, headers={"client-id": "cluster-py"})
            conn, lis = c, l
            break
        except stomp.exception.ConnectFailedException:
            refused += 1
            if l.leader:  # the follower named the leader: go there next
                h, p = l.leader.rsplit(":", 1)
                todo.insert(0, (h, int(p)))
            else:
                todo.append(host)
    if conn is None:
        fail("no node accepted the connection")
    if refused != 1 or conn.transport.current_host_and_port != leader:
        fail("connected to %s after %d refusals, want the leader %s after the first node's" %
             (conn.transport.current_host_and_port, refused, leader))
    conn.subscribe("/queue/cluster.py.stomp", id="1", ack="auto")
    conn.send("/queue/cluster.py.stomp", "hello", headers={"persistent": "true", "receipt": "r1"})
    try:
        if lis.receipts.get(timeout=TIMEOUT) != "r1":
            fail("wrong receipt")
        if lis.messages.get(timeout=TIMEOUT) != "hello":
            fail("wrong message")
    except queue.Empty:
        fail("no receipt or message within %ss" % TIMEOUT)
    conn.disconnect()


def stomp_py_list():
    import stomp

    class Listener(stomp.ConnectionListener):
        def __init__(self):
            self.receipts = queue.Queue()
            self.messages = queue.Queue()

        def on_receipt(self, frame):
            self.receipts.put(frame.headers.get("receipt-id"))

        def on_message(self, frame):
            self.messages.put(frame.body)

    hosts = nodes("SLUICE_CLUSTER_STOMP")
    conn, lis = stomp.Connection(hosts, reconnect_attempts_max=3), Listener()
    conn.set_listener("l", lis)
    conn.connect(wait=True)
    if conn.transport.current_host_and_port != hosts[-1]:
        fail("connected to %s, want the leader %s" % (conn.transport.current_host_and_port, hosts[-1]))
    conn.subscribe("/queue/cluster.py.list", id="1", ack="auto")
    conn.send("/queue/cluster.py.list", "hello", headers={"persistent": "true", "receipt": "r1"})
    try:
        if lis.receipts.get(timeout=TIMEOUT) != "r1" or lis.messages.get(timeout=TIMEOUT) != "hello":
            fail("wrong receipt or message")
    except queue.Empty:
        fail("no receipt or message within %ss" % TIMEOUT)
    conn.disconnect()


def proton_urls():
    from proton import Message
    from proton.handlers import MessagingHandler
    from proton.reactor import Container

    urls = ["amqp://%s:%d" % n for n in nodes("SLUICE_CLUSTER_AMQP")]

    class Handler(MessagingHandler):
        def __init__(self):
            super().__init__()
            self.got, self.err, self.host = None, None, None

        def on_start(self, event):
            self.timer = event.container.schedule(3 * TIMEOUT, self)
            conn = event.container.connect(urls=urls, sasl_enabled=True, allowed_mechs="ANONYMOUS")
            event.container.create_sender(conn, "cluster.py.urls")
            event.container.create_receiver(conn, "cluster.py.urls")

        def on_connection_opened(self, event):
            self.host = event.connection.connected_address

        def on_sendable(self, event):
            if event.sender.credit and not getattr(self, "sent", False):
                self.sent = True
                event.sender.send(Message(body="hello", durable=True))

        def on_message(self, event):
            self.got = event.message.body
            self.timer.cancel()
            event.connection.close()

        def on_timer_task(self, event):
            self.err = "no message within %ss" % (3 * TIMEOUT)
            event.container.stop()

    h = Handler()
    Container(h).run()
    if h.err:
        fail(h.err)
    if h.got != "hello":
        fail("got %r" % h.got)


def pika_client():
    import pika

    creds = pika.PlainCredentials("guest", "guest")
    params = [pika.ConnectionParameters(host=h, port=p, credentials=creds, connection_attempts=1,
                                        socket_timeout=TIMEOUT, blocked_connection_timeout=TIMEOUT)
              for h, p in nodes("SLUICE_CLUSTER_AMQP")]
    conn = pika.BlockingConnection(params)
    leader = params[-1]
    if conn._impl.params.port != leader.port:
        fail("pika connected to port %d, want the leader's %d" % (conn._impl.params.port, leader.port))
    ch = conn.channel()
    ch.confirm_delivery()
    ch.queue_declare("cluster.py.pika", durable=True)
    ch.basic_publish("", "cluster.py.pika", b"hello", properties=pika.BasicProperties(delivery_mode=2), mandatory=True)
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        _, _, body = ch.basic_get("cluster.py.pika", auto_ack=True)
        if body is not None:
            if body != b"hello":
                fail("got %r" % body)
            conn.close()
            return
        time.sleep(0.05)
    fail("no message within %ss" % TIMEOUT)


def proton_client():
    from proton import Message, symbol
    from proton.handlers import MessagingHandler
    from proton.reactor import Container

    urls = ["amqp://%s:%d" % n for n in nodes("SLUICE_CLUSTER_AMQP")]

    class Handler(MessagingHandler):
        def __init__(self):
            super().__init__()
            self.redirects, self.url, self.got, self.err = 0, None, None, None

        def on_start(self, event):
            self.timer = event.container.schedule(3 * TIMEOUT, self)
            self.open(event.container, urls[0])

        def open(self, container, url):
            self.url = url
            conn = container.connect(url, reconnect=False, sasl_enabled=True, allowed_mechs="ANONYMOUS")
            container.create_sender(conn, "cluster.py.proton")
            container.create_receiver(conn, "cluster.py.proton")

        def on_connection_error(self, event):
            cond = event.connection.remote_condition
            if cond is not None and cond.name == "amqp:connection:redirect" and self.redirects < 3:
                self.redirects += 1
                event.connection.close()
                info = cond.info or {}
                host, port = info.get(symbol("network-host")), info.get(symbol("port"))
                self.open(event.container, "amqp://%s:%d" % (host, port))
                return
            self.err = "connection error %s" % (cond,)
            self.stop(event)

        def on_sendable(self, event):
            if event.sender.credit and not getattr(self, "sent", False):
                self.sent = True
                event.sender.send(Message(body="hello", durable=True))

        def on_rejected(self, event):
            self.err = "rejected: %s" % (event.delivery.remote.condition,)
            self.stop(event)

        def on_message(self, event):
            self.got = event.message.body
            self.stop(event)

        def on_timer_task(self, event):
            self.err = "no message within %ss" % (3 * TIMEOUT)
            event.container.stop()

        def stop(self, event):
            self.timer.cancel()
            event.connection.close()

    h = Handler()
    Container(h).run()
    if h.err:
        fail(h.err)
    if h.redirects != 1 or h.url != urls[-1]:
        fail("ended at %s after %d redirects, want the leader %s after one" % (h.url, h.redirects, urls[-1]))
    if h.got != "hello":
        fail("got %r" % h.got)


def main():
    scenario = sys.argv[2]
    {"stomp-py": stomp_py, "pika": pika_client, "proton": proton_client,
     "stomp-py-list": stomp_py_list, "proton-urls": proton_urls}[scenario]()
    print("PASS " + scenario)


if __name__ == "__main__":
    main()
