"""confluent-kafka (librdkafka) producer speaking the tests/clients protocol.
Options: idempotent=0|1 request_timeout_ms retries delivery_timeout_ms."""

import threading

from confluent_kafka import Producer

from lineproto import Out, args

bootstrap, topic, o = args()
out = Out()
fatal = []
p = Producer({
    "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
    "enable.idempotence": o.get("idempotent", "1") == "1",
    "request.timeout.ms": int(o.get("request_timeout_ms", 3000)),
    "retries": int(o.get("retries", 1000)), "retry.backoff.ms": 100,
    "delivery.timeout.ms": int(o.get("delivery_timeout_ms", 120000)),
    "error_cb": lambda e: fatal.append(e) if e.fatal() else None,
})
stop = threading.Event()


def poller():
    while not stop.is_set():
        p.poll(0.05)


def on_delivery(err, msg):
    v = msg.value().decode()
    if err is not None:
        out.err(msg.partition(), v, f"code={err.code()} name={err.name()} retriable={err.retriable()} "
                                    f"fatal={err.fatal()} {err.str()}")
    elif msg.offset() is None or msg.offset() < 0:
        # librdkafka's implicit ack (a later batch of the partition succeeded): no offset
        out.ack(msg.partition(), -1, v)
    else:
        out.ack(msg.partition(), msg.offset(), v)


t = threading.Thread(target=poller, daemon=True)
t.start()


def send(partition, value):
    while True:
        try:
            p.produce(topic, value=value.encode(), partition=partition, on_delivery=on_delivery)
            return
        except BufferError:
            p.poll(0.05)


out.run(send)
p.flush(60)
stop.set()
t.join()
for e in fatal:
    out.line(f"FATAL {e.code()} {e.str()}")
out.line("DONE")
