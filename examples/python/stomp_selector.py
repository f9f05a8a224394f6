#!/usr/bin/python3
"""stomp.py quick start: a consumer with a JMS message selector.

Three orders go to a queue. A consumer with the selector "region = 'eu' AND
JMSPriority >= 7" gets only the one that matches; the other two stay on the
queue for a consumer without one. Port: SLUICE_STOMP_PORT (default 61613)."""
import os, queue, sys
import stomp  # Debian's python3-stomp

QUEUE = "/queue/quickstart.orders"
inbox = queue.Queue()

class Inbox(stomp.ConnectionListener):
    def on_message(self, frame):
        inbox.put((frame.headers["subscription"], frame.body))

def take(n):  # the next n messages, waiting at most 10 s for each
    try:
        return [inbox.get(timeout=10) for _ in range(n)]
    except queue.Empty:
        sys.exit("FAIL: fewer than %d messages within 10 s" % n)

conn = stomp.Connection12([("127.0.0.1", int(os.environ.get("SLUICE_STOMP_PORT", 61613)))], reconnect_attempts_max=1)
conn.set_listener("inbox", Inbox())
conn.connect(wait=True)
for region, prio in (("us", 9), ("eu", 4), ("eu", 8)):
    conn.send(QUEUE, "%s order, priority %d" % (region, prio), headers={"region": region, "priority": prio})
conn.subscribe(QUEUE, id="eu-urgent", headers={"selector": "region = 'eu' AND JMSPriority >= 7"})
picked = take(1)
conn.subscribe(QUEUE, id="everything")
rest = sorted(take(2))
conn.disconnect()
print("with the selector:  ", picked)
print("without a selector: ", rest)
want = [("everything", "eu order, priority 4"), ("everything", "us order, priority 9")]
if picked != [("eu-urgent", "eu order, priority 8")] or rest != want:
    sys.exit("FAIL: the selector did not pick the one matching order")
print("PASS: the selector picked the matching order; the others waited on the queue")
