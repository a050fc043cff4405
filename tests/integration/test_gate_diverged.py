"""The destination's offsets name other records than the source's (offsets
preserved): a source topic deleted and recreated while its destination keeps
the old records (found by a new-user trial — an acks=all Produce through
syncgate succeeded with the mirror paused), or records written straight to a
destination partition, not by the mirror (a field report: the next produces
were acknowledged in milliseconds by the destination's HW). Either way the
destination's HW is above the source's. No ack may use such a partition's
progress: held, then the gate's retriable error, with the cause logged at
once."""

from __future__ import annotations

import time

from kafkabed import wait_until
from rawkafka import RawClient
from sghelpers import NOT_ENOUGH_REPLICAS_AFTER_APPEND, gated_setup
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
        # the first held produce's demanded read saw the destination ahead
        assert "mirror_destination_ahead_of_source" in sg.log(), "not logged while the first produce was held"
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


def test_records_written_straight_to_the_destination_are_never_acked_by_it(
        make_syncgate, make_testmirror, source, dest, topic_name):
    sg, mirror = gated_setup(source, dest, make_syncgate, make_testmirror, topic_name, partitions=1)
    c = RawClient("127.0.0.1", sg.port)
    for i in range(20):
        (p,) = c.produce(topic_name, 0, [f"v{i}".encode()], version=9, timeout_ms=30000).topics[topic_name]
        assert p.error_code == 0
    wait_until(lambda: dest.high_watermark(topic_name, 0) == 20, timeout=30, what="mirrored")
    # the misuse: 8 records produced to the destination partition directly
    dest.produce(topic_name, 8, partition=0, key_prefix="foreign")
    assert dest.high_watermark(topic_name, 0) == 28
    outcomes = []
    for i in range(3):
        t0 = time.monotonic()
        (p,) = c.produce(topic_name, 0, [f"after{i}".encode()], version=9, timeout_ms=3000).topics[topic_name]
        outcomes.append((p.error_code, p.base_offset, round(time.monotonic() - t0, 3),
                         dest.high_watermark(topic_name, 0)))
        assert p.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND, (
            f"false ack: source record {p.base_offset} acked by a destination that holds foreign "
            f"records; so far: {outcomes}")
        if i == 0:
            assert "mirror_destination_ahead_of_source" in sg.log(), (
                "the divergence is logged while the first produce is held")
    # the test mirror copies each to the destination 8 offsets further on:
    # the destination's HW passes every one of them, and names other records
    for code, base, took, dest_hw in outcomes:
        assert dest_hw > base + 1, outcomes
    line = next(l for l in sg.log().splitlines() if "mirror_destination_ahead_of_source" in l)
    assert "written straight to the destination" in line, line
    assert sg.metric("syncgate_held_responses") == 0
    c.close()
