"""Consumers through syncgate see only mirrored records (KIP unified
high watermark; invariant 1b; scenario S21).

Source, destination, the offset-preserving test mirror, syncgate in front of
the source. The mirror is paused and records are appended to the source
(acks=1, not gated): a Java kafka-clients consumer and a librdkafka
(confluent-kafka) consumer reading through syncgate get nothing at or past
the destination high watermark — read_uncommitted and read_committed — and
do not busy-loop (the Fetch count is bounded by MaxWaitMs); ListOffsets
(latest) and OffsetForLeaderEpoch through syncgate answer the mirrored HW.
Resumed: they receive everything, in order, exactly once."""

from __future__ import annotations

import os
import struct
import subprocess
import threading
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafkabed import wait_until
from rawkafka import RawClient, Reader, TAGS0, i32, string, uvarint
from sgfixture import KAFKA_LIBS, compile_java, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import effective, gated_topic

pytestmark = pytest.mark.kafka

# Assigns partition 0 from the beginning (or the offset given as a sixth
# argument); prints "END <endOffsets>" (a ListOffsets latest through
# syncgate), then "REC <epoch ms> <offset> <value's first 16 chars>" for every
# record until `expect` records or `total_ms`.
CLAMP_JAVA = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class ClampConsumer {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], topic = a[1], isolation = a[2];
        long totalMs = Long.parseLong(a[3]);
        int expect = Integer.parseInt(a[4]);
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("isolation.level", isolation);
        c.put("client.id", "clamp-java-" + isolation);
        c.put("fetch.max.wait.ms", "500");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> k = new KafkaConsumer<>(c)) {
            k.assign(List.of(tp));
            if (a.length > 5) k.seek(tp, Long.parseLong(a[5]));
            else k.seekToBeginning(List.of(tp));
            System.out.println("END " + k.endOffsets(List.of(tp)).get(tp));
            System.out.flush();
            long end = System.currentTimeMillis() + totalMs;
            int n = 0;
            while (n < expect && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : k.poll(Duration.ofMillis(200))) {
                    String v = r.value();
                    System.out.println("REC " + System.currentTimeMillis() + " " + r.offset() + " "
                                       + v.substring(0, Math.min(v.length(), 16)));
                    n++;
                }
                System.out.flush();
            }
        }
        System.out.println("DONE");
    }
}
"""


@pytest.fixture(scope="module")
def clamp_classes(tmp_path_factory):
    return compile_java(str(tmp_path_factory.mktemp("clampconsumer")), "ClampConsumer.java", CLAMP_JAVA)


def java_consumer(clamp_classes, bootstrap, topic, expect, start=None, total_ms=60000,
                  isolation="read_uncommitted"):
    """ClampConsumer (above) on partition 0 from the beginning or `start`."""
    args = [bootstrap, topic, isolation, str(total_ms), str(expect)]
    if start is not None:
        args.append(str(start))
    return subprocess.Popen(
        ["java", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
         "-cp", clamp_classes + os.pathsep + os.path.join(KAFKA_LIBS, "*"), "ClampConsumer", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)




def progress(sg, mirror: str, topic: str, partition: int = 0) -> int:
    """The mirror's destination progress as syncgate knows it (-1 unknown)."""
    import json
    _, body = sg.http(f"/v1/mirrors?mirror={mirror}&topic={topic}")
    for m in json.loads(body)["mirrors"]:
        for t in m["topics"]:
            for p in t.get("partitions", []):
                if t["topic"] == topic and p["partition"] == partition:
                    return p["progress"] if p["progress"] is not None else -1
    return -1


