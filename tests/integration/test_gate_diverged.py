"""A source topic deleted and recreated while its destination keeps the old
records (offsets preserved): the destination's HW is above the new source's,
and its offsets name other records. Found by a new-user trial — an acks=all
Produce through syncgate succeeded with the mirror paused. No ack may use
such a partition's progress: held, then the gate's error, with the cause
logged."""

from __future__ import annotations

import time

from kafkabed import wait_until
from rawkafka import RawClient
from test_gate import NOT_ENOUGH_REPLICAS_AFTER_APPEND, gated_setup
from sgfixture import make_syncgate  # noqa: F401 - fixture

RETRIABLE_WHILE_RECREATED = (3, 6)  # UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER


def test_recreated_source_topic_is_never_acked_by_the_old_destination(
        make_syncgate, make_testmirror, source, dest, topic_name):
    sg, mirror = gated_setup(source, dest, make_syncgate, make_testmirror, topic_name, partitions=1)
    c = RawClient("127.0.0.1", sg.port)
    for i in range(20):
        (p,) = c.produce(topic_name, 0, [f"old{i}".encode()], version=9, timeout_ms=30000).topics[topic_name]
        assert p.error_code == 0
    assert dest.high_watermark(topic_name, 0) == 20
    mirror.pause()
    source.delete_topic(topic_name)
    wait_until(lambda: topic_name not in source.topics(), timeout=30, what="source topic deleted")
    source.create_topic(topic_name, partitions=1)
    outcomes = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        (p,) = c.produce(topic_name, 0, [b"new"], version=9, timeout_ms=3000).topics[topic_name]
        if p.error_code in RETRIABLE_WHILE_RECREATED:
            time.sleep(0.5)
            continue
        dest_hw = dest.high_watermark(topic_name, 0)
        outcomes.append((p.error_code, p.base_offset, dest_hw))
        if len(outcomes) == 3:
            break
    assert len(outcomes) == 3, outcomes
    # the destination holds 20 old records; each new one is at an offset below 20
    for code, base, dest_hw in outcomes:
        assert code == NOT_ENOUGH_REPLICAS_AFTER_APPEND, (
            f"false ack: new source record acked at {base} while the destination's record "
            f"there is an old one (destination HW {dest_hw}); all: {outcomes}")
    wait_until(lambda: "mirror_destination_ahead_of_source" in sg.log(), timeout=30,
               what="the divergence is logged")
    c.close()
