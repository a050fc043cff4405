"""Synchronous consumer-group commits against real Apache Kafka: a group a
mirror lists in `sync_groups` commits through syncgate, and the OffsetCommit
answer leaves syncgate only once the destination stores the same commit
(offsets and metadata) for the same group. Java (classic and KIP-848
`group.protocol=consumer`) and librdkafka groups; a destination that cannot
answer (its broker stopped) holds the commit until the retriable answer, the
Java consumer retries without an application error; a group no mirror lists
is not copied; the source broker killed right after a burst of commits leaves
the destination group exactly where the last acknowledged commits put it."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafkabed import wait_until
from sgfixture import KAFKA_LIBS, compile_java, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl_json, lifecycle_extra, wait_sync, write_token

JAVA = r"""
import java.time.Duration;
import java.util.*;
import java.io.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

/* Commands on stdin, one per line: "poll N" consumes N more records
 * ("POLLED n"); "commit" commits what was consumed synchronously (metadata
 * "m-<k>" for the k-th commit) and prints "COMMITTED p:offset ..." (or
 * "ERROR <exception>"); "dest BOOTSTRAP" prints the group's committed
 * offsets and metadata there ("DEST p:offset:metadata ..."); "quit" closes. */
public class GroupCommitter {
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("group.id", a[1]);
        p.put("group.protocol", a[3]);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("max.poll.records", "1"); /* "poll N" consumes exactly N */
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(a[2]));
            int k = 0;
            String line;
            Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
            while ((line = in.readLine()) != null && !line.equals("quit")) {
                if (line.startsWith("dest ")) {
                    Properties ap = new Properties();
                    ap.put("bootstrap.servers", line.substring(5));
                    StringBuilder sb = new StringBuilder("DEST");
                    try (org.apache.kafka.clients.admin.Admin ad = org.apache.kafka.clients.admin.Admin.create(ap)) {
                        for (Map.Entry<TopicPartition, OffsetAndMetadata> e :
                                 ad.listConsumerGroupOffsets(a[1]).partitionsToOffsetAndMetadata().get().entrySet())
                            if (e.getValue() != null)
                                sb.append(' ').append(e.getKey().partition()).append(':').append(e.getValue().offset())
                                  .append(':').append(e.getValue().metadata());
                    }
                    System.out.println(sb);
                    System.out.flush();
                    continue;
                }
                if (line.startsWith("poll ")) {
                    int want = Integer.parseInt(line.split(" ")[1]);
                    long deadline = System.currentTimeMillis() + 60000;
                    int got = 0;
                    while (got < want && System.currentTimeMillis() < deadline)
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                            next.put(new TopicPartition(r.topic(), r.partition()),
                                     new OffsetAndMetadata(r.offset() + 1, "m-" + k));
                            got++;
                        }
                    System.out.println("POLLED " + got);
                    System.out.flush();
                    continue;
                }
                k++;
                long t0 = System.nanoTime();
                try {
                    c.commitSync(next);
                    StringBuilder sb = new StringBuilder("COMMITTED");
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet())
                        sb.append(' ').append(e.getKey().partition()).append(':').append(e.getValue().offset());
                    sb.append(" ms=").append((System.nanoTime() - t0) / 1000000);
                    System.out.println(sb);
                } catch (Exception e) {
                    System.out.println("ERROR " + e);
                }
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet())
                    next.put(e.getKey(), new OffsetAndMetadata(e.getValue().offset(), "m-" + k));
                System.out.flush();
            }
        }
    }
}
"""

GROUP_PREFIX = "orders-"


def java_classes(bed) -> str:
    """GroupCommitter compiled once per run."""
    out = os.path.join(bed.run_dir, "groupcommit")
    if not os.path.exists(os.path.join(out, "GroupCommitter.class")):
        os.makedirs(out, exist_ok=True)
        compile_java(out, "GroupCommitter.java", JAVA)
    return out


class JavaGroup:
    """The GroupCommitter above, driven line by line."""

    def __init__(self, classes: str, bootstrap: str, group: str, topic: str, protocol: str):
        self.log = open(os.path.join(classes, f"{group}.log"), "w")
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dlog4j2.level=WARN",
             "-cp", classes + os.pathsep + os.path.join(KAFKA_LIBS, "*"), "GroupCommitter",
             bootstrap, group, topic, protocol],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:  # the client's own log lines go there too
            if line.split(" ", 1)[0] in ("COMMITTED", "ERROR", "POLLED", "DEST"):
                self.lines.put(line.strip())
            else:
                self.log.write(line)

    def _ask(self, cmd: str, timeout: float) -> str:
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self.lines.get(timeout=timeout)

    def poll(self, n: int, timeout: float = 90) -> int:
        """Consume n more records (fewer after 60 s): how many."""
        line = self._ask(f"poll {n}", timeout)
        assert line.startswith("POLLED"), line
        return int(line.split()[1])

    def commit(self, n: int = 0, timeout: float = 120) -> dict[int, int] | str:
        """Consume n more records, then commit: {partition: offset}, or the error line."""
        if n:
            got = self.poll(n)
            assert got == n, f"consumed {got} of {n} records"
        line = self._ask("commit", timeout)
        if line.startswith("ERROR"):
            return line
        assert line.startswith("COMMITTED"), line
        out = {}
        for tok in line.split()[1:]:
            if ":" in tok:
                p, o = tok.split(":")
                out[int(p)] = int(o)
        return out

    def destination(self, bootstrap: str, timeout: float = 60) -> dict[int, tuple[int, str]]:
        """The group's committed (offset, metadata) per partition on `bootstrap` (Java Admin)."""
        line = self._ask(f"dest {bootstrap}", timeout)
        assert line.startswith("DEST"), line
        out = {}
        for tok in line.split()[1:]:
            p, o, m = tok.split(":", 2)
            out[int(p)] = (int(o), m)
        return out

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - stopped below
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.log.close()


