"""Commit means mirrored (`gate.transactions: commit | both`) against real
Apache Kafka, with a real Java transactional producer through syncgate.

The mirror here is a small Java program (TxnMirror below) that keeps a
source partition's offsets on the destination *including* the transaction
markers: it copies the records of a source transaction inside a destination
transaction and commits that one when its source position passes the
source's COMMIT marker (one partition, one producer: the destination's
records, marker included, land at the source's offsets). Reading
`read_committed` it is the MirrorMaker 2 exactly-once shape: it copies only
committed records — with `gate.transactions: data` that deadlocks a
transactional producer (test_gate_txn.py); in `commit` mode the data acks
pass, the commit waits. Reading `read_uncommitted` it is the Cluster Linking
shape (`both` mode). Paused with SIGSTOP, resumed with SIGCONT.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafkabed import wait_until
from sgfixture import KAFKA_LIBS, compile_java, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sgfixture import free_port
from sghelpers import LineDriven, wait_sync

pytestmark = pytest.mark.kafka

PRODUCER = r"""
import java.util.*;
import java.io.*;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/* Commands on stdin, one per line: "init", "begin", "send N [P]" (N records to
 * partition P, default 0, waits for every ack: "SENT first,last ms=.."),
 * "offsets GROUP P OFFSET" (sendOffsetsToTransaction: OFFSET for partition P of
 * the topic, metadata "txn-meta": "OFFSETS"), "commit", "abort" ("COMMITTED
 * ms=..", "ABORTED ms=..", or "ERROR <exception>"), "quit". */
public class TxnProducer {
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("transactional.id", a[1]);
        p.put("acks", "all");
        p.put("linger.ms", "0");
        p.put("max.block.ms", a[3]);
        p.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        int k = 0;
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
            String line;
            while ((line = in.readLine()) != null && !line.equals("quit")) {
                long t0 = System.nanoTime();
                try {
                    if (line.equals("init")) { pr.initTransactions(); System.out.println("INIT"); }
                    else if (line.equals("begin")) { pr.beginTransaction(); System.out.println("BEGUN"); }
                    else if (line.startsWith("send ")) {
                        String[] w = line.split(" ");
                        int n = Integer.parseInt(w[1]), part = w.length > 2 ? Integer.parseInt(w[2]) : 0;
                        List<Future<RecordMetadata>> fs = new ArrayList<>();
                        for (int i = 0; i < n; i++)
                            fs.add(pr.send(new ProducerRecord<>(a[2], part, "k" + k, "v" + (k++))));
                        long first = -1, last = -1;
                        for (Future<RecordMetadata> f : fs) {
                            long o = f.get().offset();
                            if (first < 0) first = o;
                            last = o;
                        }
                        System.out.println("SENT " + first + "," + last + " ms=" + (System.nanoTime() - t0) / 1000000);
                    } else if (line.startsWith("offsets ")) {
                        String[] w = line.split(" ");
                        pr.sendOffsetsToTransaction(
                            Map.of(new TopicPartition(a[2], Integer.parseInt(w[2])),
                                   new OffsetAndMetadata(Long.parseLong(w[3]), "txn-meta")),
                            new ConsumerGroupMetadata(w[1]));
                        System.out.println("OFFSETS");
                    } else if (line.equals("commit")) {
                        pr.commitTransaction();
                        System.out.println("COMMITTED ms=" + (System.nanoTime() - t0) / 1000000);
                    } else if (line.equals("abort")) {
                        pr.abortTransaction();
                        System.out.println("ABORTED ms=" + (System.nanoTime() - t0) / 1000000);
                    }
                } catch (Exception e) {
                    System.out.println("ERROR " + e + " ms=" + (System.nanoTime() - t0) / 1000000);
                }
                System.out.flush();
            }
        }
    }
}
"""

MIRROR = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

/* Copies partition a[4] of topic a[2] from a[0] to a[1], reading with isolation
 * a[3]; the records of a source transaction go into one destination
 * transaction, committed once the source position passes the source marker
 * (so the destination's marker lands at the source marker's offset). */
public class TxnMirror {
    public static void main(String[] a) throws Exception {
        Properties c = new Properties();
        c.put("bootstrap.servers", a[0]);
        c.put("group.id", "txnmirror-" + a[2] + "-" + a[4]);
        c.put("enable.auto.commit", "false");
        c.put("isolation.level", a[3]);
        c.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        c.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        Properties p = new Properties();
        p.put("bootstrap.servers", a[1]);
        p.put("transactional.id", "txnmirror-" + a[2] + "-" + a[4]);
        p.put("linger.ms", "0");
        p.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        int part = Integer.parseInt(a[4]);
        TopicPartition tp = new TopicPartition(a[2], part);
        try (KafkaConsumer<byte[], byte[]> con = new KafkaConsumer<>(c);
             KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p)) {
            pr.initTransactions();
            con.assign(List.of(tp));
            con.seekToBeginning(List.of(tp));
            long next = 0;
            boolean open = false;
            while (true) {
                for (ConsumerRecord<byte[], byte[]> r : con.poll(Duration.ofMillis(20))) {
                    if (!open) { pr.beginTransaction(); open = true; }
                    pr.send(new ProducerRecord<>(a[2], part, r.timestamp(), r.key(), r.value(), r.headers()));
                    next = r.offset() + 1;
                }
                if (open) {
                    pr.flush();
                    if (con.position(tp) > next) { /* passed the COMMIT marker */
                        pr.commitTransaction();
                        open = false;
                        next = con.position(tp);
                        System.out.println("MIRRORED " + next);
                    }
                } else {
                    next = Math.max(next, con.position(tp));
                }
            }
        }
    }
}
"""


