"""Failover in one command against real Apache Kafka: syncgate-ctl
failover / verify / unfence, driven like an operator would.

* Planned failover under load (a Java idempotent producer through syncgate,
  a consumer group committing every 20 records), for the offset-preserving
  test mirror and for MirrorMaker 2: every acknowledged record is on the
  destination, sends after the fence are refused and nothing new lands on
  the source, the group resumes on the destination at its committed position
  with no record skipped (duplicates bounded by the commit interval).
* Drain timeout with the mirror paused: exit 1 naming the partition, the
  fence refuses Produce (NOT_ENOUGH_REPLICAS), nothing is released;
  unfence restores service.
* A diverged destination (a record written to it by something else) is
  reported by verify.
* Two sidecars: a fence applied through one is obeyed by the other within 1 s.
* verify --destination-only: the destination against the offsets syncgate
  confirmed (its own, and ones given in a metrics file)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkabed import wait_until
from rawkafka import RawClient
from sgfixture import KAFKA_LIBS, compile_java, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl, ctl_json  # noqa: F401 - ctl_json shared
from sghelpers import call, start, topic_state, wait_state, write_token

pytestmark = pytest.mark.kafka

NOT_ENOUGH_REPLICAS = 19

# Sends "<prefix><i>" (key = value) through syncgate until `durationMs`
# passed, one line per outcome: "ACK <partition> <offset> <sentAtMs> <value>"
# or "ERR <value> <sentAtMs> <exception class> <message>"; then "DONE <n>".
# Arguments after the fifth are further producer settings, key=value.
FAILOVER_LOAD_JAVA = r"""
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.*;