def committed_on(cluster, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset per partition on `cluster` (< 0: none),
    read with OffsetFetch by a consumer that does not join the group."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=15)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def group_setup(source, dest, make_syncgate, make_testmirror, topic, partitions=2, gate=None, **mirror_settings):
    """`topic` gated by mirror dr (test mirror; `mirror_settings`: more of its
    settings), groups orders-.* synchronous; a state topic of its own and an
    admin token (failover, verify)."""
    source.create_topic(topic, partitions=partitions)
    dest.create_topic(topic, partitions=partitions)
    mirror = make_testmirror([topic], source=source, dest=dest)
    token = write_token(source.bed)
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic], sync_groups=[GROUP_PREFIX + ".*"], **mirror_settings)],
                       gate=gate, extra=lifecycle_extra(f"__sg-{topic}", token))
    sg.token_file = token
    wait_sync(sg, "dr", topic)
    return sg, mirror


def test_java_groups_commit_on_the_destination_before_the_answer(
        make_syncgate, make_testmirror, source, dest, topic_name, bed):
    """Java classic and consumer-protocol groups: every commitSync that
    returned is already the destination group's committed offset, metadata
    included; a group no mirror lists is never copied."""
    sg, _ = group_setup(source, dest, make_syncgate, make_testmirror, topic_name)
    source.produce(topic_name, n=60, bootstrap_servers=sg.bootstrap)
    classes = java_classes(bed)
    for protocol in ("classic", "consumer"):
        group = f"{GROUP_PREFIX}{protocol}-{topic_name}"
        g = JavaGroup(classes, sg.bootstrap, group, topic_name, protocol)
        try:
            for k in range(3):
                got = g.commit(10)
                assert isinstance(got, dict) and got, (protocol, k, got)
                on_dest = committed_on(dest, group, topic_name, 2)
                for p, off in got.items():
                    assert on_dest[p] == off, (protocol, p, off, on_dest)
                # the committed metadata travels with the offsets
                meta = g.destination(dest.bootstrap)
                for p, off in got.items():
                    assert meta[p] == (off, f"m-{k}"), (protocol, p, meta)
        finally:
            g.close()
    assert sg.metric('syncgate_group_commits_total{outcome="stored"}') >= 6
    assert sg.metric("syncgate_group_commits_held") == 0
    assert sg.metric("syncgate_group_commit_groups") == 2, "the classic and the consumer-protocol group"

    other = f"billing-{topic_name}"
    g = JavaGroup(classes, sg.bootstrap, other, topic_name, "classic")
    try:
        got = g.commit(5)
        assert isinstance(got, dict) and got, got
    finally:
        g.close()
    assert all(o < 0 for o in committed_on(dest, other, topic_name, 2).values()), "not in sync_groups: not copied"
    assert committed_on(source, other, topic_name, 2) != {}
    assert sg.metric('syncgate_group_commits_not_gated_total{api="OffsetCommit"}') >= 1

    # verify compares every synchronous group with the destination; the
    # failover then verifies them instead of moving them, and moves the other
    rc, doc, err = ctl_json(sg, "verify", "--mirror", "dr")
    assert rc == 0, (doc, err)
    rows = [r for r in doc["groups"] if r["topic"] == topic_name]
    assert {r["group"] for r in rows} == {f"{GROUP_PREFIX}classic-{topic_name}", f"{GROUP_PREFIX}consumer-{topic_name}"}
    assert all(r["action"] == "in step" for r in rows), rows
    rc, doc, err = ctl_json(sg, "failover", "--mirror", "dr", "--topics", topic_name, "--timeout-ms", "20000",
                            timeout=200)
    assert rc == 0 and doc["verified"], (doc, err)
    actions = {r["group"]: r["action"] for r in doc["groups"] if r["topic"] == topic_name}
    assert actions[f"{GROUP_PREFIX}classic-{topic_name}"] == "verified", doc["groups"]
    assert actions[f"{GROUP_PREFIX}consumer-{topic_name}"] == "verified", doc["groups"]
    assert actions[other] == "moved", doc["groups"]