def classes(bed) -> str:
    out = os.path.join(bed.run_dir, "txncommit")
    if not os.path.exists(os.path.join(out, "TxnMirror.class")):
        os.makedirs(out, exist_ok=True)
        compile_java(out, "TxnProducer.java", PRODUCER)
        compile_java(out, "TxnMirror.java", MIRROR)
    return out


def java_argv(cp: str, *args: str) -> list[str]:
    """A small JVM running a class of `cp` with the pinned Kafka's jars; its log
    level SG_JAVA_LOG (default WARN)."""
    return ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dlog4j2.level=" + os.environ.get("SG_JAVA_LOG", "WARN"),
            "-cp", cp + os.pathsep + os.path.join(KAFKA_LIBS, "*"), *args]


def java(cp: str, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(java_argv(cp, *args), **kw)


class JavaProducer(LineDriven):
    """TxnProducer above, driven line by line."""

    def __init__(self, cp: str, bootstrap: str, txn_id: str, topic: str, max_block_ms: int = 60000):
        argv = java_argv(cp, "TxnProducer", bootstrap, txn_id, topic, str(max_block_ms))
        super().__init__(argv, os.path.join(cp, f"{txn_id}.log"),
                         keep=("INIT", "BEGUN", "SENT", "OFFSETS", "COMMITTED", "ABORTED", "ERROR"))


def ms(line: str) -> int:
    return int(line.rsplit("ms=", 1)[1])


@pytest.fixture
def txn_mirror(bed):
    """txn_mirror(source, dest, topic, isolation): the running TxnMirror (a Popen)."""
    procs = []

    def start(source, dest, topic, isolation="read_committed", partition=0):
        log = open(os.path.join(bed.run_dir, f"txnmirror-{topic}-{partition}.log"), "w")
        p = java(classes(bed), "TxnMirror", source.bootstrap, dest.bootstrap, topic, isolation, str(partition),
                 stdout=log, stderr=subprocess.STDOUT)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait()


@pytest.fixture
def producers():
    made = []
    yield made
    for p in made:
        p.close()


def txn_setup(bed, source, dest, make_syncgate, txn_mirror, producers, topic, isolation="read_committed",
          max_block_ms=60000, sync_groups=None, **gate):
    source.create_topic(topic, partitions=1)
    dest.create_topic(topic, partitions=1)
    mirror = txn_mirror(source, dest, topic, isolation)
    extra = {"sync_groups": sync_groups} if sync_groups else {}
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic], **extra)], gate=gate)
    wait_sync(sg, "dr", topic)
    p = JavaProducer(classes(bed), sg.bootstrap, f"tx-{topic}", topic, max_block_ms)
    producers.append(p)
    assert p.ask("init") == "INIT"
    return sg, mirror, p


