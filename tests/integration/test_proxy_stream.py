"""Large responses through syncgate (scenario S17; invariant 5):
responses stream through a fixed window instead of being buffered whole, so
memory stays within the configured limits however large the frames, and a
frame above limits.max_frame_bytes that a client could read directly is not
refused. Both field reports, scaled down with the ratio of frame to limit
kept."""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from sgfixture import make_syncgate  # noqa: F401 - fixture


def status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {key}")


def fill(source, topic: str, partitions: int, per_partition: int, value_size: int) -> None:
    p = Producer({"bootstrap.servers": source.bootstrap, "acks": "all", "linger.ms": 20,
                  "batch.size": 1000000, "message.max.bytes": 1000000,
                  "queue.buffering.max.kbytes": 1048576})
    value = b"r" * value_size
    for part in range(partitions):
        for _ in range(per_partition // value_size):
            while True:
                try:
                    p.produce(topic, value=value, partition=part)
                    break
                except BufferError:
                    p.poll(0.1)
    assert p.flush(60) == 0


def test_six_consumers_of_a_large_partition_stay_within_the_limits(make_syncgate, source,
                                                                   topic_name):
    """Field report 1 (48 MB partition, six librdkafka consumers, 16 MiB /
    8 MiB held-bytes limits: RSS went 9 → 268 MiB and stayed at 191 MiB),
    scaled by 1/4: a 12 MB partition, 4 MiB / 2 MiB limits. RSS grows by at
    most the limits plus the fixed per-connection window, and goes back
    down afterwards."""
    source.create_topic(topic_name, partitions=1)
    fill(source, topic_name, 1, 12_000_000, 100_000)
    limits = {"max_held_bytes": 4 << 20, "max_held_bytes_per_connection": 2 << 20}
    sg = make_syncgate(source, limits=limits)
    pid = sg.proc.pid
    rss0 = status_kb(pid, "VmRSS")
    peak = [rss0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], status_kb(pid, "VmRSS"))
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    procs = [subprocess.Popen(["kcat", "-b", sg.bootstrap, "-C", "-t", topic_name, "-p", "0",
                               "-o", "beginning", "-e", "-q", "-f", "%S\\n",
                               "-X", "fetch.max.bytes=52428800",
                               "-X", "max.partition.fetch.bytes=4194304"],
                              stdout=subprocess.PIPE, text=True) for _ in range(6)]
    outs = [p.communicate(timeout=180)[0] for p in procs]
    stop.set()
    t.join()
    for out in outs:
        assert sum(int(x) for x in out.split()) == 12_000_000, "each consumer read it all"
    time.sleep(1)
    rss_after = status_kb(pid, "VmRSS")
    hwm = max(peak[0], status_kb(pid, "VmHWM"))
    # limits (4 MiB) + six windows (1 MiB client output + 64 KiB read each) + slack
    bound_kb = (4 << 10) + 6 * 1152 + 8192
    assert hwm - rss0 <= bound_kb, f"RSS {rss0} → peak {hwm} KiB (bound +{bound_kb} KiB)"
    assert rss_after - rss0 <= 4096, f"RSS {rss0} → {rss_after} KiB after the burst"
    assert sg.metric("syncgate_responses_streamed_total") > 0


def test_response_above_max_frame_bytes_is_streamed_not_refused(make_syncgate, source,
                                                                 topic_name):
    """Field report 2 (three 45 MB partitions, fetch.max.bytes 150 MB,
    max_frame_bytes 100 MB: 0 bytes in 60 s, a reconnect loop), scaled:
    three 1.5 MB partitions, a consumer asking for 6 MB per fetch, and
    max_frame_bytes 2 MB. The consumer reads everything, as it does
    directly; no frame is refused."""
    source.create_topic(topic_name, partitions=3)
    per = 1_500_000
    fill(source, topic_name, 3, per, 100_000)
    sg = make_syncgate(source, limits={"max_frame_bytes": 2_000_000})

    def read_all(bootstrap: str) -> int:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{time.time()}",
                      "enable.auto.commit": False, "fetch.max.bytes": 6_000_000,
                      "max.partition.fetch.bytes": 3_000_000, "fetch.wait.max.ms": 500,
                      "fetch.min.bytes": 4_000_000})
        c.assign([TopicPartition(topic_name, p, 0) for p in range(3)])
        got, deadline = 0, time.time() + 60
        while got < 3 * per and time.time() < deadline:
            for m in c.consume(100, timeout=1):
                if not m.error():
                    got += len(m.value())
        c.close()
        return got

    assert read_all(source.bootstrap) == 3 * per
    assert read_all(sg.bootstrap) == 3 * per
    assert sg.metric("syncgate_rejected_frames_total") == 0
    assert sg.metric("syncgate_responses_streamed_total") > 0
    assert "frame_refused" not in sg.log()


def test_produce_requests_above_a_mib_stream_upstream_intact(make_syncgate, source, topic_name):
    """The request direction: Produce requests above PROXY_STREAM_MIN_REQUEST
    (1 MiB; librdkafka sends one partition's batch per request, so batches of
    up to 3 MB) go upstream as they arrive, their records spliced or copied
    opaque; every record lands in the broker's log unchanged."""
    source.create_topic(topic_name, partitions=4, config={"max.message.bytes": 8_000_000})
    sg = make_syncgate(source)
    before = sg.metric("syncgate_responses_streamed_total")
    p = Producer({"bootstrap.servers": sg.bootstrap, "acks": "all", "linger.ms": 300,
                  "batch.size": 3_000_000, "message.max.bytes": 4_000_000,
                  "compression.type": "none", "queue.buffering.max.kbytes": 1048576})
    sent = {}
    for i in range(300):
        for part in range(4):
            value = os.urandom(10_000)
            sent[(part, i)] = hashlib.sha1(value).hexdigest()
            p.produce(topic_name, value=value, key=str(i).encode(), partition=part)
    assert p.flush(60) == 0
    # the counter counts streamed requests too; nothing here fetches through syncgate
    assert sg.metric("syncgate_responses_streamed_total") > before
    c = Consumer({"bootstrap.servers": source.bootstrap, "group.id": f"g-{time.time()}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic_name, part, 0) for part in range(4)])
    got, deadline = {}, time.time() + 60
    while len(got) < len(sent) and time.time() < deadline:
        for m in c.consume(500, timeout=1):
            if not m.error():
                got[(m.partition(), int(m.key()))] = hashlib.sha1(m.value()).hexdigest()
    c.close()
    assert got == sent
    assert sg.metric("syncgate_rejected_frames_total") == 0