def test_librdkafka_group_commit_on_the_destination_before_the_answer(
        make_syncgate, make_testmirror, source, dest, topic_name):
    """A librdkafka group (confluent-kafka) committing synchronously through
    syncgate: the destination has each commit when commit() returns."""
    sg, _ = group_setup(source, dest, make_syncgate, make_testmirror, topic_name)
    source.produce(topic_name, n=40, bootstrap_servers=sg.bootstrap)
    group = f"{GROUP_PREFIX}rdkafka-{topic_name}"
    c = Consumer({"bootstrap.servers": sg.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic_name])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 40 and time.monotonic() < deadline:
            msgs = c.consume(10, timeout=1)
            msgs = [m for m in msgs if not m.error()]
            if not msgs:
                continue
            seen += len(msgs)
            tps = c.commit(asynchronous=False)
            on_dest = committed_on(dest, group, topic_name, 2)
            for tp in tps:
                if tp.offset >= 0:
                    assert on_dest[tp.partition] == tp.offset, (tp, on_dest)
        assert seen == 40
    finally:
        c.close()


def test_unreachable_destination_holds_then_answers_retriable_and_java_retries(
        make_syncgate, make_testmirror, make_cluster, source, topic_name, bed):
    """The destination's broker stopped (SIGSTOP): the commit is held for
    gate.max_commit_hold_ms, then answered COORDINATOR_LOAD_IN_PROGRESS; the
    Java consumer's commitSync retries by itself and returns once the
    destination is back, with the commit on it — no application error."""
    dst = make_cluster("gcdst", brokers=1)
    sg, _ = group_setup(source, dst, make_syncgate, make_testmirror, topic_name, gate={"max_commit_hold_ms": 2000})
    source.produce(topic_name, n=20, bootstrap_servers=sg.bootstrap)
    classes = java_classes(bed)
    group = f"{GROUP_PREFIX}paused-{topic_name}"
    g = JavaGroup(classes, sg.bootstrap, group, topic_name, "classic")
    try:
        resumed = threading.Timer(7.0, dst.resume_broker, args=(dst.broker_ids[0],))
        first = g.commit(5)
        assert isinstance(first, dict), first
        assert g.poll(5) == 5  # consumed (mirrored) before the destination stops
        dst.pause_broker(dst.broker_ids[0])
        resumed.start()
        t0 = time.monotonic()
        got = g.commit(timeout=90)
        waited = time.monotonic() - t0
        resumed.join()
        assert isinstance(got, dict), f"the application saw an error: {got}"
        assert waited >= 6.0, f"the commit returned after {waited:.1f} s, before the destination was back"
        assert sg.metric('syncgate_group_commits_total{outcome="timeout"}') >= 1
        assert sg.metric("syncgate_group_commit_retriable_answers_total") >= 1
        on_dest = committed_on(dst, group, topic_name, 2)
        for p, off in got.items():
            assert on_dest[p] == off, (p, off, on_dest)
    finally:
        if resumed.is_alive() or not resumed.finished.is_set():
            resumed.cancel()
            dst.resume_broker(dst.broker_ids[0])
        g.close()


