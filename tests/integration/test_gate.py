"""The sync gate against real Apache Kafka: a source, a destination, a real
mirror (the offset-preserving test mirror, or MirrorMaker 2), syncgate in
front of the source. Invariant 1 (no false ack), 2 (order), scenarios S1,
S11, S12."""

from __future__ import annotations

import json
import threading
import time

from confluent_kafka import Producer

from kafkabed import wait_until
from rawkafka import RawClient
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture

from sghelpers import (NOT_ENOUGH_REPLICAS_AFTER_APPEND, REMOTE_CODE, TIMEOUT_CODE,  # noqa: F401 - shared
                       assert_held, effective, gated_setup, gated_topic, wait_sync)


def test_every_ack_is_on_the_destination(make_syncgate, make_testmirror, source, dest,
                                         topic_name):
    """Zero RPO: every record a librdkafka idempotent producer sees acknowledged
    through syncgate is already at the same offset on the destination."""
    sg, _ = gated_setup(source, dest, make_syncgate, make_testmirror, topic_name)
    p = Producer({"bootstrap.servers": sg.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 2})
    acked, violations = [], []

    def on_delivery(err, msg):
        assert err is None, err
        hw = dest.high_watermark(topic_name, msg.partition())
        acked.append((msg.partition(), msg.offset()))
        if hw <= msg.offset():
            violations.append((msg.partition(), msg.offset(), hw))

    for i in range(300):
        p.produce(topic_name, key=str(i).encode(), value=f"v{i}".encode(), on_delivery=on_delivery)
        p.poll(0)
    assert p.flush(60) == 0
    assert len(acked) == 300
    assert violations == []
    for part in (0, 1):
        src = [(r.offset, r.value) for r in source.consume(topic_name, part)]
        dst = [(r.offset, r.value) for r in dest.consume(topic_name, part, end=len(src))]
        assert dst == src
    assert sg.metric("syncgate_held_responses") == 0


def test_paused_mirror_holds_then_times_out_with_downmapped_code(
        make_syncgate, make_testmirror, source, dest, topic_name):
    """Mirror paused: no ack; at TimeoutMs an old client (Produce v9) gets
    NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) and a v14 client the provisional
    timeout code, both naming the mirror; resumed: acks flow again."""
    sg, mirror = gated_setup(source, dest, make_syncgate, make_testmirror, topic_name)
    mirror.pause()
    try:
        c = RawClient("127.0.0.1", sg.port)
        t0 = time.monotonic()
        r = c.produce(topic_name, 0, [b"held"], version=9, timeout_ms=3000)
        waited = time.monotonic() - t0
        (p,) = r.topics[topic_name]
        assert p.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert p.base_offset == -1
        assert "dr" in p.error_message
        assert 2.0 <= waited <= 4.0

        # v14 only where syncgate advertises it (a broker serving Produce
        # v13: not Kafka 3.9 or 4.0, test_broker_matrix.py)
        _, apis = c.api_versions()
        if apis[0][1] >= 14:
            _, topics = c.metadata([topic_name])
            topic_id = topics[topic_name][0]
            r = c.produce(topic_name, 0, [b"held14"], version=14, timeout_ms=2000, topic_id=topic_id)
            (p,) = r.topics[topic_id.hex()]
            assert p.error_code == TIMEOUT_CODE
            assert "dr" in p.error_message
    finally:
        mirror.resume()
    r = c.produce(topic_name, 0, [b"after"], version=9, timeout_ms=30000)
    (p,) = r.topics[topic_name]
    assert p.error_code == 0
    assert dest.high_watermark(topic_name, 0) > p.base_offset
    c.close()


