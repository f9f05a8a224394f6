#!/usr/bin/python3
"""pika quick start: a RabbitMQ application gets JMS redelivery, unchanged.

The code is what a pika app for RabbitMQ looks like: declare a queue,
publish with confirms, consume with manual acks, and nack with requeue when
the handler fails. Against Sluice the nack is a failed delivery: the
message comes back flagged redelivered, with x-delivery-count, and after
the queue's redelivery limit (2, in examples/config/quickstart.toml) it is
moved to the error queue quickstart.pika.DLQ instead of looping forever.
Port: SLUICE_AMQP_PORT (default 5672; AMQP 0-9-1 and 1.0 share it)."""
import os, sys
import pika  # Debian's python3-pika

params = pika.ConnectionParameters("127.0.0.1", int(os.environ.get("SLUICE_AMQP_PORT", 5672)),
                                   credentials=pika.PlainCredentials("guest", "guest"))
conn = pika.BlockingConnection(params)
ch = conn.channel()
ch.queue_declare(queue="quickstart.pika", durable=True)
ch.queue_declare(queue="quickstart.pika.DLQ", durable=True)
ch.confirm_delivery()  # basic_publish returns once the broker has the message
ch.basic_publish(exchange="", routing_key="quickstart.pika", body=b"order 42",
                 properties=pika.BasicProperties(delivery_mode=2, message_id="order-42"))

attempts = []
for method, props, body in ch.consume("quickstart.pika", inactivity_timeout=2):
    if method is None:
        break  # nothing more within 2 s: no fourth delivery
    attempts.append((method.redelivered, (props.headers or {}).get("x-delivery-count")))
    ch.basic_nack(delivery_tag=method.delivery_tag, requeue=True)  # the handler failed
ch.cancel()
print("deliveries (redelivered, x-delivery-count):", attempts)

method, props, body = ch.basic_get(queue="quickstart.pika.DLQ", auto_ack=True)
print("error queue:", body, props.message_id if props else None)
conn.close()
if attempts != [(False, None), (True, 1), (True, 2)] or body != b"order 42":
    sys.exit("FAIL: want three deliveries (two redelivered) and then the message on the error queue")
print("PASS: redelivered twice, then moved to the error queue")
