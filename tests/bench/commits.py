#!/usr/bin/python3
"""What synchronous commits cost: OffsetCommit of a group in `sync_groups`,
and `commitTransaction()` per `gate.transactions` mode.

One source and one destination cluster (one broker each). Prints figures;
never fails on time. Every comparison runs its targets in alternating rounds
(the order rotated each round); the figures are percentiles over every
sample of every round, with the rounds' p50s alongside.

groups (--only groups): a topic mirrored by the offset-preserving test
  mirror, SYNC on mirror dr, 1,000 records on the destination; a librdkafka
  consumer (confluent-kafka, assign() — no group membership) commits one
  partition's offset synchronously, --commits times per round, per target:
    direct     the source broker (group bench-direct)
    ungated    syncgate, a group no mirror lists (bench-async): passes
    sync       syncgate, a group in dr's sync_groups (bench-sync): answered
               once the destination stores the commit
    dest-admin the destination's AlterConsumerGroupOffsets alone (librdkafka
               AdminClient, group bench-admin): the round trip syncgate adds
transactions (--only transactions): a one-partition topic mirrored by
  BenchTxnMirror below (Java, read_uncommitted: it copies a source
  transaction inside a destination transaction and commits that one at the
  source's COMMIT marker, so markers land at their offsets — the shape every
  mode works with; it polls every 5 ms); a librdkafka transactional producer per
  target runs --txns transactions of one record per round, timing
  commit_transaction() (and the send's flush, which `data`/`both` hold):
    direct     the source broker
    data       syncgate, gate.transactions: data (the commit passes)
    commit     syncgate, gate.transactions: commit (the commit is held)
    both       syncgate, gate.transactions: both

    SG_STATE_HOME=/tmp/syncgate-bench /usr/bin/python3 tests/bench/commits.py \\
        [--rounds 5] [--commits 200] [--txns 60] [--only groups,transactions]

(also `tests/bench/run.sh`'s neighbours: it builds first; this script uses
build/proxy/syncgate as it is, or SYNCGATE_BIN). Results go to
docs/benchmarks.md by hand, with the machine load (printed at start and end).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
# the clients run in confluent-kafka's venv of tests/clients/install.sh (the
# admin offset-alter API needs confluent-kafka >= 2.0; the system one is older)
CLIENTS_CACHE = os.environ.get("SG_CLIENTS_CACHE", os.path.join(REPO, ".cache", "clients"))
CLIENT_PY = os.path.join(CLIENTS_CACHE, "confluent-kafka", "bin", "python")


def pct(xs: list, p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list (bench.py's)."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def log(*a):
    print(f"[bench {time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def summary(xs: list) -> str:
    return f"p50 {pct(xs, 50):7.2f}  p99 {pct(xs, 99):7.2f}  max {max(xs):7.2f}" if xs else "no samples"


def report(title: str, runs: dict) -> None:
    """runs: {target: [[ms, ...] per round]}."""
    print(f"\n{title}")
    base = None
    for t, rounds in runs.items():
        every = [x for r in rounds for x in r]
        p50s = [round(pct(r, 50), 2) for r in rounds if r]
        if base is None:
            base = pct(every, 50)
        print(f"  {t:10} {summary(every)} ms  (n={len(every)}; p50 per round {p50s};"
              f" p50 {pct(every, 50) / base:.2f} x {next(iter(runs))})")


def rotate(targets: list, r: int) -> list:
    return targets[r % len(targets):] + targets[:r % len(targets)]


# -- groups -----------------------------------------------------------------------------

def probe(*args: str) -> list:
    """Run this script's --probe in the clients' venv; its list of ms."""
    out = subprocess.run([CLIENT_PY, os.path.abspath(__file__), "--probe", *map(str, args)],
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"probe {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_probe(kind: str, bootstrap: str, name: str, topic: str, n: int, first: int) -> None:
    """The client side, in the venv: `n` timed operations, ms as JSON on stdout.
    offsetcommit: commit(asynchronous=False) of group `name`, partition 0;
    admin: alter_consumer_group_offsets of group `name`;
    txn: transactions of one record (transactional id `name`): per
    transaction [send ms, commit ms]."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    xs = []
    if kind == "offsetcommit":
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": name, "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition(topic, 0, first)], asynchronous=False)  # coordinator found
        for i in range(n):
            t0 = time.perf_counter()
            c.commit(offsets=[TopicPartition(topic, 0, first + 1 + i)], asynchronous=False)
            xs.append((time.perf_counter() - t0) * 1000)
        c.close()
    elif kind == "admin":
        from confluent_kafka import ConsumerGroupTopicPartitions
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": bootstrap})

        def alter(off):
            for f in admin.alter_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(name, [TopicPartition(topic, 0, off)])]).values():
                f.result(30)
        alter(first)
        for i in range(n):
            t0 = time.perf_counter()
            alter(first + 1 + i)
            xs.append((time.perf_counter() - t0) * 1000)
    elif kind == "txn":
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": name, "acks": "all", "linger.ms": 0})
        p.init_transactions(60)
        for i in range(n + 1):  # the first one warms up
            p.begin_transaction()
            t0 = time.perf_counter()
            p.produce(topic, f"t{first + i}".encode(), partition=0)
            if p.flush(60) != 0:
                raise RuntimeError("a transactional send was not acknowledged")
            t1 = time.perf_counter()
            p.commit_transaction(60)
            t2 = time.perf_counter()
            if i:
                xs.append([(t1 - t0) * 1000, (t2 - t1) * 1000])
    print(json.dumps(xs))


