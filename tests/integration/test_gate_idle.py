"""A held response outlives the broker's idle timer (S15, invariant 7): the
broker closes connections idle for `connections.max.idle.ms`; a connection
that is idle only because syncgate holds its Produce response is kept active
by syncgate's keepalive requests (`upstream.keepalive_ms`), so the client
gets an ack or the gate's error code, never a disconnect."""

from __future__ import annotations

import time

from rawkafka import RawClient, parse_produce_response, produce_body, record_batch
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import wait_sync

IDLE_MS = 8000
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20


def idle_setup(make_cluster, make_testmirror, make_syncgate, dest, topic, gate=None):
    src = make_cluster("s15src", brokers=1, props={"connections.max.idle.ms": str(IDLE_MS)})
    src.create_topic(topic)
    dest.create_topic(topic)
    mirror = make_testmirror([topic], source=src)
    sg = make_syncgate(src, mirrors=[mirror_conf("dr", dest, [topic])], gate=gate)
    wait_sync(sg, "dr", topic)
    return src, mirror, sg


def test_held_response_acked_after_broker_idle_timeout_s15(
        make_cluster, make_testmirror, make_syncgate, dest, topic_name):
    """Mirror paused 14 s (> the broker's 8 s idle timeout), TimeoutMs 25000:
    after the resume the held Produce is acked on the same connection."""
    src, mirror, sg = idle_setup(make_cluster, make_testmirror, make_syncgate, dest, topic_name)
    c = RawClient("127.0.0.1", sg.port)
    mirror.pause()
    t0 = time.monotonic()
    try:
        c.send(0, 9, produce_body(9, -1, 25000, {topic_name: {0: record_batch([b"held"])}}))
        time.sleep(14)
    finally:
        mirror.resume()
    _, body = c.recv()  # a disconnect raises ConnectionError
    waited = time.monotonic() - t0
    (p,) = parse_produce_response(body, 9).topics[topic_name]
    assert p.error_code == 0
    assert waited >= 14
    assert dest.high_watermark(topic_name, 0) > p.base_offset
    assert sg.metric("syncgate_upstream_keepalives_total") >= 2
    # the connection is still usable
    r = c.produce(topic_name, 0, [b"after"], version=9, timeout_ms=30000)
    assert r.topics[topic_name][0].error_code == 0
    c.close()


def test_held_response_times_out_with_code_after_broker_idle_timeout_s15(
        make_cluster, make_testmirror, make_syncgate, dest, topic_name):
    """Mirror paused for good, gate.max_hold_ms 14000 (> the 8 s idle timeout):
    a Produce v9 gets NOT_ENOUGH_REPLICAS_AFTER_APPEND (20), not a disconnect."""
    src, mirror, sg = idle_setup(make_cluster, make_testmirror, make_syncgate, dest, topic_name,
                                 gate={"max_hold_ms": 14000})
    c = RawClient("127.0.0.1", sg.port)
    mirror.pause()
    try:
        t0 = time.monotonic()
        r = c.produce(topic_name, 0, [b"held"], version=9, timeout_ms=25000)
        waited = time.monotonic() - t0
    finally:
        mirror.resume()
    (p,) = r.topics[topic_name]
    assert p.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert "dr" in p.error_message
    assert 13 <= waited <= 17
    c.close()
