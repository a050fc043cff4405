"""The sync gate with several mirrors and with the other progress strategies.

* Two destination clusters, two offset-preserving test mirrors, both desired
  SYNC: an ack needs BOTH (invariant 1 per mirror: every acknowledged record is
  on both destinations at ack time); pausing either stops acks; the timeout
  message names the slowest (greatest lag) mirror, not the first configured;
  an ASYNC mirror (topic not in its sync_topics) never gates.
* `progress: tail` (a consumer at the destination's end): zero RPO, and the
  pause → hold → timeout → resume cycle.
* `offsets: mm2` (MirrorMaker 2 offset-syncs): pause → timeout naming the
  mirror → resume → a held produce is released, every ack on the destination.
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Producer

from kafkabed import wait_until
from rawkafka import RawClient, parse_produce_response, produce_body, record_batch
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import assert_held

pytestmark = pytest.mark.kafka

TIMEOUT_CODE, NOT_ENOUGH_REPLICAS_AFTER_APPEND = 190, 20


def topic_state(sg, mirror: str, topic: str) -> dict:
    _, body = sg.http(f"/v1/mirrors?mirror={mirror}&topic={topic}")
    for m in json.loads(body)["mirrors"]:
        for t in m["topics"]:
            if t["topic"] == topic:
                return t
    return {}


def wait_effective(sg, mirror: str, topic: str, want: str = "SYNC", timeout: float = 60):
    wait_until(lambda: topic_state(sg, mirror, topic).get("effective") == want, timeout=timeout,
               what=f"{mirror}/{topic} effective {want}")


def produce_times_out_naming(c: RawClient, topic: str, mirror: str) -> None:
    """A Produce to `topic` with TimeoutMs 3 s while `mirror` does not copy
    it: answered NOT_ENOUGH_REPLICAS_AFTER_APPEND naming the mirror, after
    2 to 4 s."""
    t0 = time.monotonic()
    r = c.produce(topic, 0, [b"paused"], version=9, timeout_ms=3000)
    waited = time.monotonic() - t0
    (x,) = r.topics[topic]
    assert x.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND, x
    assert x.error_message.startswith(f"mirror {mirror}:"), x
    assert 2.0 <= waited <= 4.0, waited


def send_held(c: RawClient, topic: str, value: bytes, timeout_ms: int = 60000) -> None:
    c.send(0, 9, produce_body(9, -1, timeout_ms, {topic: {0: record_batch([value])}}))


def recv_produce(c: RawClient, topic: str):
    _, body = c.recv()
    (p,) = parse_produce_response(body, 9).topics[topic]
    return p


def seq_latency_ms(c: RawClient, topic: str, n: int = 40) -> tuple[float, float]:
    """(p50, max) ms of n sequential single-record acks=all v9 produces, each
    asserted successful (a measured figure, not a pass/fail criterion)."""
    lat = []
    for i in range(n):
        t0 = time.monotonic()
        r = c.produce(topic, 0, [f"lat{i}".encode()], version=9, timeout_ms=30000)
        lat.append((time.monotonic() - t0) * 1000)
        (x,) = r.topics[topic]
        assert x.error_code == 0, x
    lat.sort()
    return lat[n // 2], lat[-1]


def test_two_destinations_both_gate_slowest_named_async_never_gates(
        make_cluster, make_syncgate, make_testmirror, source, dest, topic_name):
    """Invariants: with mirrors east (dest) and west (dst2) SYNC for t1, every
    ack of t1 is on both destinations at ack time; pausing either holds acks
    and a resumed mirror releases them; at TimeoutMs the message names the
    mirror with the greatest lag (whichever it is); west is ASYNC for t2 (not
    in its sync_topics): pausing it never holds t2's acks."""
    dst2 = make_cluster("dst2", brokers=1)
    t1 = topic_name
    t2 = "u" + topic_name[1:]          # no common prefix issues with t1
    for t in (t1, t2):
        source.create_topic(t, partitions=1)
        dest.create_topic(t, partitions=1)
        dst2.create_topic(t, partitions=1)
    east = make_testmirror([t1, t2])
    west = make_testmirror([t1, t2], dest=dst2)
    sg = make_syncgate(source, mirrors=[mirror_conf("east", dest, [f"^{t1}$", f"^{t2}$"]),
                                        mirror_conf("west", dst2, [f"^{t1}$"])])
    for m, t in (("east", t1), ("west", t1), ("east", t2)):
        wait_effective(sg, m, t)
    st = topic_state(sg, "west", t2)  # {} when the gate does not track it at all
    assert (st.get("desired", "ASYNC"), st.get("effective", "ASYNC")) == ("ASYNC", "ASYNC"), st

    # 1. every ack of t1 is on both destinations at ack time
    p = Producer({"bootstrap.servers": sg.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 1})
    acked, violations, errors = [], [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
            return
        for cl in (dest, dst2):
            hw = cl.high_watermark(t1, 0)
            if hw <= msg.offset():
                violations.append((cl.name, msg.offset(), hw))
        acked.append(msg.offset())

    for i in range(150):
        p.produce(t1, value=f"v{i}".encode(), on_delivery=on_delivery)
        p.poll(0)
    assert p.flush(60) == 0
    assert errors == [] and violations == [] and len(acked) == 150

    c = RawClient("127.0.0.1", sg.port)
    ungated = "n" + topic_name[1:]
    source.create_topic(ungated, partitions=1)
    both, one, none = seq_latency_ms(c, t1), seq_latency_ms(c, t2), seq_latency_ms(c, ungated)
    print(f"\nsequential ack latency p50/max: two mirrors {both[0]:.1f}/{both[1]:.1f} ms, "
          f"one mirror {one[0]:.1f}/{one[1]:.1f} ms (poll 5 ms), "
          f"ungated {none[0]:.1f}/{none[1]:.1f} ms")
    # 2. either mirror paused: acks stop; resumed: the held ack is released, on both
    for paused, other in ((west, east), (east, west)):
        paused.pause()
        try:
            t0 = time.monotonic()
            send_held(c, t1, b"held-" + paused.name.encode())
            assert_held(c, 1.5)
        finally:
            paused.resume()
        r = recv_produce(c, t1)
        waited = time.monotonic() - t0
        assert r.error_code == 0, r
        assert dest.high_watermark(t1, 0) > r.base_offset
        assert dst2.high_watermark(t1, 0) > r.base_offset
        assert waited >= 1.5  # latency follows the slower mirror

    # 3. west paused: t1 times out naming west (v9 → 20, v14 → 190); t2 (west ASYNC) acks
    _, md = c.metadata([t1])
    t1_id = md[t1][0]
    west.pause()
    try:
        r = c.produce(t1, 0, [b"to-west"], version=9, timeout_ms=2500)
        (x,) = r.topics[t1]
        assert x.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND and x.base_offset == -1, x
        assert x.error_message.startswith("mirror west:"), x
        r = c.produce(t1, 0, [b"to-west14"], version=14, timeout_ms=2500, topic_id=t1_id)
        (x,) = r.topics[t1_id.hex()]
        assert x.error_code == TIMEOUT_CODE and x.error_message.startswith("mirror west:"), x
        for i in range(5):
            t0 = time.monotonic()
            r = c.produce(t2, 0, [f"async{i}".encode()], version=9, timeout_ms=20000)
            (x,) = r.topics[t2]
            assert x.error_code == 0, x
            assert time.monotonic() - t0 < 2.0
            assert dest.high_watermark(t2, 0) > x.base_offset         # east (SYNC) has it
        assert dst2.high_watermark(t2, 0) <= x.base_offset            # west (ASYNC, paused) not
    finally:
        west.resume()

    # 4. both paused, one further behind: the message names the one with more lag,
    #    in both orders (not simply the first configured)
    for first, second in ((east, west), (west, east)):
        wait_until(lambda: all(cl.high_watermark(t1, 0) == source.high_watermark(t1, 0)
                               for cl in (dest, dst2)), timeout=30, what="both caught up")
        first.pause()
        try:
            source.produce(t1, 4, key_prefix="behind-")
            second.pause()
            try:
                r = c.produce(t1, 0, [b"both-paused"], version=9, timeout_ms=2500)
                (x,) = r.topics[t1]
                assert x.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND, x
                assert x.error_message.startswith(f"mirror {('east' if first is east else 'west')}:"), x
                assert "lag 5" in x.error_message, x
            finally:
                second.resume()
        finally:
            first.resume()

    # nothing acknowledged is missing: both destinations equal the source
    want = source.high_watermark(t1, 0)
    for cl in (dest, dst2):
        wait_until(lambda: cl.high_watermark(t1, 0) >= want, timeout=30, what=f"{cl.name} caught up")
        assert [(x.offset, x.value) for x in cl.consume(t1, 0, end=want)] == \
               [(x.offset, x.value) for x in source.consume(t1, 0, end=want)]
    c.close()
    assert sg.metric("syncgate_held_responses") == 0


def test_tail_progress_zero_rpo_and_pause_cycle(make_syncgate, make_testmirror, source, dest,
                                                topic_name):
    """progress: tail — every ack (librdkafka idempotent, 2 partitions) is on
    the destination at the same offset at ack time; paused mirror: held, then
    the timeout code naming the mirror; resumed: a held produce is released."""
    source.create_topic(topic_name, partitions=2)
    dest.create_topic(topic_name, partitions=2)
    mirror = make_testmirror([topic_name])
    sg = make_syncgate(source, mirrors=[mirror_conf("tail", dest, [topic_name], progress="tail")])
    wait_effective(sg, "tail", topic_name)

    p = Producer({"bootstrap.servers": sg.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 1})
    acked, violations = [], []

    def on_delivery(err, msg):
        assert err is None, err
        if dest.high_watermark(topic_name, msg.partition()) <= msg.offset():
            violations.append((msg.partition(), msg.offset()))
        acked.append((msg.partition(), msg.offset(), msg.value()))

    for i in range(200):
        p.produce(topic_name, key=str(i).encode(), value=f"v{i}".encode(), on_delivery=on_delivery)
        p.poll(0)
    assert p.flush(60) == 0
    assert len(acked) == 200 and violations == []
    for part in (0, 1):
        src = {r.offset: r.value for r in source.consume(topic_name, part)}
        dst = {r.offset: r.value for r in dest.consume(topic_name, part, end=max(src) + 1)}
        for pp, off, v in acked:
            if pp == part:
                assert dst[off] == v == src[off]

    c = RawClient("127.0.0.1", sg.port)
    ungated = topic_name + "-nogate"
    source.create_topic(ungated, partitions=1)
    gated, plain = seq_latency_ms(c, topic_name), seq_latency_ms(c, ungated)
    print(f"\nsequential ack latency p50/max: tail-gated {gated[0]:.1f}/{gated[1]:.1f} ms, "
          f"ungated {plain[0]:.1f}/{plain[1]:.1f} ms")
    mirror.pause()
    try:
        produce_times_out_naming(c, topic_name, "tail")
        send_held(c, topic_name, b"held")
        assert_held(c, 1.0)
    finally:
        mirror.resume()
    x = recv_produce(c, topic_name)
    assert x.error_code == 0, x
    assert dest.high_watermark(topic_name, 0) > x.base_offset
    c.close()


def test_mm2_pause_timeout_resume_cycle(make_syncgate, make_mm2, source, dest, topic_name):
    """offsets: mm2 — paused MirrorMaker 2: held, then 20 naming the mirror at
    TimeoutMs; a produce held across the resume is released with NONE and is
    on the destination (offset-syncs ⇒ copied); later acks flow again."""
    source.create_topic(topic_name, partitions=1)
    mm2 = make_mm2(topic_name)
    sg = make_syncgate(source, mirrors=[mirror_conf(
        "mm", dest, [topic_name], offsets="mm2",
        mm2_offset_syncs_topic="mm2-offset-syncs.dest.internal")])
    source.produce(topic_name, 3)
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= 3, timeout=120,
               what="MirrorMaker 2 replicating")
    wait_effective(sg, "mm", topic_name, timeout=120)

    c = RawClient("127.0.0.1", sg.port)
    r = c.produce(topic_name, 0, [b"first"], version=9, timeout_ms=30000)
    (x,) = r.topics[topic_name]
    assert x.error_code == 0, x
    mm2.pause()
    try:
        produce_times_out_naming(c, topic_name, "mm")
        n_dst = dest.high_watermark(topic_name, 0)
        send_held(c, topic_name, b"held", timeout_ms=60000)
        assert_held(c, 1.5)
        assert dest.high_watermark(topic_name, 0) == n_dst  # really paused
    finally:
        mm2.resume()
    x = recv_produce(c, topic_name)
    assert x.error_code == 0, x
    # MM2 does not preserve offsets: "held" is on the destination, by value
    dvals = [r.value for r in dest.consume(topic_name, 0)]
    assert b"held" in dvals and b"first" in dvals
    for i in range(5):
        r = c.produce(topic_name, 0, [f"after{i}".encode()], version=9, timeout_ms=30000)
        (x,) = r.topics[topic_name]
        assert x.error_code == 0, x
    assert sum(1 for v in (r.value for r in dest.consume(topic_name, 0))
               if v.startswith(b"after")) == 5
    c.close()
    # offset.lag.max=0: the offset-syncs follow the destination, no stall is
    # reported (the sparse case is test_mm2_defaults.py)
    time.sleep(4)  # longer than the stall threshold (3 s)
    assert sg.metric("syncgate_mirror_stalled_partitions") == 0
    assert "mirror_mm2_offset_syncs_behind" not in sg.log()
    assert topic_state(sg, "mm", topic_name)["stalled_partitions"] == 0


