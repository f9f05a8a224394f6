#!/usr/bin/python3
"""Qpid Proton quick start (Debian's python3-qpid-proton): a durable subscription.
Client ID = container id, subscription name = link name. The subscriber goes
away; two news items are published; it comes back with the same client ID and
name and gets both. Port: SLUICE_AMQP_PORT (default 5672)."""
import os, sys
from proton import Message
from proton.reactor import Container, DurableSubscription
from proton.utils import BlockingConnection

URL = "amqp://127.0.0.1:%s" % os.environ.get("SLUICE_AMQP_PORT", "5672")
TOPIC = "topic://quickstart.news"

def subscribe():  # connect as client ID quickstart-proton, attach subscription "news"
    container = Container()
    container.container_id = "quickstart-proton"
    conn = BlockingConnection(URL, timeout=10, container=container)
    return conn.create_receiver(TOPIC, name="news", credit=10, options=DurableSubscription())

def main():
    subscribe().connection.close()  # away: the subscription stays and keeps what is published
    pub = BlockingConnection(URL, timeout=10)
    sender = pub.create_sender(TOPIC)
    for body in ("news 1", "news 2"):
        sender.send(Message(body=body, durable=True))
    pub.close()
    sub = subscribe()
    got = [sub.receive(timeout=10).body for _ in range(2)]
    for _ in got: sub.accept()  # one accept per message: it settles the oldest unsettled one
    sub.close()  # a detach with closed=true deletes the subscription
    sub.connection.close()
    if got != ["news 1", "news 2"]:
        sys.exit("FAIL: got %s, want ['news 1', 'news 2']" % got)
    print("PASS: back with the same client ID and subscription name, got", got, "published while away")

try:
    main()
except Exception as e:  # a timeout, a refused link or connection
    sys.exit("FAIL: %s: %s" % (type(e).__name__, e))
