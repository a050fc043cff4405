"""A retry of a batch the source appended, through the failover's fence.

An idempotent producer whose acknowledgement timed out (the gate held the
answer while the mirror lagged) retries the batch under the same producer id
and sequence. Once the failover's fence stands the retry used to be refused
("not appended") until the switch, where the destination stored it a second
time. The sidecar remembers the batches its broker appended, so the retry
is acknowledged at the offset the source gave — held by the gate until
mirrored — and every record is on the destination once.
"""
from __future__ import annotations

import threading
import time

from kafkabed import wait_until
from rawkafka import RawClient
from sgfixture import make_syncgate  # noqa: F401 - fixture
from sghelpers import ctl, describe
from test_failover import topic_state
from test_switch import switch_sidecar


def produce(sg, topic, value: bytes, seq: int, pid: int, timeout_ms: int = 20000):
    c = RawClient("127.0.0.1", sg.port)
    try:
        (p,) = c.produce(topic, 0, [value], producer=(pid, 0, seq), timeout_ms=timeout_ms).topics[topic]
        return p
    finally:
        c.close()


def test_a_retry_of_an_appended_batch_is_acknowledged_through_the_fence_and_stored_once(
        bed, make_syncgate, make_testmirror, source, dest, topic_name):
    topic, pid = topic_name, 31337  # an idempotent producer id: the source takes any it has no state for
    source.create_topic(topic, partitions=1)
    dest.create_topic(topic, partitions=1)
    mirror = make_testmirror([topic])
    sg = switch_sidecar(bed, make_syncgate, source, dest, topic)
    first = produce(sg, topic, b"a0", 0, pid)
    assert first.error_code == 0, first
    mirror.pause()
    lost = produce(sg, topic, b"a1", 1, pid, timeout_ms=1500)  # appended, not mirrored in time
    assert lost.error_code != 0, lost
    assert source.high_watermark(topic, 0) == first.base_offset + 2, "the source appended a1"
    failover: dict = {}

    def run_failover():
        failover["result"] = ctl(sg, "failover", "--mirror", "dr", "--timeout-ms", "60000", "--switch", timeout=150)

    t = threading.Thread(target=run_failover, daemon=True)
    t.start()
    try:
        wait_until(lambda: topic_state(sg, "dr", topic).get("fenced"), timeout=30, what="the failover fenced the topic")
        retry: dict = {}
        r = threading.Thread(target=lambda: retry.update(p=produce(sg, topic, b"a1", 1, pid)), daemon=True)
        r.start()
        time.sleep(1.5)
        assert "p" not in retry, "the retry was answered before the destination had a1"
    finally:
        mirror.resume()
    r.join(30)
    assert retry["p"].error_code == 0, retry["p"]
    assert retry["p"].base_offset == first.base_offset + 1, "acknowledged at the offset the source gave"
    t.join(150)
    rc, out, err = failover["result"]
    assert rc == 0, (out, err)
    wait_until(lambda: describe(sg).get("serving") == "dr", timeout=10, what="the sidecar serves the destination")
    assert sg.metric("syncgate_produce_retries_answered_total") >= 1
    nxt = produce(sg, topic, b"a2", 2, pid)  # the producer goes on after the switch
    assert nxt.error_code == 0, nxt
    stored = [(rec.offset, rec.value) for rec in dest.consume(topic, 0)]
    values = [v for _, v in stored]
    assert values.count(b"a1") == 1 and values.count(b"a0") == 1 and values.count(b"a2") == 1, stored
    assert dict(stored)[first.base_offset + 1] == b"a1"
    assert dict(stored)[nxt.base_offset] == b"a2"
