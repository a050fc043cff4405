"""kafka-python producer (2.x and 3.x) speaking the tests/clients protocol.
Options: idempotent=0|1 request_timeout_ms retries delivery_timeout_ms."""

import logging

import kafka
from kafka import KafkaProducer

from lineproto import Out, args

logging.basicConfig(level=logging.WARNING)
bootstrap, topic, o = args()
want = {
    "bootstrap_servers": [bootstrap], "acks": "all", "linger_ms": 5,
    "request_timeout_ms": int(o.get("request_timeout_ms", 3000)),
    "retries": int(o.get("retries", 1000)), "retry_backoff_ms": 100,
    "enable_idempotence": o.get("idempotent", "1") == "1",
    "delivery_timeout_ms": int(o.get("delivery_timeout_ms", 120000)),
    # 2.x allows idempotence only with one request in flight
    "max_in_flight_requests_per_connection": 1 if kafka.__version__.startswith("2.") else 5,
}
# kafka-python 2.0 knows neither idempotence nor delivery_timeout_ms
conf = {k: v for k, v in want.items() if k in KafkaProducer.DEFAULT_CONFIG}
if want["enable_idempotence"] and "enable_idempotence" not in conf:
    raise SystemExit(f"kafka-python {kafka.__version__} has no idempotent producer")
p = KafkaProducer(**conf)
out = Out()


def send(partition, value):
    f = p.send(topic, value=value.encode(), partition=partition)
    f.add_callback(lambda md: out.ack(md.partition, md.offset, value))
    f.add_errback(lambda e: out.err(partition, value, f"{type(e).__name__} code={getattr(e, 'errno', None)} "
                                    f"retriable={getattr(e, 'retriable', None)} {e}"))


out.run(send)
p.flush()
p.close()
out.line("DONE")