def test_partial_timeout_one_request_two_partitions_s2(make_syncgate, make_testmirror, source,
                                                       dest, topic_name):
    """S2 (partitions of two topics in ONE Produce request): topic a is gated
    by mirror "ma", topic b by mirror "mb" (two test mirrors into the same
    destination cluster); mb paused. Right: a[0] → NONE with its real base
    offset (the record is there on the destination), b[0] → the timeout code
    (20 for v9, 190 for v14) with BaseOffset -1 naming mb; the response
    leaves at TimeoutMs, never later."""
    a, b = topic_name, "u" + topic_name[1:]
    for t in (a, b):
        source.create_topic(t, partitions=1)
        dest.create_topic(t, partitions=1)
    make_testmirror([a])
    mb = make_testmirror([b])
    sg = make_syncgate(source, mirrors=[mirror_conf("ma", dest, [f"^{a}$"]),
                                        mirror_conf("mb", dest, [f"^{b}$"])])
    wait_effective(sg, "ma", a)
    wait_effective(sg, "mb", b)
    c = RawClient("127.0.0.1", sg.port)
    _, md = c.metadata([a, b])
    ids = {a: md[a][0], b: md[b][0]}
    mb.pause()
    try:
        for version, code in ((9, NOT_ENOUGH_REPLICAS_AFTER_APPEND), (14, TIMEOUT_CODE)):
            t0 = time.monotonic()
            c.send(0, version, produce_body(version, -1, 3000,
                                            {a: {0: record_batch([f"a{version}".encode()])},
                                             b: {0: record_batch([f"b{version}".encode()])}},
                                            ids if version >= 13 else None))
            _, body = c.recv()
            waited = time.monotonic() - t0
            r = parse_produce_response(body, version)
            key = (lambda t: ids[t].hex()) if version >= 13 else (lambda t: t)
            (pa,) = r.topics[key(a)]
            (pb,) = r.topics[key(b)]
            assert pa.error_code == 0 and pa.base_offset >= 0, pa
            assert pa.error_message in (None, ""), pa
            assert [x.value for x in dest.consume(a, 0, pa.base_offset, pa.base_offset + 1)] == \
                [f"a{version}".encode()]
            assert pb.error_code == code and pb.base_offset == -1, pb
            assert pb.error_message.startswith("mirror mb:"), pb
            assert 2.0 <= waited <= 3.2, waited
    finally:
        mb.resume()
    # resumed: both partitions of one request ack
    r = c.produce(b, 0, [b"after"], version=9, timeout_ms=30000)
    (pb,) = r.topics[b]
    assert pb.error_code == 0 and dest.high_watermark(b, 0) > pb.base_offset
    c.close()