def test_held_response_holds_later_responses_s1(make_syncgate, make_testmirror, source, dest,
                                                topic_name):
    """S1: Produce (held) then Metadata on one connection: the Metadata
    response leaves only after the Produce response."""
    sg, mirror = gated_setup(source, dest, make_syncgate, make_testmirror, topic_name)
    c = RawClient("127.0.0.1", sg.port)
    from rawkafka import produce_body, record_batch, uvarint, i8, TAGS0
    mirror.pause()
    try:
        c1 = c.send(0, 9, produce_body(9, -1, 30000, {topic_name: {0: record_batch([b"x"])}}))
        c2 = c.send(3, 12, uvarint(0) + i8(0) + i8(0) + TAGS0)
        assert_held(c, 1.5, after=30, what="a response overtook the held Produce response")
    finally:
        mirror.resume()
    # the timed-out read above consumed nothing: responses come in order
    c.sent = [(c1, 0, 9), (c2, 3, 12)]
    assert c.recv()[0] == c1
    assert c.recv()[0] == c2
    c.close()


def test_upstream_death_while_held_closes_client_s12(make_syncgate, make_testmirror, make_cluster,
                                                     dest, topic_name):
    """S12: the broker dies while a response is held: the client's connection
    closes (retriable), it never gets a success or UNKNOWN_SERVER_ERROR."""
    src = make_cluster("s12src", brokers=1)
    sg, mirror = gated_setup(src, dest, make_syncgate, make_testmirror, topic_name)
    mirror.pause()
    c = RawClient("127.0.0.1", sg.port)
    from rawkafka import produce_body, record_batch
    c.send(0, 9, produce_body(9, -1, 30000, {topic_name: {0: record_batch([b"x"])}}))
    time.sleep(0.5)
    src.stop_broker(src.broker_ids[0], kill=True)
    try:
        corr, body = c.recv()
        raise AssertionError(f"got a response after the broker died: {body!r}")
    except ConnectionError:
        pass
    finally:
        mirror.resume()
        c.close()
    assert sg.proc.alive()


def test_mm2_offset_syncs_gate(make_syncgate, make_mm2, source, dest, topic_name):
    """Strategy mm2: acks wait for MirrorMaker 2's offset-syncs; every acked
    record is on the destination."""
    source.create_topic(topic_name, partitions=1)
    mm2 = make_mm2(topic_name)
    sg = make_syncgate(source, mirrors=[mirror_conf(
        "dest", dest, [topic_name], offsets="mm2",
        mm2_offset_syncs_topic="mm2-offset-syncs.dest.internal")])
    source.produce(topic_name, 5)
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= 5, timeout=120,
               what="MirrorMaker 2 replicating")
    wait_sync(sg, "dest", topic_name, timeout=120)
    c = RawClient("127.0.0.1", sg.port)
    for i in range(10):
        r = c.produce(topic_name, 0, [f"m{i}".encode()], version=9, timeout_ms=30000)
        (p,) = r.topics[topic_name]
        assert p.error_code == 0, p
        assert dest.high_watermark(topic_name, 0) >= 5 + i + 1
    mm2.pause()
    try:
        r = c.produce(topic_name, 0, [b"paused"], version=9, timeout_ms=3000)
        (p,) = r.topics[topic_name]
        assert p.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND
    finally:
        mm2.resume()
        c.close()


def test_concurrent_producers_all_acks_mirrored(make_syncgate, make_testmirror, source, dest,
                                                topic_name):
    """Several connections at once, acks=all, pipelining (max.in.flight 5):
    no ack before the destination has the record."""
    sg, _ = gated_setup(source, dest, make_syncgate, make_testmirror, topic_name)
    errors = []

    def run(n):
        p = Producer({"bootstrap.servers": sg.bootstrap, "acks": "all",
                      "max.in.flight": 5, "linger.ms": 0, "enable.idempotence": True})
        done = []

        def on_delivery(e, m):
            # checked at ack time: the destination must already have it
            if e is not None:
                errors.append(e)
            elif dest.high_watermark(topic_name, m.partition()) <= m.offset():
                errors.append(("acked before mirrored", m.partition(), m.offset()))
            done.append(m)

        for i in range(100):
            p.produce(topic_name, value=f"{n}-{i}".encode(), on_delivery=on_delivery)
            p.poll(0)
        p.flush(60)
        if len(done) != 100:
            errors.append(("missing", 100 - len(done)))

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
