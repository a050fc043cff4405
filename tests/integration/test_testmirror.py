"""The offset-preserving test mirror itself (tests/kafka/testmirror.c): killed
with SIGKILL mid-stream and started again, it resumes where the destination
stands, so the destination stays offset-identical to the source (no gap, no
duplicate, same payloads). Every gate test that restarts a mirror relies on
this."""

from __future__ import annotations

import threading
import time

from confluent_kafka import Producer

from kafkabed import wait_until


def produce_until(source, topic, partitions, stop: threading.Event, sent: list):
    """Idempotent acks=all producer straight to the source: unique payloads,
    round-robin over the partitions, until `stop`."""
    p = Producer({"bootstrap.servers": source.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 1})
    i = 0
    while not stop.is_set():
        try:
            p.produce(topic, value=f"tm-{i}".encode(), partition=i % partitions)
            i += 1
        except BufferError:
            pass
        p.poll(0.001 if i % 50 else 0.02)
    assert p.flush(30) == 0
    sent.append(i)


def test_testmirror_killed_mid_stream_resumes_at_destination_hw(make_testmirror, source, dest,
                                                                 topic_name):
    parts = 2
    source.create_topic(topic_name, partitions=parts)
    dest.create_topic(topic_name, partitions=parts)
    mirror = make_testmirror([topic_name], extra=["--settle-ms", "500"])
    stop, sent = threading.Event(), []
    t = threading.Thread(target=produce_until, args=(source, topic_name, parts, stop, sent))
    t.start()
    try:
        for _ in range(3):
            base = sum(dest.high_watermark(topic_name, p) for p in range(parts))
            wait_until(lambda: sum(dest.high_watermark(topic_name, p) for p in range(parts)) > base + 200,
                       timeout=30, what="the mirror copying")
            mirror.kill()  # mid-stream: records in flight to the destination
            time.sleep(0.5)  # the source moves on meanwhile
            mirror.start()
    finally:
        stop.set()
        t.join(60)
    assert sent and sent[0] > 0
    for p in range(parts):
        src_hw = source.high_watermark(topic_name, p)
        wait_until(lambda: dest.high_watermark(topic_name, p) >= src_hw, timeout=60,
                   what=f"destination [{p}] caught up to {src_hw}")
        assert dest.high_watermark(topic_name, p) == src_hw, "no duplicate on the destination"
        src = [(r.offset, r.value) for r in source.consume(topic_name, p, end=src_hw)]
        dst = [(r.offset, r.value) for r in dest.consume(topic_name, p, end=src_hw)]
        assert [o for o, _ in src] == list(range(src_hw))
        assert dst == src, f"partition {p}: destination differs from the source"
    log = mirror.log()
    assert log.count("resuming at destination high watermark") >= 3 * parts, log[-3000:]
    assert "offsets diverged" not in log, log[-3000:]