def confluent_consume(bootstrap, topic, isolation, seconds, expect, out, client_id, start=0,
                      errors=None):
    """Consume partition 0 from offset `start` for up to `seconds` or until
    `expect` records; appends (time, offset, value) to `out`, and consumer
    errors to `errors` when given."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"clamp-{client_id}",
                  "client.id": client_id, "enable.auto.commit": False,
                  "isolation.level": isolation, "fetch.wait.max.ms": 500,
                  "enable.partition.eof": False})
    try:
        c.assign([TopicPartition(topic, 0, start)])
        end = time.monotonic() + seconds
        while len(out) < expect and time.monotonic() < end:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if errors is not None:
                    errors.append(str(m.error()))
                continue
            out.append((time.time(), m.offset(), m.value()))
    finally:
        c.close()


def offset_for_leader_epoch(port: int, topic: str, partition: int, epoch: int) -> tuple[int, int]:
    """OffsetForLeaderEpoch v4 as a consumer (ReplicaId -1): (ErrorCode, EndOffset)."""
    c = RawClient("127.0.0.1", port)
    try:
        parts = uvarint(2) + i32(partition) + i32(-1) + i32(epoch) + TAGS0
        body = i32(-1) + uvarint(2) + string(topic, True) + parts + TAGS0 + TAGS0
        # header v2 (flexible) for OffsetForLeaderEpoch v4
        frame = struct.pack(">hhi", 23, 4, 77) + string("clamp-ofle", False) + TAGS0 + body
        c.sock.sendall(i32(len(frame)) + frame)
        size = struct.unpack(">i", c._read_exact(4))[0]
        resp = c._read_exact(size)
        r = Reader(resp[4:], True)
        r.tags()             # response header v1
        r.i32()              # ThrottleTimeMs
        assert r.array_len() == 1
        assert r.string() == topic
        assert r.array_len() == 1
        err, p, _epoch, end = r.i16(), r.i32(), r.i32(), r.i64()
        assert p == partition
        return err, end
    finally:
        c.close()


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_consumers_see_only_mirrored_records_s21(clamp_classes, make_syncgate, make_testmirror,
                                                 source, dest, topic_name, isolation):
    sg, mirror = gated_topic(source, dest, make_syncgate, make_testmirror, topic_name)
    source.produce(topic_name, 5, partition=0, values=[f"m{i}" for i in range(5)])
    wait_until(lambda: dest.high_watermark(topic_name, 0) == 5, timeout=30, what="mirrored 5")
    # syncgate samples the destination every second (at once while a response waits)
    wait_until(lambda: progress(sg, "dr", topic_name) == 5, timeout=30, what="progress 5 known")
    mirror.pause()
    resumed_at = None
    try:
        # appended on the source, not on the destination (acks=1 through syncgate: not gated)
        source.produce(topic_name, 5, partition=0, values=[f"u{i}" for i in range(5)],
                       acks=1, enable_idempotence=False)
        assert source.high_watermark(topic_name, 0) == 10
        assert dest.high_watermark(topic_name, 0) == 5

        fetches0 = sg.metric("syncgate_consumer_fetch_requests_total")
        t0 = time.monotonic()
        java = java_consumer(clamp_classes, sg.bootstrap, topic_name, 10, isolation=isolation)
        # its first line, END <endOffsets>, read while the mirror is paused (a JVM
        # that starts after the resume would rightly see 10)
        java_first: list = []
        java_reader = threading.Thread(target=lambda: java_first.append(java.stdout.readline()))
        java_reader.start()
        got_c: list = []
        ct = threading.Thread(target=confluent_consume,
                              args=(sg.bootstrap, topic_name, isolation, 60, 10, got_c,
                                    f"clamp-rdkafka-{isolation}"))
        ct.start()
        # ListOffsets latest through syncgate: the mirrored HW, not the broker's
        c = Consumer({"bootstrap.servers": sg.bootstrap, "group.id": "clamp-wm",
                      "isolation.level": isolation})
        lo, hi = c.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=10, cached=False)
        c.close()
        assert (lo, hi) == (0, 5)
        err, end = offset_for_leader_epoch(sg.port, topic_name, 0, 0)
        assert (err, end) == (0, 5)
        # the broker's own answers are higher
        assert source.high_watermark(topic_name, 0) == 10

        time.sleep(8)  # consumers poll while the mirror is paused
        paused_s = time.monotonic() - t0
        fetches = sg.metric("syncgate_consumer_fetch_requests_total") - fetches0
        assert [o for _, o, _ in got_c] == [0, 1, 2, 3, 4], got_c
        held = sg.metric("syncgate_consumer_fetches_held_total")
        assert held > 0
        # not a busy loop: about one fetch per MaxWaitMs (500 ms) per consumer
        # (the Java one starts a few seconds late), never hundreds
        bound = 2 * (paused_s / 0.5) + 20
        print(f"\n{isolation}: {fetches:.0f} consumer fetches in {paused_s:.1f} s paused "
              f"({fetches / paused_s:.1f}/s for 2 consumers), {held:.0f} held")
        assert fetches <= bound, (fetches, paused_s)
        assert sg.metric("syncgate_consumer_records_withheld_total") > 0
        java_reader.join(90)
        assert java_first, "the Java consumer printed nothing while the mirror was paused"
        mirror.resume()
        resumed_at = time.time()
        ct.join(60)
        out, err_s = java.communicate(timeout=90)
    finally:
        if resumed_at is None:
            mirror.resume()
    assert java.returncode == 0, err_s[-3000:]
    lines = java_first[0].splitlines() + out.splitlines()
    assert lines[0] == "END 5", lines[:3]
    recs = [ln.split(" ", 3) for ln in lines if ln.startswith("REC ")]
    assert [int(r[2]) for r in recs] == list(range(10)), recs
    assert [r[3] for r in recs] == [f"m{i}" for i in range(5)] + [f"u{i}" for i in range(5)]
    for r in recs[5:]:
        assert int(r[1]) / 1000 >= resumed_at - 0.05, ("an unmirrored record reached the Java "
                                                       "consumer before the resume", r)
    # librdkafka consumer: everything, in order, exactly once; the rest after the resume
    assert [o for _, o, _ in got_c] == list(range(10)), got_c
    assert [v for _, _, v in got_c] == [f"m{i}".encode() for i in range(5)] + \
        [f"u{i}".encode() for i in range(5)]
    assert all(t >= resumed_at - 0.05 for t, o, _ in got_c if o >= 5)
    assert sg.metrics().get("syncgate_consumer_fetches_held") == 0
    # after the resume the answers are the broker's again
    err, end = offset_for_leader_epoch(sg.port, topic_name, 0, 0)
    assert (err, end) == (0, 10)


def test_exempt_client_id_and_pass_are_not_clamped(make_syncgate, make_testmirror, source, dest,
                                                   topic_name):
    """A client id in consumers.exempt_client_ids (a mirror tool) reads past
    the mirrored HW; a look-alike MirrorMaker client that is not exempt is
    clamped and logged once."""
    sg, mirror = gated_topic(source, dest, make_syncgate, make_testmirror, topic_name,
                             extra={"consumers": {"exempt_client_ids": ["mirror-reader-.*"]}})
    mirror.pause()
    try:
        source.produce(topic_name, 3, partition=0, acks=1, enable_idempotence=False)
        got: list = []
        confluent_consume(sg.bootstrap, topic_name, "read_uncommitted", 20, 3, got,
                          "mirror-reader-1")
        assert [o for _, o, _ in got] == [0, 1, 2]
        assert sg.metric("syncgate_consumer_exempt_requests_total") > 0
        got2: list = []
        confluent_consume(sg.bootstrap, topic_name, "read_uncommitted", 3, 3, got2,
                          "connector-consumer-MirrorSourceConnector-0")
        assert got2 == []
        assert sg.log().count("consumer_clamp_mirror_reader") == 1
    finally:
        mirror.resume()


def test_two_mirrors_slower_one_clamps_released_never(make_syncgate, make_testmirror,
                                                      make_cluster, source, dest, topic_name):
    """Two SYNC mirrors: consumers follow the slower one. A mirror that is
    only ASYNC for the topic never clamps; once the slow one is released
    (--release-sync), it no longer clamps either and a held Fetch completes."""
    from sghelpers import call, lifecycle_extra, wait_state, write_token
    dest2 = make_cluster("clamp-dest2", brokers=1)
    source.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    dest2.create_topic(topic_name, partitions=1)
    make_testmirror([topic_name])
    slow = make_testmirror([topic_name], dest=dest2)
    token = write_token(sg_bed(source))
    mirrors = [mirror_conf("dr", dest, [topic_name]), mirror_conf("dr2", dest2, [topic_name]),
               # desired ASYNC (no sync_topics), progress never known: never clamps
               mirror_conf("dr3", dest, [], topic_name="absent.{topic}")]
    sg = make_syncgate(source, mirrors=mirrors,
                       extra=lifecycle_extra(f"__sg_state_{topic_name}", token))
    sg.token_file = token
    for m in ("dr", "dr2"):
        wait_until(lambda: effective(sg, m, topic_name) == "SYNC", timeout=60,
                   what=f"{m}/{topic_name} effective SYNC")
    source.produce(topic_name, 2, partition=0)
    wait_until(lambda: dest2.high_watermark(topic_name, 0) == 2, timeout=30, what="mirrored")
    slow.pause()
    try:
        source.produce(topic_name, 3, partition=0, acks=1, enable_idempotence=False)
        wait_until(lambda: dest.high_watermark(topic_name, 0) == 5, timeout=30, what="fast mirror")
        got: list = []
        confluent_consume(sg.bootstrap, topic_name, "read_uncommitted", 4, 5, got, "two-mirrors")
        assert [o for _, o, _ in got] == [0, 1]
        # release the slow mirror while a consumer waits: it gets the rest at once
        got2: list = []
        t = threading.Thread(target=confluent_consume,
                             args=(sg.bootstrap, topic_name, "read_uncommitted", 30, 5, got2,
                                   "two-mirrors-2"))
        t.start()
        time.sleep(3)
        assert [o for _, o, _ in got2] == [0, 1]
        status, doc = call(sg, "/v1/release", {"mirror": "dr2", "topics": topic_name})
        assert status == 200, doc
        wait_state(sg, "dr2", topic_name, released=True)
        t.join(30)
        assert [o for _, o, _ in got2] == [0, 1, 2, 3, 4]
    finally:
        slow.resume()


def sg_bed(cluster):
    return cluster.bed


def ssl_consume(bootstrap, topic, ssl: dict, seconds, expect, client_id) -> list:
    """confluent_consume over TLS: [(time, offset, value)] of partition 0 from the beginning."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"clamp-{client_id}",
                  "client.id": client_id, "enable.auto.commit": False, "fetch.wait.max.ms": 500,
                  "enable.partition.eof": False, **ssl})
    out: list = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        end = time.monotonic() + seconds
        while len(out) < expect and time.monotonic() < end:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            out.append((time.time(), m.offset(), m.value()))
    finally:
        c.close()
    return out


