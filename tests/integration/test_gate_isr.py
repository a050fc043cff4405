"""The sync gate's MinISR fast failure against a real three-broker destination.

KIP "Errors" / docs/architecture.md: when a registered, effective-SYNC mirror reports
its destination partition's ISR below min.insync.replicas, waiting partitions
fail AT ONCE with NOT_ENOUGH_REMOTE_REPLICAS_AFTER_APPEND (provisional 191 for
Produce v14; NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) for older versions), the
message naming the mirror — never a success (invariant 1, no false ack), never
a wait until TimeoutMs. Once the destination ISR is back, acks resume.

Note: the destination's own min.insync.replicas also blocks the test mirror's
acks=all writes while the ISR is short; that is expected, and the records the
gate failed are copied once the brokers are back.
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka.admin import ConfigResource

from kafkabed import wait_until
from rawkafka import RawClient, produce_body, record_batch
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import effective  # noqa: E402

pytestmark = pytest.mark.kafka

REMOTE_CODE, NOT_ENOUGH_REPLICAS_AFTER_APPEND = 191, 20


def mirror_partitions(sg, mirror: str, topic: str) -> list[dict]:
    """The /v1/mirrors partition entries of (mirror, topic), [] if unknown."""
    _, body = sg.http(f"/v1/mirrors?mirror={mirror}&topic={topic}")
    for m in json.loads(body)["mirrors"]:
        for t in m["topics"]:
            if t["topic"] == topic:
                return t.get("partitions", [])
    return []


def test_min_isr_fails_fast_and_recovers(make_cluster, make_syncgate, make_testmirror, source,
                                         topic_name):
    """Invariant: ISR < MinISR on a SYNC mirror's destination ⇒ (a) a response
    already held fails as soon as syncgate learns the ISR, (b) every new
    acks=all produce fails at once (≪ TimeoutMs) with 20 (v9) / 191 (v14),
    message naming the mirror, never acked; ISR restored ⇒ acks resume and
    each ack is on the destination."""
    dst3 = make_cluster("dst3", brokers=3)
    dst3.create_topic(topic_name, partitions=1, rf=3, config={"min.insync.replicas": 2})
    source.create_topic(topic_name, partitions=1)
    mirror = make_testmirror([topic_name], dest=dst3)
    sg = make_syncgate(source, mirrors=[mirror_conf("dr3", dst3, [topic_name])])
    wait_until(lambda: effective(sg, "dr3", topic_name) == "SYNC", timeout=60,
               what="dr3 promoted to effective SYNC")
    wait_until(lambda: [(p["isr"], p["min_isr"]) for p in mirror_partitions(sg, "dr3", topic_name)]
               == [(3, 2)], timeout=30, what="syncgate reports ISR 3, min.insync.replicas 2")
    # a min.insync.replicas change shows within one ISR round (2 s) and the
    # DescribeConfigs answer awaited in it
    for want in (3, 2):
        res = ConfigResource("topic", topic_name, set_config={"min.insync.replicas": str(want)})
        for f in dst3.admin().alter_configs([res]).values():
            f.result(timeout=30)
        t0 = time.monotonic()
        wait_until(lambda: [p["min_isr"] for p in mirror_partitions(sg, "dr3", topic_name)] == [want],
                   timeout=15, interval=0.1, what=f"syncgate reports min.insync.replicas {want}")
        print(f"\nmin.insync.replicas={want} shown {time.monotonic() - t0:.1f} s after the change")

    c = RawClient("127.0.0.1", sg.port)
    r = c.produce(topic_name, 0, [b"before"], version=9, timeout_ms=20000)
    (p,) = r.topics[topic_name]
    assert p.error_code == 0, p
    assert dst3.high_watermark(topic_name, 0) > p.base_offset

    # (a) a response held (mirror paused) fails once the destination ISR drops
    leader = dst3.partitions(topic_name)[0]["leader"]
    followers = [b for b in dst3.broker_ids if b != leader]
    mirror.pause()
    held_c = RawClient("127.0.0.1", sg.port)
    try:
        held_c.send(0, 9, produce_body(9, -1, 60000, {topic_name: {0: record_batch([b"held"])}}))
        wait_until(lambda: sg.metric("syncgate_held_responses") >= 1, timeout=10,
                   what="the produce is held")
        for b in followers:
            dst3.stop_broker(b)  # controlled shutdown: leaves the ISR at once
        t0 = time.monotonic()
        held_c.sock.settimeout(30)
        _, body = held_c.recv()
        held_wait = time.monotonic() - t0
    finally:
        mirror.resume()
    from rawkafka import parse_produce_response
    (hp,) = parse_produce_response(body, 9).topics[topic_name]
    assert hp.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND, hp
    assert hp.base_offset == -1
    assert "dr3" in hp.error_message and "min.insync.replicas" in hp.error_message, hp
    # syncgate polls the ISR every 2 s: far below the 60 s TimeoutMs
    assert held_wait < 15, held_wait
    held_c.close()

    wait_until(lambda: [(p["isr"], p["min_isr"]) for p in mirror_partitions(sg, "dr3", topic_name)]
               == [(1, 2)], timeout=30, what="syncgate reports ISR 1 < min.insync.replicas 2")
    assert effective(sg, "dr3", topic_name) == "SYNC"

    # (b) new produces fail at once, both versions, naming the mirror
    fast = []
    for i in range(3):
        t0 = time.monotonic()
        r = c.produce(topic_name, 0, [f"short{i}".encode()], version=9, timeout_ms=20000)
        fast.append(time.monotonic() - t0)
        (p,) = r.topics[topic_name]
        assert p.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND, p
        assert p.base_offset == -1
        assert "dr3" in p.error_message and "ISR 1 < min.insync.replicas 2" in p.error_message, p
    assert max(fast) < 2.0, fast

    _, topics = c.metadata([topic_name])
    topic_id = topics[topic_name][0]
    t0 = time.monotonic()
    r = c.produce(topic_name, 0, [b"short14"], version=14, timeout_ms=20000, topic_id=topic_id)
    fast14 = time.monotonic() - t0
    (p,) = r.topics[topic_id.hex()]
    assert p.error_code == REMOTE_CODE, p
    assert p.base_offset == -1
    assert "dr3" in p.error_message, p
    assert fast14 < 2.0, fast14
    print(f"\nheld response failed {held_wait:.2f}s after the ISR drop; "
          f"new produce failed in {max(fast) * 1000:.0f} ms (v9), {fast14 * 1000:.0f} ms (v14)")

    # restart: ISR back, the mirror copies what it was blocked on, acks resume
    for b in followers:
        dst3.start_broker(b)
    wait_until(lambda: all(p["isr"] >= 2 for p in mirror_partitions(sg, "dr3", topic_name)),
               timeout=90, what="syncgate sees the destination ISR back at >= 2")
    t0 = time.monotonic()
    r = c.produce(topic_name, 0, [b"after"], version=9, timeout_ms=30000)
    (p,) = r.topics[topic_name]
    assert p.error_code == 0, (p, time.monotonic() - t0)
    assert dst3.high_watermark(topic_name, 0) > p.base_offset
    # nothing lost: every source record (also the failed ones) is on dst3, same offsets
    want = source.high_watermark(topic_name, 0)
    wait_until(lambda: dst3.high_watermark(topic_name, 0) >= want, timeout=30,
               what="dst3 caught up")
    assert [(x.offset, x.value) for x in dst3.consume(topic_name, 0, end=want)] == \
           [(x.offset, x.value) for x in source.consume(topic_name, 0, end=want)]
    c.close()
    assert sg.metric("syncgate_held_responses") == 0


def test_replication_factor_below_min_isr_is_acked(make_syncgate, make_testmirror, source, dest,
                                                   topic_name):
    """Since Kafka 3.7 the destination broker needs min(min.insync.replicas,
    replication factor) in-sync replicas for an acks=all write: an RF-1 topic
    with min.insync.replicas=2 (what MirrorMaker 2 creates with its own
    replication.factor on a cluster defaulting to 2) takes them. The gate
    applies the same rule: gated produces are acknowledged once mirrored,
    never failed at once with "ISR 1 < min.insync.replicas 2"."""
    for t in (topic_name, topic_name + "-direct"):
        dest.create_topic(t, partitions=1, rf=1, config={"min.insync.replicas": 2})
    # the destination broker itself takes acks=all writes to such a topic
    assert dest.produce(topic_name + "-direct", 1, partition=0) == [(0, 0)]
    source.create_topic(topic_name, partitions=1)
    make_testmirror([topic_name])
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic_name])])
    wait_until(lambda: effective(sg, "dr", topic_name) == "SYNC", timeout=60,
               what="dr promoted to effective SYNC")
    # ISR 1 and the minimum the broker enforces (1), as /v1/mirrors shows them
    wait_until(lambda: [(p["isr"], p["min_isr"]) for p in mirror_partitions(sg, "dr", topic_name)]
               == [(1, 1)], timeout=30, what="syncgate reports ISR 1, effective min ISR 1")
    c = RawClient("127.0.0.1", sg.port)
    try:
        for i in range(3):
            r = c.produce(topic_name, 0, [f"g{i}".encode()], version=9, timeout_ms=20000)
            (p,) = r.topics[topic_name]
            assert p.error_code == 0, p
            assert dest.high_watermark(topic_name, 0) > p.base_offset
    finally:
        c.close()
    assert "mirror_partition_under_min_isr" not in sg.log()