public class FailoverLoad {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], topic = a[1], prefix = a[4];
        long durationMs = Long.parseLong(a[2]), sleepMs = Long.parseLong(a[3]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("max.in.flight.requests.per.connection", "5");
        p.put("linger.ms", "2");
        p.put("request.timeout.ms", "2000");
        p.put("delivery.timeout.ms", "5000");
        p.put("retry.backoff.ms", "100");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        for (int k = 5; k < a.length; k++)  // further producer settings, key=value
            p.put(a[k].substring(0, a[k].indexOf('=')), a[k].substring(a[k].indexOf('=') + 1));
        StringBuffer out = new StringBuffer();
        int n = 0;
        long end = System.currentTimeMillis() + durationMs;
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            for (int i = 0; System.currentTimeMillis() < end; i++, n++) {
                final String v = prefix + i;
                final long sent = System.currentTimeMillis();
                prod.send(new ProducerRecord<>(topic, v, v), (md, e) -> {
                    if (e != null)
                        out.append("ERR " + v + " " + sent + " " + e.getClass().getName() + " " + e.getMessage() + "\n");
                    else
                        out.append("ACK " + md.partition() + " " + md.offset() + " " + sent + " " + v + "\n");
                });
                Thread.sleep(sleepMs);
            }
            prod.flush();
        }
        System.out.print(out);
        System.out.println("DONE " + n);
    }
}
"""


@pytest.fixture(scope="module")
def load_classes(tmp_path_factory):
    return compile_java(str(tmp_path_factory.mktemp("failoverload")), "FailoverLoad.java", FAILOVER_LOAD_JAVA)


def sidecar(bed, make_syncgate, source, dest, topic, offsets="preserved", state_topic=None, **extra):
    st = state_topic or f"__sg_state_{uuid.uuid4().hex[:8]}"
    m = mirror_conf("dr", dest, [topic], offsets=offsets, **extra)
    sg = start(make_syncgate, source, [m], st, write_token(bed))
    wait_state(sg, "dr", topic, effective="SYNC", timeout=120)
    return sg


def produce_raw(sg, topic, part, value: bytes, timeout_ms=5000):
    c = RawClient("127.0.0.1", sg.port)
    try:
        (p,) = c.produce(topic, part, [value], version=9, timeout_ms=timeout_ms).topics[topic]
        return p
    finally:
        c.close()


class GroupConsumer:
    """A consumer group member on a thread: commits every `every` records
    (synchronously); stop() closes it WITHOUT a final commit, like a crash
    after processing, so the uncommitted tail is re-read after the move."""

    def __init__(self, bootstrap, group, topic, every=20):
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                           "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50})
        self.c.subscribe([topic])
        self.every, self.seen, self.committed = every, [], {}
        self.halt = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        n = 0
        while not self.halt.is_set():
            m = self.c.poll(0.1)
            if m is None or m.error():
                continue
            self.seen.append((m.partition(), m.offset(), m.value()))
            n += 1
            if n % self.every == 0:
                for tp in self.c.commit(asynchronous=False) or []:
                    if tp.offset >= 0:  # -1001: nothing consumed there yet
                        self.committed[tp.partition] = tp.offset

    def stop(self):
        self.halt.set()
        self.t.join(10)
        self.c.close()


def resume_on(bootstrap, group, topic, partitions, ends, starts=None, timeout=60):
    """The group on another cluster: offsets `auto.offset.reset=latest`, so
    a group whose offsets were not moved would skip everything. Returns
    {partition: [(offset, value)]} up to `ends[partition]`; a partition whose
    start (`starts[partition]`, the moved offset) is already its end has
    nothing to read and is not waited for."""
    starts = starts or {}
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "latest", "fetch.wait.max.ms": 50})
    c.subscribe([topic])
    got = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and any((got[p][-1][0] if got[p] else -1) < ends[p] - 1
                                                  for p in range(partitions) if ends[p] > starts.get(p, 0)):
            m = c.poll(0.2)
            if m is not None and not m.error():
                got[m.partition()].append((m.offset(), m.value()))
    finally:
        c.close()
    return got


def run_planned_failover(bed, load_classes, make_syncgate, source, dest, topic, offsets, start_mirror):
    partitions = 2
    source.create_topic(topic, partitions=partitions)
    if offsets == "preserved":
        dest.create_topic(topic, partitions=partitions)
    start_mirror()
    extra = {"mm2_offset_syncs_topic": "mm2-offset-syncs.dest.internal"} if offsets == "mm2" else {}
    sg = sidecar(bed, make_syncgate, source, dest, topic, offsets=offsets, **extra)
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = GroupConsumer(sg.bootstrap, group, topic)
    load = subprocess.Popen(
        ["java", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
         "-cp", load_classes + os.pathsep + os.path.join(KAFKA_LIBS, "*"), "FailoverLoad",
         sg.bootstrap, topic, "14000", "5", "f"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: len(consumer.seen) >= 100, timeout=60, what="the consumer group is reading")
        consumer.stop()  # no final commit: the uncommitted tail is re-read after the move
        drain_ms = "20000"
        fence_ms = time.time() * 1000 + 1000  # the fence is applied well within 1 s of the call
        rc, doc, err = ctl_json(sg, "failover", "--mirror", "dr", "--topics", topic, "--timeout-ms", drain_ms,
                                timeout=200)
        done_ms = time.time() * 1000
        print(f"failover ({offsets}) answered {(done_ms - fence_ms + 1000) / 1000:.1f} s after the call")
        hw_at_done = [source.high_watermark(topic, p) for p in range(partitions)]
        out, errout = load.communicate(timeout=120)
    finally:
        if load.poll() is None:
            load.kill()
    assert rc == 0, (doc["verdict"], doc["partitions"], err)
    assert doc["verified"] and doc["released"] and doc["fenced"], doc
    assert doc["verdict"] == "zero RPO: every acknowledged record is on dr", doc["verdict"]
    assert {(p["partition"], p["status"]) for p in doc["partitions"]} == {(0, "OK"), (1, "OK")}, doc
    if offsets == "preserved":
        assert all(p["last_record"]["source_crc"] == p["last_record"]["destination_crc"]
                   for p in doc["partitions"] if p["target"] > 0), doc["partitions"]
    assert [s["step"] for s in doc["steps"]] == ["fence", "release"], doc["steps"]

    lines = out.splitlines()
    assert lines[-1].startswith("DONE "), errout[-2000:]
    acks = [ln.split(" ", 4) for ln in lines if ln.startswith("ACK ")]
    errs = [ln.split(" ", 4) for ln in lines if ln.startswith("ERR ")]
    assert acks and errs, (len(acks), len(errs))
    # nothing sent after the fence was acknowledged, sends were refused, and
    # nothing new reached the source after the failover: the fence never forwards
    assert not [a for a in acks if int(a[3]) > fence_ms], "acked after the fence"
    assert [e for e in errs if int(e[2]) > fence_ms], "no send refused after the fence"
    assert done_ms > fence_ms
    time.sleep(1)
    assert [source.high_watermark(topic, p) for p in range(partitions)] == hw_at_done
    assert sg.metric("syncgate_produce_fenced_requests_total") > 0
    # every acknowledged record is on the destination (same value; same offset when preserved)
    dst = {p: {r.offset: r.value for r in dest.consume(topic, p)} for p in range(partitions)}
    for _, part, off, _, v in acks:
        if offsets == "preserved":
            assert dst[int(part)].get(int(off)) == v.encode(), (part, off, v)
        else:
            assert v.encode() in dst[int(part)].values(), (part, off, v)

    # consumer offsets: moved for the group, and the group resumes there
    moved = {g["partition"]: g for g in doc["groups"] if g["group"] == group}
    assert set(moved) == set(consumer.committed), (doc["groups"], consumer.committed)
    for p, g in moved.items():
        assert g["action"] == "moved" and g["source_offset"] == consumer.committed[p], g
        if offsets == "preserved":
            assert g["destination_offset"] == g["source_offset"], g
    ends = [dest.high_watermark(topic, p) for p in range(partitions)]
    after = resume_on(dest.bootstrap, group, topic, partitions, ends,
                      {p: g["destination_offset"] for p, g in moved.items()})
    before = {p: [(o, v) for (pp, o, v) in consumer.seen if pp == p] for p in range(partitions)}
    for p in range(partitions):
        if p not in moved:
            continue
        if moved[p]["destination_offset"] >= ends[p]:  # the group had read all of it: nothing to re-read
            assert not after[p], (p, after[p][:3], moved[p], ends[p])
        else:
            assert after[p] and after[p][0][0] == moved[p]["destination_offset"], (p, after[p][:3], moved[p])
        values_before = {v for _, v in before[p]}
        values_after = {v for _, v in after[p]}
        everything = {v for v in dst[p].values()}
        assert values_before | values_after == everything, f"partition {p}: a record was skipped"
        dups = len(values_before & values_after)
        print(f"partition {p}: {dups} records read again after the failover ({offsets})")
        if offsets == "preserved":  # same offsets: at most what was read since the last commit
            assert dups <= 20, "duplicates beyond the commit interval"
        # mm2: the committed offset is translated through the offset-syncs and
        # the pairs the drain's record match proved (the nearest at or below
        # it): exact for a commit in the proved range
    st = topic_state(sg, "dr", topic)
    assert st["released"] and st["fenced"], st
    return sg


def test_planned_failover_preserved_under_load(bed, load_classes, make_syncgate, make_testmirror, source, dest,
                                               topic_name):
    run_planned_failover(bed, load_classes, make_syncgate, source, dest, topic_name, "preserved",
                         lambda: make_testmirror([topic_name]))


def test_planned_failover_mm2_under_load(bed, load_classes, make_syncgate, make_mm2, source, dest, topic_name):
    """MirrorMaker 2 at its default offset.lag.max (100): the drain is proved
    by matching records past the last offset-sync (mirror/failover_match.c),
    not by waiting for MM2 to write one."""
    run_planned_failover(bed, load_classes, make_syncgate, source, dest, topic_name, "mm2",
                         lambda: make_mm2(topic_name, props={"offset.lag.max": "100"}))


def test_drain_timeout_names_partitions_and_unfence_restores(bed, make_syncgate, make_testmirror, source, dest,
                                                            topic_name):
    source.create_topic(topic_name, partitions=2)
    dest.create_topic(topic_name, partitions=2)
    mirror = make_testmirror([topic_name])
    sg = sidecar(bed, make_syncgate, source, dest, topic_name)
    assert produce_raw(sg, topic_name, 0, b"before").error_code == 0
    mirror.pause()
    try:
        source.produce(topic_name, 3, partition=1)  # straight to the broker: never mirrored while paused
        rc, out, err = ctl(sg, "failover", "--mirror", "dr", "--topics", topic_name, "--timeout-ms", "6000")
        assert rc == 1, (out, err)
        # a drain longer than 5 s is not silence: a progress line on stderr, none on stdout
        assert "failover of mirror dr: the sidecar is fencing, draining and verifying (5 s so far, drain at " \
               "most 6 s)" in err, err
        assert "so far" not in out, out
        assert "NOT verified" in out and f"{topic_name}[1] MISSING" in out, out
        assert f"{topic_name}[0]" not in out.split("NOT verified")[1], out
        row = [ln.split() for ln in out.splitlines() if ln.startswith(topic_name + " ")]
        assert [r[:3] for r in row] == [[topic_name, "0", "OK"], [topic_name, "1", "MISSING"]], out
        assert row[1][6] == "3", out  # MISSING column: 3 records
        st = topic_state(sg, "dr", topic_name)
        assert st["fenced"] and not st["released"] and st["effective"] == "SYNC", st
        p = produce_raw(sg, topic_name, 0, b"fenced")
        assert p.error_code == NOT_ENOUGH_REPLICAS and "fenced" in (p.error_message or ""), p
        hw = source.high_watermark(topic_name, 0)
        rc, out, err = ctl(sg, "unfence", "--mirror", "dr")
        assert rc == 0 and out.split()[:2] == [topic_name, "UNFENCED"], (out, err)
        assert source.high_watermark(topic_name, 0) == hw, "the refused record never reached the source"
    finally:
        mirror.resume()
    assert produce_raw(sg, topic_name, 0, b"after", timeout_ms=20000).error_code == 0
    assert not topic_state(sg, "dr", topic_name)["fenced"]


def test_verify_reports_a_diverged_destination(bed, make_syncgate, make_testmirror, source, dest, topic_name):
    source.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    make_testmirror([topic_name])
    sg = sidecar(bed, make_syncgate, source, dest, topic_name)
    for i in range(3):
        assert produce_raw(sg, topic_name, 0, f"r{i}".encode()).error_code == 0
    rc, doc, err = ctl_json(sg, "verify", "--mirror", "dr")
    assert rc == 0 and doc["verified"] and doc["mode"] == "verify", doc
    assert doc["partitions"][0]["last_record"]["source_offset"] == 2
    # the table says the source figure is a sample from the drain's start
    rc, out, err = ctl(sg, "verify", "--mirror", "dr")
    header = next(ln for ln in out.splitlines() if ln.startswith("TOPIC "))
    assert rc == 0 and header.split()[3:6] == ["SRC", "HW@START", "DEST"], out
    assert "the source high watermark when the drain started" in out, out
    dest.produce(topic_name, 1, partition=0, values=["intruder"])  # something else writes to the destination
    # The source takes r3 (straight, not through the gate: with the destination
    # ahead of its source the partition is diverged and an acks=all produce
    # through syncgate is held, correctly); the mirror copies it one offset on.
    source.produce(topic_name, 1, partition=0, values=["r3"])
    wait_until(lambda: dest.high_watermark(topic_name, 0) == 5, timeout=30, what="the mirror copied r3")
    rc, doc, err = ctl_json(sg, "verify", "--mirror", "dr")
    assert rc == 1 and not doc["verified"], doc
    (p,) = doc["partitions"]
    assert p["status"] == "DIVERGED", p
    assert f"{topic_name}[0] DIVERGED" in doc["verdict"], doc["verdict"]
    assert not topic_state(sg, "dr", topic_name).get("fenced"), "verify is read-only"


def test_fence_through_one_sidecar_obeyed_by_the_other_within_1s(bed, make_syncgate, make_testmirror, source,
                                                                 dest, topic_name):
    source.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    make_testmirror([topic_name])
    st = f"__sg_state_{uuid.uuid4().hex[:8]}"
    a = sidecar(bed, make_syncgate, source, dest, topic_name, state_topic=st)
    b = sidecar(bed, make_syncgate, source, dest, topic_name, state_topic=st)
    assert produce_raw(b, topic_name, 0, b"open").error_code == 0
    status, body = call(a, "/v1/fence", {"mirror": "dr", "topics": topic_name, "fence": True})
    assert status == 200 and body["topics"][0]["result"] == "FENCED", body
    t0 = time.monotonic()
    c = RawClient("127.0.0.1", b.port)
    try:
        while True:
            (p,) = c.produce(topic_name, 0, [b"x"], version=9, timeout_ms=5000).topics[topic_name]
            if p.error_code == NOT_ENOUGH_REPLICAS:
                break
            assert time.monotonic() - t0 < 1.0, "the other sidecar still accepts Produce after 1 s"
            time.sleep(0.02)
    finally:
        c.close()
    assert time.monotonic() - t0 < 1.0
    status, body = call(b, "/v1/fence", {"mirror": "dr", "topics": topic_name, "fence": False})
    assert status == 200 and body["topics"][0]["result"] == "UNFENCED", body
    wait_until(lambda: produce_raw(a, topic_name, 0, b"open again").error_code == 0, timeout=5,
               what="the first sidecar accepts again")


def test_verify_destination_only(bed, make_syncgate, make_testmirror, source, dest, topic_name, tmp_path):
    source.create_topic(topic_name, partitions=2)
    dest.create_topic(topic_name, partitions=2)
    make_testmirror([topic_name])
    sg = sidecar(bed, make_syncgate, source, dest, topic_name)
    for i in range(4):
        assert produce_raw(sg, topic_name, i % 2, f"d{i}".encode()).error_code == 0
    wait_until(lambda: sg.metric("syncgate_mirror_confirmed_offset") >= 4, timeout=10,
               what="confirmed offsets exported")
    rc, doc, err = ctl_json(sg, "verify", "--mirror", "dr", "--destination-only")
    assert rc == 0 and doc["mode"] == "verify-destination-only", doc
    assert {(p["partition"], p["confirmed"], p["status"]) for p in doc["partitions"]} == {(0, 2, "OK"), (1, 2, "OK")}
    # figures from another sidecar's last scrape: partition 1 confirmed up to 9,
    # which the destination does not hold
    scrape = tmp_path / "other-sidecar.prom"
    scrape.write_text('# TYPE syncgate_mirror_confirmed_offset gauge\n'
                      f'syncgate_mirror_confirmed_offset{{mirror="dr",topic="{topic_name}",partition="1"}} 9\n'
                      f'syncgate_mirror_confirmed_offset{{mirror="other",topic="{topic_name}",partition="0"}} 99\n')
    rc, out, err = ctl(sg, "verify", "--mirror", "dr", "--destination-only", "--confirmed", str(scrape))
    assert rc == 1, (out, err)
    assert f"{topic_name}[1] MISSING" in out and f"{topic_name}[0]" not in out.split("NOT verified")[1], out
