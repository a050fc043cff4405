"""Smoke test of the real-Kafka test bed: a source and a destination cluster,
records produced on the source reach the destination through each mirror.

Invariants checked:
  * test mirror: every record lands at the SAME partition and offset on the
    destination, with the same key, value, headers and timestamp;
  * MirrorMaker 2: every record reaches the destination (same topic name),
    and the offset-syncs topic on the source holds an entry for it
    (offset.lag.max=0) whose downstream offset is a real destination offset.
"""

import time

import pytest

from kafkabed import MM2_OFFSET_SYNCS_TOPIC, BedError, wait_until

pytestmark = pytest.mark.kafka


def test_clusters_up(source, dest):
    assert source.broker_ids == [1] and dest.broker_ids == [1]
    assert source.bootstrap != dest.bootstrap
    # auto topic creation is off on both sides: asking for a topic does not create it
    for c in (source, dest):
        assert c.partitions("no-such-topic-auto-create-check") == []
        assert "no-such-topic-auto-create-check" not in c.topics()


def test_testmirror_preserves_offsets(source, dest, topic_name, make_testmirror):
    parts = 2
    source.create_topic(topic_name, partitions=parts)
    dest.create_topic(topic_name, partitions=parts)
    mirror = make_testmirror([topic_name])

    hdrs = [("trace", b"abc"), ("n", b"1")]
    sent = source.produce(topic_name, 20, headers=hdrs)
    # a few more straight to partition 1 while the mirror runs
    sent += source.produce(topic_name, 5, partition=1, key_prefix="p1-")

    for p in range(parts):
        want = source.high_watermark(topic_name, p)
        assert want > 0
        wait_until(lambda: dest.high_watermark(topic_name, p) >= want, timeout=30,
                   what=f"test mirror copies {topic_name}[{p}] up to {want}")
        assert dest.high_watermark(topic_name, p) == want, "no extra records on the destination"
        src_recs = source.consume(topic_name, p, 0, want)
        dst_recs = dest.consume(topic_name, p, 0, want)
        assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in dst_recs] == \
               [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in src_recs]

    # pause creates lag; resume catches up
    mirror.pause()
    before = dest.high_watermark(topic_name, 0)
    source.produce(topic_name, 3, partition=0, key_prefix="late-")
    target = source.high_watermark(topic_name, 0)
    assert target == before + 3
    time.sleep(1.0)
    assert dest.high_watermark(topic_name, 0) == before, "paused mirror copied records"
    mirror.resume()
    wait_until(lambda: dest.high_watermark(topic_name, 0) == target, timeout=30,
               what="resumed test mirror catches up")


def test_mm2_mirrors_and_writes_offset_syncs(source, dest, topic_name, make_mm2):
    source.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    mm2 = make_mm2(f"{topic_name}.*")

    n = 10
    source.produce(topic_name, n)
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= n, timeout=60,
               what="MirrorMaker 2 copies the records")
    recs = dest.consume(topic_name, 0, 0, n)
    assert sorted(r.value for r in recs) == sorted(f"v{i}".encode() for i in range(n))

    assert MM2_OFFSET_SYNCS_TOPIC in source.topics()

    def synced():
        s = [x for x in source.offset_syncs() if x.topic == topic_name and x.partition == 0]
        return s if s and max(x.upstream for x in s) == n - 1 else None

    syncs = wait_until(synced, timeout=30, what="an offset-sync for the last record")
    for s in syncs:
        assert 0 <= s.upstream < n
        assert 0 <= s.downstream < dest.high_watermark(topic_name, 0)

    # pause / resume
    mm2.pause()
    source.produce(topic_name, 2, key_prefix="late-")
    mm2.resume()
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= n + 2, timeout=60,
               what="resumed MirrorMaker 2 catches up")


def test_three_brokers_isr_shrinks_and_min_isr_refuses(make_cluster, topic_name):
    """The 3-broker bed (separate controller): stopping two brokers shrinks the
    ISR to the leader, acks=all then fails under min.insync.replicas=2 and the
    high watermark stays; a restarted broker rejoins the ISR."""
    c = make_cluster("three", brokers=3)
    assert c.broker_ids == [1, 2, 3] and len(c.bootstrap.split(",")) == 3
    c.create_topic(topic_name, partitions=1, rf=3, config={"min.insync.replicas": 2})
    assert c.topic_config(topic_name)["min.insync.replicas"] == "2"
    c.produce(topic_name, 5)
    wait_until(lambda: sorted(c.isr(topic_name, 0)) == [1, 2, 3], timeout=30, what="full ISR")

    leader = c.partitions(topic_name)[0]["leader"]
    f1, f2 = [b for b in c.broker_ids if b != leader]
    c.stop_broker(f1)              # controlled shutdown
    c.stop_broker(f2, kill=True)   # crash: fenced after the session timeout
    wait_until(lambda: c.isr(topic_name, 0) == [leader], timeout=30,
               what="ISR shrinks to the leader alone")
    with pytest.raises(BedError):
        c.produce(topic_name, 1, timeout=4)   # NOT_ENOUGH_REPLICAS until timeout
    assert c.high_watermark(topic_name, 0) == 5

    c.start_broker(f1)
    wait_until(lambda: len(c.isr(topic_name, 0)) == 2, timeout=60, what="ISR grows back to 2")
    c.produce(topic_name, 1)
    assert c.high_watermark(topic_name, 0) == 6