def groups(bed, src, dst, a) -> None:
    from bench import SG
    from kafkabed import wait_until
    topic = "gc"
    src.create_topic(topic, partitions=1)
    dst.create_topic(topic, partitions=1)
    bed.start_testmirror("tm-gc", src, dst, [topic])
    mirror = {"name": "dr", "bootstrap": dst.bootstrap, "offsets": "preserved", "progress": "poll",
              "poll_interval_ms": 5, "sync_topics": [topic], "sync_groups": ["bench-sync"]}
    sg = SG(bed, "sg-groups", src, mirrors=[mirror])
    sg.wait_sync("dr", topic)
    want = a.rounds * (a.commits + 1) + 1
    src.produce(topic, want)
    wait_until(lambda: dst.high_watermark(topic, 0) >= want, timeout=120, what="the mirror has the records")
    time.sleep(1.5)  # the gate's progress round sees the end
    targets = {"direct": ("offsetcommit", src.bootstrap, "bench-direct"),
               "ungated": ("offsetcommit", sg.bootstrap, "bench-async"),
               "sync": ("offsetcommit", sg.bootstrap, "bench-sync"),
               "dest-admin": ("admin", dst.bootstrap, "bench-admin")}
    runs = {t: [] for t in targets}
    stored0 = sg.metric('syncgate_group_commits_total{outcome="stored"}')
    for r in range(a.rounds):
        for t in rotate(list(targets), r):
            kind, boot, group = targets[t]
            xs = probe(kind, boot, group, topic, a.commits, r * (a.commits + 1))
            runs[t].append(xs)
            log(f"  round {r + 1} {t}: p50 {pct(xs, 50):.2f} p99 {pct(xs, 99):.2f} ms, load {loadavg()}")
    stored = sg.metric('syncgate_group_commits_total{outcome="stored"}') - stored0
    h = sg.histogram("syncgate_group_commit_hold_seconds", 1000)
    report(f"OffsetCommit latency (librdkafka commit(asynchronous=False), one partition), "
           f"{a.rounds} alternating rounds x {a.commits} commits, ms:", runs)
    print(f"  sync syncgate: {stored:.0f} commits stored on the destination"
          + (f"; syncgate_group_commit_hold_seconds mean {h['sum'] / h['count']:.2f} ms over {h['count']:.0f}"
             if h["count"] else ""))


# -- transactions -----------------------------------------------------------------------

# test_txn_commit.py's TxnMirror commits its destination transaction when its
# position passes the source's marker, which merges transactions polled
# together; this one also commits at every gap between two records (a marker
# between them), so back-to-back transactions keep their offsets.
MIRROR = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

/* Copies partition 0 of topic a[2] from a[0] to a[1] (read_uncommitted), one
 * destination transaction per source transaction, markers at their offsets. */