def test_exempt_tls_principal_is_not_clamped(make_syncgate, make_testmirror, source, dest, topic_name, bed):
    """consumers.exempt_principals: a client whose verified certificate
    (listen.tls.client_ca) matches by common name reads past the mirrored HW;
    another client of the same CA, with the same client id, is clamped."""
    from test_proxy_security import _openssl, make_pki
    d = os.path.join(bed.run_dir, f"pki-{topic_name}")
    os.makedirs(d, exist_ok=True)
    pki = make_pki(d)  # its client certificate: CN=test-client
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=plain-reader/O=syncgate test",
             "-keyout", "other.key", "-out", "other.csr", cwd=d)
    _openssl("x509", "-req", "-in", "other.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "2", "-out", "other.pem", cwd=d)
    sg, mirror = gated_topic(source, dest, make_syncgate, make_testmirror, topic_name,
                             listen_tls={"cert": pki["cert"], "key": pki["key"], "client_ca": pki["ca"]},
                             extra={"consumers": {"exempt_principals": ["test-.*"]}})
    ssl = {"security.protocol": "SSL", "ssl.ca.location": pki["ca"]}
    exempt = {**ssl, "ssl.certificate.location": pki["client_cert"], "ssl.key.location": pki["client_key"]}
    other = {**ssl, "ssl.certificate.location": os.path.join(d, "other.pem"),
             "ssl.key.location": os.path.join(d, "other.key")}
    mirror.pause()
    try:
        source.produce(topic_name, 3, partition=0, acks=1, enable_idempotence=False)
        got = ssl_consume(sg.bootstrap, topic_name, exempt, 20, 3, "same-id")
        assert [o for _, o, _ in got] == [0, 1, 2]
        assert sg.metric("syncgate_consumer_exempt_requests_total") > 0
        assert 'subject="CN=test-client"' in sg.log()
        assert ssl_consume(sg.bootstrap, topic_name, other, 3, 3, "same-id") == []
        assert sg.metric("syncgate_consumer_records_withheld_total") > 0
    finally:
        mirror.resume()
    got = ssl_consume(sg.bootstrap, topic_name, other, 30, 3, "same-id")
    assert [o for _, o, _ in got] == [0, 1, 2]


def test_large_fetches_are_clamped_as_they_stream(clamp_classes, make_syncgate, make_testmirror,
                                                  source, dest, topic_name):
    """Fetch responses above 64 KiB (v12+) are clamped as they stream (issue
    14): batches past the mirrored HW in the middle of a partition's records
    become one batch cut short, a partition whose first batch is past it gets
    an empty record set (the cut bytes go to a filler tag). Java and
    librdkafka consumers, from the beginning (cut mid-records) and from the
    mirrored HW (everything cut), get exactly the mirrored records while the
    mirror is paused, no error, and the rest once it resumes."""
    sg, mirror = gated_topic(source, dest, make_syncgate, make_testmirror, topic_name)
    pad = "x" * 1000
    n = 300
    # several records per batch, ~1 KiB each: every first response is ~300-600 KB
    source.produce(topic_name, n, partition=0, values=[f"m{i:04d}-{pad}" for i in range(n)],
                   linger_ms=20, batch_size=32768)
    wait_until(lambda: dest.high_watermark(topic_name, 0) == n, timeout=30, what=f"mirrored {n}")
    wait_until(lambda: progress(sg, "dr", topic_name) == n, timeout=30, what=f"progress {n} known")
    mirror.pause()
    resumed_at = None
    try:
        source.produce(topic_name, n, partition=0, values=[f"u{i:04d}-{pad}" for i in range(n)],
                       acks=1, enable_idempotence=False, linger_ms=20, batch_size=32768)
        assert source.high_watermark(topic_name, 0) == 2 * n
        assert dest.high_watermark(topic_name, 0) == n
        streamed0 = sg.metric("syncgate_consumer_fetches_streamed_total")
        withheld0 = sg.metric("syncgate_consumer_records_withheld_total")
        java_all = java_consumer(clamp_classes, sg.bootstrap, topic_name, 2 * n)
        java_tail = java_consumer(clamp_classes, sg.bootstrap, topic_name, n, start=n)
        runs = {}
        threads = []
        for name, start, expect in (("all", 0, 2 * n), ("tail", n, n)):
            runs[name] = ([], [])
            got, errs = runs[name]
            t = threading.Thread(target=confluent_consume,
                                 args=(sg.bootstrap, topic_name, "read_uncommitted", 60, expect, got,
                                       f"clamp-stream-{name}", start, errs))
            t.start()
            threads.append(t)
        time.sleep(10)  # the consumers poll while the mirror is paused
        got_all, err_all = runs["all"]
        got_tail, err_tail = runs["tail"]
        assert [o for _, o, _ in got_all] == list(range(n)), got_all[-3:]
        assert got_tail == [], got_tail[:3]
        assert err_all == [] and err_tail == [], (err_all, err_tail)
        streamed = sg.metric("syncgate_consumer_fetches_streamed_total") - streamed0
        print(f"\nstreamed clamped responses: {streamed:.0f}, records withheld: "
              f"{sg.metric('syncgate_consumer_records_withheld_total') - withheld0:.0f}")
        assert streamed >= 2, "the first large response of each consumer streams"
        assert sg.metric("syncgate_consumer_records_withheld_total") > withheld0
        mirror.resume()
        resumed_at = time.time()
        for t in threads:
            t.join(60)
        out_all, err_j_all = java_all.communicate(timeout=90)
        out_tail, err_j_tail = java_tail.communicate(timeout=90)
    finally:
        if resumed_at is None:
            mirror.resume()
        for p in (java_all, java_tail):
            if p.poll() is None:
                p.kill()
    for out, err_s, start in ((out_all, err_j_all, 0), (out_tail, err_j_tail, n)):
        assert java_all.returncode == 0 and java_tail.returncode == 0, err_s[-3000:]
        lines = out.splitlines()
        assert lines[0] == f"END {n}", lines[:3]
        recs = [ln.split(" ", 3) for ln in lines if ln.startswith("REC ")]
        assert [int(r[2]) for r in recs] == list(range(start, 2 * n)), recs[:3]
        for r in recs:
            off = int(r[2])
            assert r[3] == (f"m{off:04d}-" if off < n else f"u{off - n:04d}-") + pad[:10]
            if off >= n:
                assert int(r[1]) / 1000 >= resumed_at - 0.05, ("an unmirrored record reached the "
                                                               "Java consumer before the resume", r)
    for got, errs, start in ((got_all, err_all, 0), (got_tail, err_tail, n)):
        assert errs == [], errs
        assert [o for _, o, _ in got] == list(range(start, 2 * n))
        assert all(t >= resumed_at - 0.05 for t, o, _ in got if o >= n)
        for _, o, v in got:
            assert v == ((f"m{o:04d}-" if o < n else f"u{o - n:04d}-") + pad).encode()
