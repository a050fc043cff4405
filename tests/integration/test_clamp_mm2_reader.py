"""A real MirrorMaker 2 that reads the source THROUGH syncgate ("Mirror
readers are never clamped"; invariant 1b).

MM2 is the `offsets: mm2` mirror that gates the topic, and its source
bootstrap is syncgate. The topic is SYNC from the start, so every record MM2
has not copied yet is past the mirrored high watermark: a clamped MM2 can
never read it, the mirror stands still and every acks=all produce times out.
Not exempt, syncgate says so once per client id (`consumer_clamp_mirror_reader`,
naming the id). With MM2's client id in `consumers.exempt_client_ids` (a live
setting, applied here by a reload) its fetches are not clamped: it catches up,
the gate releases again, and an ordinary consumer through syncgate is still
clamped to what MM2 has copied (also while MM2 is paused). That MM2 reads
read_committed while the mirror is configured `mm2_isolation_level:
read_uncommitted`: syncgate sees it in the exempt reader's Fetch and warns
once (`mirror_reader_read_committed`).
"""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import KafkaException, Producer

from kafkabed import wait_until
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from test_consumer_clamp import confluent_consume
from test_gate_multi import wait_effective
from test_observability import reload

pytestmark = pytest.mark.kafka

OFFSET_SYNCS = "mm2-offset-syncs.dest.internal"


def produce_through(sg, topic: str, values: list[str], timeout_ms: int) -> tuple[list, list]:
    """acks=all through syncgate, no retries past `timeout_ms`: ([offsets acked], [errors])."""
    p = Producer({"bootstrap.servers": sg.bootstrap, "acks": "all", "linger.ms": 0,
                  "enable.idempotence": False, "retries": 0,
                  "request.timeout.ms": timeout_ms, "message.timeout.ms": timeout_ms + 2000})
    acked, errors = [], []

    def cb(err, msg):
        (errors if err is not None else acked).append(err if err is not None else msg.offset())
    for v in values:
        p.produce(topic, value=v.encode(), partition=0, on_delivery=cb)
    p.flush(timeout_ms / 1000 + 30)
    return acked, errors


def dest_hw(dest, topic: str) -> int:
    """The destination partition 0's high watermark; -1 while the topic does not exist."""
    try:
        return dest.high_watermark(topic, 0)
    except KafkaException:
        return -1


def test_mm2_through_syncgate_is_clamped_unless_exempt(make_syncgate, make_mm2, source, dest, topic_name):
    source.create_topic(topic_name, partitions=1)
    sg = make_syncgate(source, mirrors=[mirror_conf("mm", dest, [topic_name], offsets="mm2",
                                                    mm2_offset_syncs_topic=OFFSET_SYNCS)])
    # the topic is empty: lag zero, SYNC at once — before MM2 copied anything
    wait_effective(sg, "mm", topic_name, timeout=120)
    # read_committed (exactly-once MM2); without transactions it copies the same records
    mm2 = make_mm2(topic_name, source_bootstrap=sg.bootstrap,
                   props={"source.consumer.isolation.level": "read_committed"})
    source.produce(topic_name, 3)  # straight to the broker (not through syncgate)

    # MM2 not exempt: its fetches are clamped to its own progress (0)
    warned = wait_until(lambda: [ln for ln in sg.log().splitlines() if "consumer_clamp_mirror_reader" in ln],
                        timeout=60, what="the consumer_clamp_mirror_reader warning")
    ids = [re.search(r'client_id="([^"]*)"', ln).group(1) for ln in warned]
    assert any("MirrorSourceConnector" in i for i in ids), warned
    assert len(ids) == len(set(ids)), f"warned more than once for a client id: {warned}"
    acked, errors = produce_through(sg, topic_name, ["held-0"], 6000)
    assert acked == [] and len(errors) == 1, (acked, errors)  # MM2 cannot copy what it may not read
    assert source.high_watermark(topic_name, 0) == 4
    assert dest_hw(dest, topic_name) <= 0  # nothing copied (topic empty, or not created yet)
    assert sg.metric("syncgate_consumer_records_withheld_total") > 0
    warned_again = [ln for ln in sg.log().splitlines() if "consumer_clamp_mirror_reader" in ln]
    assert len(warned_again) == len(warned), "the warning is once per client id"

    # exempt by client id (live): MM2 reads past the mirrored HW, catches up, the gate releases
    cfg = dict(sg.config)
    cfg["consumers"] = {"exempt_client_ids": [".*MirrorSourceConnector.*"]}
    reload(sg, cfg)
    wait_until(lambda: dest_hw(dest, topic_name) >= 4, timeout=60,
               what="MM2 copying the withheld records once exempt")
    exempt0 = sg.metric("syncgate_consumer_exempt_requests_total")
    values = [f"r{i}" for i in range(5)]
    acked, errors = produce_through(sg, topic_name, values, 30000)
    assert errors == [] and acked == [4, 5, 6, 7, 8], (acked, errors)
    assert dest.high_watermark(topic_name, 0) >= 9  # acked: MM2 had copied each one
    assert sg.metric("syncgate_consumer_exempt_requests_total") > exempt0
    # the exempt reader fetches read_committed while the mirror is configured
    # read_uncommitted (the default): said once, naming the mirror
    rc = [ln for ln in sg.log().splitlines() if "mirror_reader_read_committed" in ln]
    assert len(rc) == 1 and "mirror=mm" in rc[0] and "MirrorSourceConnector" in rc[0], rc

    # an ordinary consumer is still clamped, to what MM2 has: everything now
    got: list = []
    confluent_consume(sg.bootstrap, topic_name, "read_uncommitted", 30, 9, got, "after-exempt")
    assert [o for _, o, _ in got] == list(range(9)), got
    assert [v for _, o, v in got if o >= 3] == [b"held-0"] + [v.encode() for v in values]

    # while MM2 is paused, records appended are withheld from that consumer,
    # but still reach MM2 (exempt) once it runs again
    mm2.pause()
    try:
        source.produce(topic_name, 2, partition=0, values=["p0", "p1"], acks=1, enable_idempotence=False)
        got2: list = []
        confluent_consume(sg.bootstrap, topic_name, "read_uncommitted", 4, 11, got2, "while-paused")
        assert [o for _, o, _ in got2] == list(range(9)), got2
    finally:
        mm2.resume()
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= 11, timeout=60, what="MM2 after the pause")
    t0 = time.monotonic()
    got3: list = []
    confluent_consume(sg.bootstrap, topic_name, "read_uncommitted", 30, 11, got3, "after-pause")
    assert [o for _, o, _ in got3] == list(range(11)), (got3, time.monotonic() - t0)