public class BenchTxnMirror {
    public static void main(String[] a) throws Exception {
        Properties c = new Properties();
        c.put("bootstrap.servers", a[0]);
        c.put("group.id", "benchmirror-" + a[2]);
        c.put("enable.auto.commit", "false");
        c.put("isolation.level", "read_uncommitted");
        c.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        c.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        Properties p = new Properties();
        p.put("bootstrap.servers", a[1]);
        p.put("transactional.id", "benchmirror-" + a[2]);
        p.put("linger.ms", "0");
        p.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        TopicPartition tp = new TopicPartition(a[2], 0);
        try (KafkaConsumer<byte[], byte[]> con = new KafkaConsumer<>(c);
             KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p)) {
            pr.initTransactions();
            con.assign(List.of(tp));
            con.seekToBeginning(List.of(tp));
            long next = 0;
            boolean open = false;
            while (true) {
                for (ConsumerRecord<byte[], byte[]> r : con.poll(Duration.ofMillis(5))) {
                    if (open && r.offset() > next) { pr.commitTransaction(); open = false; }
                    if (!open) { pr.beginTransaction(); open = true; }
                    pr.send(new ProducerRecord<>(a[2], 0, r.timestamp(), r.key(), r.value(), r.headers()));
                    next = r.offset() + 1;
                }
                if (open) {
                    pr.flush();
                    if (con.position(tp) > next) { pr.commitTransaction(); open = false; next = con.position(tp); }
                } else {
                    next = Math.max(next, con.position(tp));
                }
            }
        }
    }
}
"""


def txn_mirror(bed, src, dst, topic):
    from bench import KAFKA_LIBS
    from sgfixture import compile_java
    out = os.path.join(bed.run_dir, "txnbench")
    os.makedirs(out, exist_ok=True)
    compile_java(out, "BenchTxnMirror.java", MIRROR)
    return bed.spawn("txnmirror", ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                   "-Dlog4j2.level=WARN", "-cp", out + os.pathsep + os.path.join(KAFKA_LIBS, "*"),
                                   "BenchTxnMirror", src.bootstrap, dst.bootstrap, topic])


def transactions(bed, src, dst, a) -> None:
    from bench import SG
    topic = "tx"
    src.create_topic(topic, partitions=1)
    dst.create_topic(topic, partitions=1)
    txn_mirror(bed, src, dst, topic)
    mirror = {"name": "dr", "bootstrap": dst.bootstrap, "offsets": "preserved", "progress": "poll",
              "poll_interval_ms": 5, "sync_topics": [topic]}
    sgs = {m: SG(bed, f"sg-tx-{m}", src, mirrors=[mirror], gate={"transactions": m})
           for m in ("data", "commit", "both")}
    for sg in sgs.values():
        sg.wait_sync("dr", topic)
    boots = {"direct": src.bootstrap, **{m: sg.bootstrap for m, sg in sgs.items()}}
    commits = {t: [] for t in boots}
    sends = {t: [] for t in boots}
    for r in range(a.rounds):
        for t in rotate(list(boots), r):
            xs = probe("txn", boots[t], f"bench-tx-{t}", topic, a.txns, r * 1000)
            sends[t].append([x[0] for x in xs])
            commits[t].append([x[1] for x in xs])
            log(f"  round {r + 1} {t}: commit p50 {pct(commits[t][-1], 50):.2f} p99 {pct(commits[t][-1], 99):.2f},"
                f" send p50 {pct(sends[t][-1], 50):.2f} ms, load {loadavg()}")
    report(f"commit_transaction() latency (librdkafka, one record per transaction), "
           f"{a.rounds} alternating rounds x {a.txns} transactions, ms:", commits)
    report("the transaction's send (produce + flush: the data ack), same transactions, ms:", sends)
    for m, sg in sgs.items():
        h = sg.histogram("syncgate_txn_commit_hold_seconds", 1000)
        print(f"  {m} syncgate: commits held {h['count']:.0f}"
              + (f", syncgate_txn_commit_hold_seconds mean {h['sum'] / h['count']:.2f} ms" if h["count"] else "")
              + f", timeouts {sg.metric('syncgate_txn_commit_timeouts_total'):.0f}")
    print(f"  destination end offset {dst.high_watermark(topic, 0)}, source {src.high_watermark(topic, 0)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--commits", type=int, default=200, help="OffsetCommits per target and round (default 200)")
    ap.add_argument("--txns", type=int, default=60, help="transactions per target and round (default 60)")
    ap.add_argument("--only", default="groups,transactions")
    ap.add_argument("--probe", nargs=6, help=argparse.SUPPRESS)  # the client side, in the venv
    a = ap.parse_args()
    if a.probe:
        k, b, name, topic, n, first = a.probe
        return run_probe(k, b, name, topic, int(n), int(first))
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
    from kafkabed import KafkaBed
    if not os.path.exists(CLIENT_PY):
        sys.exit(f"commits.py: no {CLIENT_PY}: run tests/clients/install.sh confluent-kafka")
    only = set(a.only.split(","))
    log(f"start: {os.cpu_count()} cores, load average {loadavg()}")
    bed = KafkaBed()
    try:
        src = bed.start_cluster("commits-src")
        dst = bed.start_cluster("commits-dst")
        if "groups" in only:
            groups(bed, src, dst, a)
        if "transactions" in only:
            transactions(bed, src, dst, a)
        log(f"end: load average {loadavg()}")
    finally:
        bed.stop_all(clean=True)


if __name__ == "__main__":
    main()
