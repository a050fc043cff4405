"""MirrorMaker 2 at its defaults (scenario S18): progress by record match.

MM2 emits an offset-sync only when the offsets drift by more than
`offset.lag.max` (default 100), and late during bursts. With `offsets: mm2`
syncgate does not wait for the next sync: its match thread
(mirror/mm2_match.c) reads the source partition past the newest sync and the
destination partition past its copy, and proves each source record by its
own copy (key, value, timestamp, headers), in order. So at MM2's defaults:
  - every ack of single records and of bursts (100, 1,000) arrives, none
    timing out, each with the record on the destination when it arrives,
    and nothing is duplicated;
  - a record written to the destination topic by someone else stops the
    proof (logged `mirror_mm2_match_stopped reason=foreign`): a record
    produced after it is never acknowledged by the match — its ack waits for
    an offset-sync covering it or times out — and the stall is reported
    (WARN, syncgate_mirror_stalled_partitions, /v1/mirrors, `--describe`).
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkabed import wait_until
from rawkafka import RawClient
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl, wait_sync

pytestmark = pytest.mark.kafka

SYNCS = "mm2-offset-syncs.dest.internal"


def partitions(sg, topic: str) -> list[dict]:
    _, body = sg.http(f"/v1/mirrors?mirror=mm&topic={topic}")
    for m in json.loads(body)["mirrors"]:
        for t in m["topics"]:
            if t["topic"] == topic:
                return t["partitions"]
    return []


def synced_upstream(source, topic: str) -> int:
    """The greatest upstream offset the offset-syncs topic names for (topic, 0), -1."""
    c = Consumer({"bootstrap.servers": source.bootstrap, "group.id": f"syncs-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(SYNCS, 0), timeout=10)
        c.assign([TopicPartition(SYNCS, 0, lo)])
        best, pos = -1, lo
        while pos < hi:
            m = c.poll(5)
            if m is None:
                break
            if m.error():
                continue
            pos = m.offset() + 1
            k, v = m.key(), m.value()
            tlen = int.from_bytes(k[:2], "big")
            if k[2:2 + tlen].decode() == topic and int.from_bytes(k[2 + tlen:6 + tlen], "big") == 0:
                best = max(best, int.from_bytes(v[:8], "big", signed=True))
        return best
    finally:
        c.close()


def burst(sg, dest, topic: str, n: int, tag: str) -> tuple[float, int]:
    """n records produced at once through syncgate (librdkafka, idempotent,
    acks=all): every delivery succeeded, and its record was on the
    destination when the report arrived. Returns (seconds to the last ack,
    destination records read at the last check)."""
    p = Producer({"bootstrap.servers": sg.bootstrap, "acks": "all", "enable.idempotence": True,
                  "request.timeout.ms": 10000, "message.timeout.ms": 40000, "linger.ms": 5})
    errors, acked = [], []
    p.produce(topic, b"x", partition=0)  # metadata and the producer id first
    p.flush(30)
    t0 = time.monotonic()
    for i in range(n):
        p.produce(topic, f"{tag}-{i}".encode(), partition=0,
                  on_delivery=lambda err, m: errors.append(err) if err else acked.append(m.offset()))
    left = p.flush(60)
    took = time.monotonic() - t0
    assert left == 0 and errors == [] and len(acked) == n, (left, errors[:3], len(acked))
    # every ack's record is on the destination (MM2 keeps the order, so at least last + 1 records)
    hw = dest.high_watermark(topic, 0)
    assert hw >= max(acked) + 1, (hw, max(acked))
    return took, hw


def test_mm2_at_defaults_acks_by_record_match_and_another_writer_stops_it(
        make_syncgate, make_mm2, source, dest, topic_name):
    source.create_topic(topic_name, partitions=1)
    make_mm2(topic_name, props={"offset.lag.max": "100"})
    sg = make_syncgate(source, mirrors=[mirror_conf("mm", dest, [topic_name], offsets="mm2",
                                                    mm2_offset_syncs_topic=SYNCS)])
    source.produce(topic_name, 3)
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= 3, timeout=120,
               what="MirrorMaker 2 copying the records")
    wait_sync(sg, "mm", topic_name, timeout=90)  # promoted at lag 0: proved by the match at MM2's defaults

    # single records: each ack arrives, its record on the destination
    c = RawClient("127.0.0.1", sg.port)
    for i in range(10):
        r = c.produce(topic_name, 0, [f"one-{i}".encode()], version=9, timeout_ms=15000)
        (x,) = r.topics[topic_name]
        assert x.error_code == 0, x
        assert dest.high_watermark(topic_name, 0) >= x.base_offset + 1
    ahead = sg.metric('syncgate_mirror_mm2_match_records_total{mirror="mm",kind="ahead"}')
    print(f"single records: {ahead} offsets proved past the newest offset-sync by the match")
    assert ahead > 0, "the acks did not come from the record match"
    for n in (100, 1000):
        took, _ = burst(sg, dest, topic_name, n, f"b{n}")
        print(f"burst of {n}: last ack {took:.2f} s after the first send")
    src_hw = source.high_watermark(topic_name, 0)
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= src_hw, timeout=30, what="MM2 caught up")
    assert dest.high_watermark(topic_name, 0) == src_hw, "nothing duplicated on the destination"
    proved = sg.metric('syncgate_mirror_mm2_match_records_total{mirror="mm",kind="proved"}')
    print(f"offset-syncs name upstream {synced_upstream(source, topic_name)} of {src_hw - 1}; "
          f"proved by the match: {proved}")
    assert sg.metric("syncgate_mirror_stalled_partitions") == 0
    assert "mirror_mm2_offset_syncs_behind" not in sg.log()

    # another writer: a record written straight to the destination topic
    p = Producer({"bootstrap.servers": dest.bootstrap})
    p.produce(topic_name, b"foreign", partition=0)
    p.flush(10)
    r = c.produce(topic_name, 0, [b"after-foreign"], version=9, timeout_ms=6000)
    (x,) = r.topics[topic_name]
    wait_until(lambda: b"after-foreign" in [m.value for m in dest.consume(topic_name, 0)], timeout=30,
               what="MM2 copying the record after the foreign one")
    print(f"produce after the foreign record: error {x.error_code}")
    if x.error_code == 0:  # allowed only by an offset-sync covering it, never by the match
        assert synced_upstream(source, topic_name) >= x.base_offset, x
    assert sg.metric('syncgate_mirror_mm2_match_stops_total{mirror="mm",reason="foreign"}') >= 1
    stopped = [ln for ln in sg.log().splitlines() if "mirror_mm2_match_stopped" in ln]
    assert stopped and "reason=foreign" in stopped[0], stopped
    if x.error_code != 0:
        wait_until(lambda: any(q.get("stall_reason") for q in partitions(sg, topic_name)), timeout=30,
                   what="the stall reported in /v1/mirrors")
        (p0,) = partitions(sg, topic_name)
        assert p0["stall_reason"] == "offset-syncs and the record match behind the destination", p0
        assert sg.metric(f'syncgate_mirror_stalled_partitions{{mirror="mm",topic="{topic_name}"}}') == 1
        warn = [ln for ln in sg.log().splitlines() if "mirror_mm2_offset_syncs_behind" in ln]
        assert warn and "offset.lag.max=0" in warn[0] and "WARN" in warn[0], warn
        rc, out, err = ctl(sg, "--describe", "--mirror", "mm", "--topic", topic_name)
        assert rc == 0, err
        assert "stalled: 0: offset-syncs and the record match behind the destination" in out, out
    c.close()


def test_read_committed_mm2_an_aborted_transaction_does_not_stop_the_match(
        make_syncgate, make_mm2, source, dest, topic_name):
    """An exactly-once (read_committed) MM2 copies no aborted record. Told so
    (`mm2_isolation_level: read_committed`), the match reads the source
    read_committed too: the records after an aborted transaction are proved
    by their copies at once (no gap stop), each ack with its record on the
    destination, the aborted records never there."""
    source.create_topic(topic_name, partitions=1)
    make_mm2(topic_name, props={"offset.lag.max": "100", "source.consumer.isolation.level": "read_committed"})
    sg = make_syncgate(source, mirrors=[mirror_conf("mm", dest, [topic_name], offsets="mm2",
                                                    mm2_offset_syncs_topic=SYNCS,
                                                    mm2_isolation_level="read_committed")],
                       gate={"transactions": "commit"})
    source.produce(topic_name, 3)
    wait_sync(sg, "mm", topic_name, timeout=90)
    p = Producer({"bootstrap.servers": sg.bootstrap, "transactional.id": f"tx-{topic_name}", "linger.ms": 0})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic_name, value=f"aborted-{i}".encode(), partition=0)
    p.flush(30)
    p.abort_transaction(30)
    ahead0 = sg.metric('syncgate_mirror_mm2_match_records_total{mirror="mm",kind="ahead"}')
    c = RawClient("127.0.0.1", sg.port)
    for i in range(5):
        r = c.produce(topic_name, 0, [f"after-abort-{i}".encode()], version=9, timeout_ms=15000)
        (x,) = r.topics[topic_name]
        assert x.error_code == 0, x
        values = [m.value for m in dest.consume(topic_name, 0)]
        assert f"after-abort-{i}".encode() in values, (i, values[-8:])
    c.close()
    values = [m.value for m in dest.consume(topic_name, 0)]
    assert not [v for v in values if v.startswith(b"aborted-")], "MM2 copied an aborted record"
    assert sg.metric('syncgate_mirror_mm2_match_stops_total{mirror="mm",reason="gap"}') == 0
    ahead = sg.metric('syncgate_mirror_mm2_match_records_total{mirror="mm",kind="ahead"}') - ahead0
    print(f"after the aborted transaction: {ahead} offsets proved past the newest offset-sync")
    assert ahead > 0, "the acks after the abort did not come from the record match"