def test_source_killed_after_commits_destination_group_resumes_exactly(
        make_syncgate, make_testmirror, make_cluster, dest, topic_name, bed):
    """Disaster: the source broker is SIGKILLed right after a burst of
    commits. On the destination the group's offsets equal the last
    acknowledged commits, and a consumer of that group started on the
    destination reads exactly the records after them: none of the committed
    ones again, none skipped."""
    src = make_cluster("gcsrc", brokers=1)
    sg, _ = group_setup(src, dest, make_syncgate, make_testmirror, topic_name)
    src.produce(topic_name, n=200, bootstrap_servers=sg.bootstrap)
    classes = java_classes(bed)
    group = f"{GROUP_PREFIX}disaster-{topic_name}"
    g = JavaGroup(classes, sg.bootstrap, group, topic_name, "consumer")
    acked: dict[int, int] = {}
    try:
        for _ in range(8):
            got = g.commit(15)
            assert isinstance(got, dict), got
            acked.update(got)
        src.stop_broker(src.broker_ids[0], kill=True)
    finally:
        g.close()
    on_dest = committed_on(dest, group, topic_name, 2)
    for p, off in acked.items():
        assert on_dest[p] == off, (p, off, on_dest)
    # a consumer of the group on the destination starts exactly there
    c = Consumer({"bootstrap.servers": dest.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    first: dict[int, int] = {}
    try:
        c.subscribe([topic_name])
        deadline = time.monotonic() + 60
        total = {p: dest.high_watermark(topic_name, p) for p in range(2)}
        want = {p for p in range(2) if total[p] > acked.get(p, 0)}
        while set(first) != want and time.monotonic() < deadline:
            m = c.poll(1)
            if m is None or m.error():
                continue
            first.setdefault(m.partition(), m.offset())
    finally:
        c.close()
    for p in want:
        assert first[p] == acked.get(p, 0), (p, first, acked)


def test_mm2_mirror_translates_commits_through_the_offset_syncs(
        make_syncgate, make_mm2, source, dest, topic_name, bed):
    """`offsets: mm2`: a commit is written to the destination group
    translated through MirrorMaker 2's offset-syncs — here offsets are the
    same on both sides (a fresh topic, identity naming, no markers), so the
    translation of a caught-up group must give the committed offset itself
    — and never past the destination's high watermark."""
    source.create_topic(topic_name, partitions=1)
    mm2 = make_mm2(topic_name)
    sg = make_syncgate(source, mirrors=[mirror_conf(
        "dest", dest, [topic_name], offsets="mm2", mm2_offset_syncs_topic="mm2-offset-syncs.dest.internal",
        sync_groups=[GROUP_PREFIX + ".*"])])
    source.produce(topic_name, 3)
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= 3, timeout=120, what="MirrorMaker 2 replicating")
    wait_sync(sg, "dest", topic_name, timeout=120)
    for _ in range(9):  # one at a time: each ack waits for its offset-sync
        source.produce(topic_name, 1, bootstrap_servers=sg.bootstrap)
    group = f"{GROUP_PREFIX}mm2-{topic_name}"
    g = JavaGroup(java_classes(bed), sg.bootstrap, group, topic_name, "classic")
    try:
        for _ in range(3):
            got = g.commit(4)
            assert isinstance(got, dict) and got, got
            on_dest = committed_on(dest, group, topic_name, 1)
            assert on_dest[0] == got[0], (got, on_dest)
            assert on_dest[0] <= dest.high_watermark(topic_name, 0)
    finally:
        g.close()
        mm2.stop()
    assert sg.metric('syncgate_group_commit_partitions_total{kind="untranslatable"}') == 0


def test_group_with_members_on_the_destination_is_refused_there_and_answered_retriable(
        make_syncgate, make_testmirror, source, dest, topic_name):
    """The destination group has members (it already runs there): the
    destination refuses the copy, so the source commit is answered
    COORDINATOR_LOAD_IN_PROGRESS (fail closed), counted destination_active."""
    sg, _ = group_setup(source, dest, make_syncgate, make_testmirror, topic_name)
    source.produce(topic_name, n=10, bootstrap_servers=sg.bootstrap)
    group = f"{GROUP_PREFIX}both-{topic_name}"
    there = Consumer({"bootstrap.servers": dest.bootstrap, "group.id": group, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest"})
    here = Consumer({"bootstrap.servers": sg.bootstrap, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})
    try:
        there.subscribe([topic_name])
        wait_until(lambda: there.poll(0.5) is not None or bool(there.assignment()), timeout=60,
                   what="a member of the group on the destination")
        here.subscribe([topic_name])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 10 and time.monotonic() < deadline:
            seen += len([m for m in here.consume(10, timeout=1) if not m.error()])
            there.poll(0)
        assert seen == 10
        try:
            here.commit(asynchronous=False)
            raise AssertionError("the commit succeeded although the destination refused it")
        except KafkaException as e:
            assert e.args[0].code() == 14, e  # COORDINATOR_LOAD_IN_PROGRESS
        assert sg.metric('syncgate_group_commits_total{outcome="destination_active"}') >= 1
    finally:
        here.close()
        there.close()


def test_mm2_source_killed_after_commits_destination_group_resumes_exactly(
        make_syncgate, make_mm2, make_cluster, dest, topic_name, bed):
    """Disaster with MirrorMaker 2 (`offsets: mm2`, its default
    offset.lag.max=100: the commits are translated through the pairs the
    record match proved, else conservatively through the offset-syncs): the
    source broker SIGKILLed right after a burst of commits; a consumer of the
    group started on the destination skips none of the records after the
    committed ones (by value: MM2 renumbers), and reads committed ones again
    only where a translation was conservative (an offset-sync overtook the
    record match: docs/operating.md) — counted and printed."""
    src = make_cluster("gcmm2", brokers=1)
    src.create_topic(topic_name, partitions=2)
    make_mm2(topic_name, source=src, props={"offset.lag.max": "100"})
    sg = make_syncgate(src, mirrors=[mirror_conf(
        "dest", dest, [topic_name], offsets="mm2", mm2_offset_syncs_topic="mm2-offset-syncs.dest.internal",
        sync_groups=[GROUP_PREFIX + ".*"])])
    src.produce(topic_name, 2, partition=0)
    src.produce(topic_name, 2, partition=1)  # MM2's first offset-sync of each partition
    wait_sync(sg, "dest", topic_name, timeout=120)
    src.produce(topic_name, n=200, values=[f"r{i}" for i in range(200)], bootstrap_servers=sg.bootstrap)
    group = f"{GROUP_PREFIX}mm2disaster-{topic_name}"
    g = JavaGroup(java_classes(bed), sg.bootstrap, group, topic_name, "consumer")
    acked: dict[int, int] = {}
    try:
        for _ in range(8):
            got = g.commit(15)
            assert isinstance(got, dict), got
            acked.update(got)
        committed_values = {p: {r.value for r in src.consume(topic_name, p, end=acked[p])} for p in acked}
        rest_values = {p: {r.value for r in src.consume(topic_name, p, start=acked[p])} for p in acked}
        src.stop_broker(src.broker_ids[0], kill=True)
    finally:
        g.close()
    on_dest = committed_on(dest, group, topic_name, 2)
    again = {}
    for p, off in acked.items():
        assert on_dest[p] >= 0, (p, on_dest)
        after = {r.value for r in dest.consume(topic_name, p, start=on_dest[p])}
        assert rest_values[p] <= after, f"partition {p}: an uncommitted record would be skipped"
        again[p] = len(committed_values[p] & after)
    print(f"committed records the destination group would read again, per partition: {again} "
          f"(0 where the record match proved the commit)")
    assert sg.metric('syncgate_group_commit_partitions_total{kind="untranslatable"}') == 0