def committed_records(dest, topic: str, want: int, timeout: float = 30, partitions=(0,)) -> int:
    """How many records a read_committed consumer of `dest` reads from `partitions` (up to `want`)."""
    c = Consumer({"bootstrap.servers": dest.bootstrap, "group.id": f"check-{topic}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    got, deadline = 0, time.monotonic() + timeout
    try:
        while got < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
        return got
    finally:
        c.close()


FEATURES = "org.apache.kafka.tools.FeatureCommand"


def transaction_version(cluster) -> int:
    out = cluster.run_tool(FEATURES, "describe")
    for line in out.splitlines():
        if "Feature: transaction.version" in line:
            return int(line.split("FinalizedVersionLevel:")[1].split()[0])
    raise AssertionError(f"no transaction.version in:\n{out}")


def set_transaction_version(cluster, version: int) -> int:
    """Finalise `cluster`'s transaction.version at `version` (waits until it reads
    back); returns the version it had before."""
    before = transaction_version(cluster)
    if before != version:
        cluster.run_tool(FEATURES, "downgrade" if version < before else "upgrade",
                         "--feature", f"transaction.version={version}")
        wait_until(lambda: transaction_version(cluster) == version, timeout=30,
                   what=f"transaction.version {version}")
    return before


@pytest.fixture(params=[2, 1], ids=["tv2", "tv1"])
def tv(request, source):
    """The source's transaction.version for the test (KIP-890: 2, partitions join
    implicitly; 1, AddPartitionsToTxn through the coordinator), set back after."""
    before = set_transaction_version(source, request.param)
    yield request.param
    set_transaction_version(source, before)


def test_commit_waits_for_the_mirror_data_acks_do_not(bed, source, dest, make_syncgate, txn_mirror, producers,
                                                     topic_name, tv):
    """commit mode, a read_committed mirror: the sends return while the mirror
    is paused; commitTransaction() returns only once the mirror resumed and the
    destination has the COMMIT marker; a read_committed consumer there reads
    every record. Both transaction versions: the partitions come from the
    coordinator either way."""
    # the hold limit well above the test's own steps while the mirror is
    # stopped (past the default 8 s on a loaded machine), so the commit is
    # answered by the mirror's progress, never by the limit
    sg, mirror, p = txn_setup(bed, source, dest, make_syncgate, txn_mirror, producers, topic_name,
                              transactions="commit", max_txn_commit_hold_ms=30000)
    assert p.ask("begin") == "BEGUN"
    mirror.send_signal(signal.SIGSTOP)
    sent = p.ask("send 5", timeout=30)
    assert sent.startswith("SENT 0,4"), sent
    assert ms(sent) < 5000, f"a transactional send was held in commit mode: {sent}"
    p.tell("commit")
    with pytest.raises(queue.Empty):
        p.answer(timeout=4)
    assert sg.metric("syncgate_txn_commits_held") == 1, sg.metrics()
    assert dest.high_watermark(topic_name, 0) == 0
    marker_end = source.high_watermark(topic_name, 0)  # the COMMIT marker is written on the source
    assert marker_end == 6, marker_end
    mirror.send_signal(signal.SIGCONT)
    line = p.answer(timeout=60)
    dest_hw = dest.high_watermark(topic_name, 0)
    assert line.startswith("COMMITTED"), line
    assert ms(line) >= 4000, line
    assert dest_hw >= marker_end, f"commit answered with the destination at {dest_hw} < {marker_end}"
    assert committed_records(dest, topic_name, 5) == 5
    assert sg.metric("syncgate_txn_commits_held") == 0
    assert sg.metric("syncgate_txn_commit_hold_seconds_count") >= 1, sg.metrics()
    assert sg.metric("syncgate_txn_commit_timeouts_total") == 0
    # a second transaction with the mirror running: committed, nothing left behind
    assert p.ask("begin") == "BEGUN"
    assert p.ask("send 3").startswith("SENT 6,8")
    line = p.ask("commit", timeout=60)
    assert line.startswith("COMMITTED"), line
    assert dest.high_watermark(topic_name, 0) >= 10
    assert committed_records(dest, topic_name, 8) == 8
    add_partitions = [ln for ln in sg.log().splitlines() if "api=AddPartitionsToTxn" in ln]
    assert bool(add_partitions) == (tv == 1), f"transaction.version {tv}: {add_partitions[:2]}"


@pytest.mark.parametrize("code", [51, 14, 7])
def test_commit_timeout_is_retried_never_success(bed, source, dest, make_syncgate, txn_mirror, producers,
                                                 topic_name, code):
    """A held commit that reaches gate.max_txn_commit_hold_ms is answered the
    timeout code, never success; the Java producer retries EndTxn by itself
    (commitTransaction() does not fail) and the retry is held again until the
    mirror has the marker."""
    sg, mirror, p = txn_setup(bed, source, dest, make_syncgate, txn_mirror, producers, topic_name,
                          transactions="commit", max_txn_commit_hold_ms=1500,
                          error_codes={"txn_commit_timeout": code})
    assert p.ask("begin") == "BEGUN"
    mirror.send_signal(signal.SIGSTOP)
    assert p.ask("send 4", timeout=30).startswith("SENT 0,3")
    p.tell("commit")
    wait_until(lambda: sg.metric("syncgate_txn_commit_timeouts_total") >= 2, timeout=30,
               what="two held commits timed out")
    with pytest.raises(queue.Empty):
        p.answer(timeout=0.1)
    warn = [ln for ln in sg.log().splitlines() if "txn_commit_timeout" in ln]
    assert warn and f"transactional_id=tx-{topic_name}" in warn[0] and f"{topic_name}-0" in warn[0], warn[:1]
    mirror.send_signal(signal.SIGCONT)
    line = p.answer(timeout=60)
    dest_hw = dest.high_watermark(topic_name, 0)
    assert line.startswith("COMMITTED"), line
    assert dest_hw >= 5, dest_hw
    assert committed_records(dest, topic_name, 4) == 4


def test_abort_is_not_held(bed, source, dest, make_syncgate, txn_mirror, producers, topic_name):
    sg, mirror, p = txn_setup(bed, source, dest, make_syncgate, txn_mirror, producers, topic_name,
                          transactions="commit")
    assert p.ask("begin") == "BEGUN"
    mirror.send_signal(signal.SIGSTOP)
    assert p.ask("send 3", timeout=30).startswith("SENT")
    line = p.ask("abort", timeout=30)
    assert line.startswith("ABORTED") and ms(line) < 3000, line
    assert sg.metric('syncgate_txn_end_not_held_total{reason="abort"}') == 1, sg.metrics()
    mirror.send_signal(signal.SIGCONT)


def test_both_holds_data_and_commit(bed, source, dest, make_syncgate, txn_mirror, producers, topic_name):
    """both mode with a read_uncommitted, marker-preserving mirror (the Cluster
    Linking shape): the sends wait for the mirror, and so does the commit."""
    sg, mirror, p = txn_setup(bed, source, dest, make_syncgate, txn_mirror, producers, topic_name,
                          isolation="read_uncommitted", transactions="both")
    assert p.ask("begin") == "BEGUN"
    mirror.send_signal(signal.SIGSTOP)
    p.tell("send 2")
    with pytest.raises(queue.Empty):
        p.answer(timeout=3)
    mirror.send_signal(signal.SIGCONT)
    assert p.answer(timeout=60).startswith("SENT 0,1")
    mirror.send_signal(signal.SIGSTOP)
    p.tell("commit")
    with pytest.raises(queue.Empty):
        p.answer(timeout=3)
    assert sg.metric("syncgate_txn_commits_held") == 1
    mirror.send_signal(signal.SIGCONT)
    line = p.answer(timeout=60)
    assert line.startswith("COMMITTED"), line
    assert dest.high_watermark(topic_name, 0) >= 3
    assert committed_records(dest, topic_name, 2) == 2


def test_commit_past_max_block_ms_fails_then_the_application_retries(bed, source, dest, make_syncgate, txn_mirror,
                                                                      producers, topic_name):
    """What the application sees when the mirror stays away longer than the
    producer's max.block.ms: commitTransaction() throws TimeoutException (not
    success, not an abort); calling it again once the mirror is back commits —
    the outcome was decided on the source — and returns only once the
    destination has the marker."""
    sg, mirror, p = txn_setup(bed, source, dest, make_syncgate, txn_mirror, producers, topic_name,
                              max_block_ms=4000, transactions="commit", max_txn_commit_hold_ms=1500)
    assert p.ask("begin") == "BEGUN"
    mirror.send_signal(signal.SIGSTOP)
    assert p.ask("send 2", timeout=30).startswith("SENT 0,1")
    line = p.ask("commit", timeout=30)
    assert line.startswith("ERROR") and "TimeoutException" in line, line
    assert dest.high_watermark(topic_name, 0) == 0
    mirror.send_signal(signal.SIGCONT)
    line = p.ask("commit", timeout=60)
    assert line.startswith("COMMITTED"), line
    assert dest.high_watermark(topic_name, 0) >= 3
    assert committed_records(dest, topic_name, 2) == 2


def test_commit_mode_with_a_read_committed_mm2(bed, source, dest, make_syncgate, make_mm2, producers, topic_name):
    """The deadlock of test_gate_txn.py (data acks held for an MM2 that copies
    only committed records) is gone in commit mode: the sends return, the
    commit is held until MM2's offset-syncs reach the transaction's last data
    record (MM2 copies no markers), and commitTransaction() then returns with
    every record on the destination."""
    source.create_topic(topic_name, partitions=1)
    mm2 = make_mm2(topic_name, props={"source.consumer.isolation.level": "read_committed"})
    # the hold limit above the test's own steps while MM2 is paused (as above)
    sg = make_syncgate(source, gate={"transactions": "commit", "max_txn_commit_hold_ms": 30000}, mirrors=[mirror_conf(
        "mm", dest, [topic_name], offsets="mm2", mm2_offset_syncs_topic="mm2-offset-syncs.dest.internal",
        mm2_isolation_level="read_committed")])
    source.produce(topic_name, 3)  # plain records: MM2 copies them, the topic gets promoted
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= 3, timeout=120, what="MM2 copying")
    wait_sync(sg, "mm", topic_name, timeout=120)
    p = JavaProducer(classes(bed), sg.bootstrap, f"tx-{topic_name}", topic_name)
    producers.append(p)
    assert p.ask("init") == "INIT"
    assert p.ask("begin") == "BEGUN"
    mm2.pause()
    sent = p.ask("send 4", timeout=30)
    assert sent.startswith("SENT 3,6") and ms(sent) < 5000, sent
    p.tell("commit")
    with pytest.raises(queue.Empty):
        p.answer(timeout=4)
    assert sg.metric("syncgate_txn_commits_held") == 1, sg.metrics()
    mm2.resume()
    line = p.answer(timeout=120)
    dest_hw = dest.high_watermark(topic_name, 0)
    assert line.startswith("COMMITTED"), line
    assert dest_hw >= 7, f"commit answered with {dest_hw} records on the destination"
    assert sg.metric("syncgate_txn_commit_timeouts_total") == 0


def test_commit_across_brokers(bed, make_cluster, make_syncgate, txn_mirror, producers, topic_name):
    """A two-broker source, one sidecar per broker, a transaction on two
    partitions led by different brokers: the coordinator's sidecar learns the
    high watermark of the partition its broker does not lead from the source
    client (mirror_gate_source_hw), and the commit waits for both
    destinations' markers."""
    from confluent_kafka.admin import NewTopic
    src = make_cluster("txsrc", brokers=2)
    dst = make_cluster("txdst", brokers=1)
    ids = src.broker_ids
    src.admin().create_topics([NewTopic(topic_name, 2, replica_assignment=[[ids[0]], [ids[1]]])])[topic_name].result(30)
    dst.create_topic(topic_name, partitions=2)
    mirrors = [txn_mirror(src, dst, topic_name, partition=p) for p in (0, 1)]
    nodes = {i: f"127.0.0.1:{free_port()}" for i in ids}
    sgs = [make_syncgate(src, mirrors=[mirror_conf("dr", dst, [topic_name])], broker_id=i,
                         advertise={"nodes": nodes}, gate={"transactions": "commit"},
                         extra={"listen": {"kafka": nodes[i]}}) for i in ids]
    for sg in sgs:
        wait_sync(sg, "dr", topic_name, timeout=90)
    p = JavaProducer(classes(bed), nodes[ids[0]], f"tx-{topic_name}", topic_name)
    producers.append(p)
    assert p.ask("init") == "INIT"
    assert p.ask("begin") == "BEGUN"
    assert p.ask("send 3 0").startswith("SENT 0,2")
    assert p.ask("send 2 1").startswith("SENT 0,1")
    for m in mirrors:
        m.send_signal(signal.SIGSTOP)
    p.tell("commit")
    with pytest.raises(queue.Empty):
        p.answer(timeout=3)
    mirrors[0].send_signal(signal.SIGCONT)  # one partition's marker arrives, not the other's
    with pytest.raises(queue.Empty):
        p.answer(timeout=3)
    mirrors[1].send_signal(signal.SIGCONT)
    line = p.answer(timeout=60)
    hws = [dst.high_watermark(topic_name, q) for q in (0, 1)]
    assert line.startswith("COMMITTED"), line
    assert hws[0] >= 4 and hws[1] >= 3, hws
    assert committed_records(dst, topic_name, 5, partitions=(0, 1)) == 5
    held = [sg for sg in sgs if "txn_commit_held" in sg.log()]
    assert len(held) == 1, "the commit is held by the coordinator's sidecar only"
    assert "txn_commit_source_hw" in held[0].log(), held[0].log()[-3000:]
    assert sum(sg.metric("syncgate_txn_commit_timeouts_total") for sg in sgs) == 0


def test_transaction_offsets_of_a_sync_group_are_stored_before_the_commit_returns(
        bed, source, dest, make_syncgate, txn_mirror, producers, topic_name):
    """sendOffsetsToTransaction of a sync_groups group, commit mode: when
    commitTransaction() returns, the destination group has the offsets (and
    their metadata) — the markers first, then the offsets, then the answer.
    A destination group with members refuses them: the commit is answered
    the timeout code (retried by the producer, no error) until the group is
    empty there, then returns with the offsets stored. An aborted
    transaction's offsets are never written. (The mirror reads
    read_uncommitted so that the abort keeps the offsets aligned.)"""
    from test_group_commits import committed_on
    group = f"eos-{topic_name}"
    sg, _, p = txn_setup(bed, source, dest, make_syncgate, txn_mirror, producers, topic_name,
                         isolation="read_uncommitted", sync_groups=["eos-.*"], transactions="commit",
                         max_txn_commit_hold_ms=1500)
    assert p.ask("begin") == "BEGUN"
    assert p.ask("send 3").startswith("SENT 0,2")
    assert p.ask("offsets " + group + " 0 2") == "OFFSETS"
    line = p.ask("commit", timeout=60)
    assert line.startswith("COMMITTED"), line
    assert committed_on(dest, group, topic_name, 1) == {0: 2}, "the commit returned before the offsets were stored"
    assert sg.metric('syncgate_txn_offset_stores_total{outcome="stored"}') == 1, sg.metrics()
    assert sg.metric("syncgate_txn_offset_commits_kept_total") == 1

    # a member of the group on the destination: the offsets are refused there
    there = Consumer({"bootstrap.servers": dest.bootstrap, "group.id": group, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest"})
    try:
        there.subscribe([topic_name])
        wait_until(lambda: there.poll(0.5) is not None or bool(there.assignment()), timeout=60,
                   what="a member of the group on the destination")
        assert p.ask("begin") == "BEGUN"
        assert p.ask("send 2").startswith("SENT")
        assert p.ask("offsets " + group + " 0 4") == "OFFSETS"
        p.tell("commit")
        wait_until(lambda: sg.metric('syncgate_txn_offset_stores_total{outcome="destination_active"}') >= 1,
                   timeout=30, what="the destination refusing the offsets")
        with pytest.raises(queue.Empty):
            p.answer(timeout=2)
        assert sg.metric("syncgate_txn_commit_timeouts_total") >= 1
    finally:
        there.close()
    line = p.answer(timeout=60)
    assert line.startswith("COMMITTED"), line
    assert committed_on(dest, group, topic_name, 1) == {0: 4}
    # an abort's offsets are dropped, never written
    assert p.ask("begin") == "BEGUN"
    assert p.ask("send 1").startswith("SENT")
    assert p.ask("offsets " + group + " 0 6") == "OFFSETS"
    assert p.ask("abort", timeout=30).startswith("ABORTED")
    # (the next commit, with no offsets of its own, would write them if they were kept)
    assert p.ask("begin") == "BEGUN"
    assert p.ask("send 1").startswith("SENT")
    assert p.ask("commit", timeout=60).startswith("COMMITTED")
    assert committed_on(dest, group, topic_name, 1) == {0: 4}, "an aborted transaction's offsets were written"