@pytest.mark.parametrize("progress", [
    "poll",
    "tail"])
def test_partial_timeout_same_topic_p0_p1_s2(make_cluster, make_syncgate, make_testmirror,
                                             source, topic_name, progress):
    """S2 literally: one Produce request to p0 and p1 of one topic; the
    destination has p0 (its leader, broker 1, is healthy) but not p1 (its
    leader, broker 2, is frozen with SIGSTOP, so the mirror cannot write it).
    Right: p0 → NONE with its base offset, p1 → 20 (v9) naming the mirror,
    the response at TimeoutMs. An unresponsive destination leader must not
    hold back the progress of partitions led by healthy brokers."""
    from confluent_kafka.admin import NewTopic
    d2 = make_cluster("s2dst", brokers=2)
    source.create_topic(topic_name, partitions=2)
    fs = d2.admin().create_topics([NewTopic(topic_name, 2, replica_assignment=[[1], [2]])])
    fs[topic_name].result(timeout=30)
    wait_until(lambda: [p["leader"] for p in d2.partitions(topic_name)] == [1, 2], timeout=30,
               what="p0 led by broker 1, p1 by broker 2")
    make_testmirror([topic_name], dest=d2)
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", d2, [topic_name], progress=progress)])
    wait_effective(sg, "dr", topic_name)
    c = RawClient("127.0.0.1", sg.port)
    r = c.produce(topic_name, 0, [b"warm"], version=9, timeout_ms=30000)
    assert r.topics[topic_name][0].error_code == 0
    d2.pause_broker(2)
    try:
        if progress == "tail":
            # p0 alone while p1's leader is frozen: measured (the worker's
            # background lag poll blocks in offsets_for_times meanwhile)
            t0 = time.monotonic()
            r = c.produce(topic_name, 0, [b"p0-alone"], version=9, timeout_ms=3000)
            alone = time.monotonic() - t0
            print(f"\ntail: p0 alone acked in {alone * 1000:.0f} ms with p1's leader frozen "
                  f"(code {r.topics[topic_name][0].error_code})")
        t0 = time.monotonic()
        # poll: a deadline before broker 2 is fenced (session timeout 4 s; once
        # fenced, p1 has no leader and p0's ListOffsets goes through again).
        # tail: progress comes from fetches between the worker's blocking calls.
        timeout_ms = 4000 if progress == "poll" else 10000
        c.send(0, 9, produce_body(9, -1, timeout_ms, {topic_name: {0: record_batch([b"p0"]),
                                                              1: record_batch([b"p1"])}}))
        # the destination does have p0 (its leader is healthy), well before the deadline
        wait_until(lambda: d2.high_watermark(topic_name, 0) >= 2, timeout=5,
                   what="the mirror copies p0 while p1's leader is frozen")
        p0_on_dest = time.monotonic() - t0
        _, body = c.recv()
        waited = time.monotonic() - t0
        parts = {x.index: x for x in parse_produce_response(body, 9).topics[topic_name]}
        print(f"\nS2 same topic: p0 on the destination after {p0_on_dest:.2f}s; "
              f"response after {waited:.2f}s: {parts}")
        assert parts[1].error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND and \
            parts[1].base_offset == -1 and parts[1].error_message.startswith("mirror dr:"), parts
        assert waited <= timeout_ms / 1000, waited
        assert parts[0].error_code == 0 and parts[0].base_offset >= 0, parts
        assert parts[0].base_offset == (2 if progress == "tail" else 1)
    finally:
        d2.resume_broker(2)
    c.close()
