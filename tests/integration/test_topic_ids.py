"""A sidecar decides on what it learnt from its own broker (docs/architecture.md,
"What each sidecar learns from its own broker"): consumers whose Metadata went
through another sidecar (or through none since this one restarted) fetch by
TopicId only (Fetch v13+); the sidecar looks the ids up with its broker
ahead of the Fetch, so an ungated topic is never withheld and a gated one is
clamped to the mirrored high watermark — at once, not after the client's
next metadata refresh (Java's default: 5 minutes).

Java kafka-clients 4.3.1 consumers (Fetch v17) against real Kafka 4.3.1:
two sidecars in front of one broker; one sidecar per broker with fetch from
follower (KIP-392); a sidecar restarted while consumers run; a topic deleted
and recreated (new TopicId) while a consumer reads through another sidecar."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time

import pytest

from kafkabed import wait_until
from sgfixture import KAFKA_LIBS, compile_java, free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture
from test_consumer_clamp import progress
from sghelpers import wait_sync

pytestmark = pytest.mark.kafka

# Assigns the given "topic:partition"s from the beginning and prints
# "REC <epoch ms> <topic> <offset> <value>" for every record until `expect`
# records or `total_ms`; extra consumer properties as "k=v" arguments.
# metadata.max.age.ms stays Java's default (5 minutes) unless given.
TID_JAVA = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class TidConsumer {
    public static void main(String[] a) throws Exception {
        Properties c = new Properties();
        c.put("bootstrap.servers", a[0]);
        long totalMs = Long.parseLong(a[1]);
        int expect = Integer.parseInt(a[2]);
        List<TopicPartition> tps = new ArrayList<>();
        for (String t : a[3].split(",")) {
            int i = t.lastIndexOf(':');
            tps.add(new TopicPartition(t.substring(0, i), Integer.parseInt(t.substring(i + 1))));
        }
        c.put("client.id", "tid-java");
        c.put("fetch.max.wait.ms", "500");
        c.put("auto.offset.reset", "earliest");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        for (int i = 4; i < a.length; i++) {
            int e = a[i].indexOf('=');
            c.put(a[i].substring(0, e), a[i].substring(e + 1));
        }
        try (KafkaConsumer<String, String> k = new KafkaConsumer<>(c)) {
            k.assign(tps);
            k.seekToBeginning(tps);
            System.out.println("START " + System.currentTimeMillis());
            System.out.flush();
            long end = System.currentTimeMillis() + totalMs;
            int n = 0;
            while (n < expect && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : k.poll(Duration.ofMillis(200))) {
                    System.out.println("REC " + System.currentTimeMillis() + " " + r.topic() + " "
                                       + r.offset() + " " + r.value());
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
def tid_classes(tmp_path_factory):
    return compile_java(str(tmp_path_factory.mktemp("tidconsumer")), "TidConsumer.java", TID_JAVA)


class TidRun:
    """A TidConsumer in the background; .recs: [(epoch s, topic, offset, value)] so far."""

    def __init__(self, classes: str, bootstrap: str, parts: list[str], expect: int, total_ms: int,
                 *props: str):
        self.proc = subprocess.Popen(
            ["java", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-cp", classes + os.pathsep + os.path.join(KAFKA_LIBS, "*"), "TidConsumer",
             bootstrap, str(total_ms), str(expect), ",".join(parts), *props],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.recs: list[tuple[float, str, int, str]] = []
        self.started: float | None = None
        self.err = ""
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()
        self._te = threading.Thread(target=self._read_err, daemon=True)
        self._te.start()

    def _read(self):
        for line in self.proc.stdout:
            f = line.rstrip("\n").split(" ", 4)
            if f[0] == "START":
                self.started = int(f[1]) / 1000
            elif f[0] == "REC":
                self.recs.append((int(f[1]) / 1000, f[2], int(f[3]), f[4]))

    def _read_err(self):
        for line in self.proc.stderr:
            self.err += line

    def of(self, topic: str) -> list[int]:
        return [o for _, t, o, _ in self.recs if t == topic]

    def wait(self, timeout: float = 120) -> None:
        try:
            self.proc.wait(timeout=timeout)
        finally:
            self.kill()
        self._t.join(5)
        assert self.proc.returncode == 0, self.err[-3000:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def two_sidecars(source, dest, make_syncgate, g: str):
    """Sidecar A (mirror dr, `g` SYNC) and B (no mirror) in front of the one
    broker, both advertising node 1 as A: a client bootstrapping at B sends
    Metadata through B and everything else through A."""
    node = source.broker_ids[0]
    pa = free_port()
    adv = {"nodes": {node: f"127.0.0.1:{pa}"}}
    a = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [g])], name=f"sg-a-{g[-6:]}",
                      extra={"listen": {"kafka": f"127.0.0.1:{pa}"}}, advertise=adv)
    wait_sync(a, "dr", g)
    b = make_syncgate(source, advertise=adv, name=f"sg-b-{g[-6:]}")
    return a, b


def gated_and_ungated(source, dest, make_testmirror, topic_name):
    """G gated and mirrored: 20 records, 10 of them on the destination (the
    mirror paused after 10); U not gated by any mirror: 20 records."""
    g, u = f"{topic_name}-G", f"{topic_name}-U"
    source.create_topic(g, partitions=1)
    dest.create_topic(g, partitions=1)
    source.create_topic(u, partitions=1)
    mirror = make_testmirror([g])
    return g, u, mirror


def fill(source, dest, sg, mirror, g, u):
    source.produce(g, 10, partition=0, values=[f"g{i}" for i in range(10)])
    source.produce(u, 20, partition=0, values=[f"u{i}" for i in range(20)])
    wait_until(lambda: dest.high_watermark(g, 0) == 10, timeout=30, what="10 of G mirrored")
    wait_until(lambda: progress(sg, "dr", g) == 10, timeout=30, what="progress 10 known")
    mirror.pause()
    source.produce(g, 10, partition=0, values=[f"g{i}" for i in range(10, 20)], acks=1,
                   enable_idempotence=False)
    assert source.high_watermark(g, 0) == 20 and dest.high_watermark(g, 0) == 10


@contextlib.contextmanager
def paused_scene(tid_classes, make_syncgate, make_testmirror, source, dest, topic_name, total_ms=90000):
    """The scene of the tests below: G gated and U not (gated_and_ungated),
    sidecars A and B (two_sidecars), filled with the mirror paused after 10
    of G (fill), and a TidConsumer bootstrapping at B that reads U:0 and G:0
    for up to `total_ms`. Yields (g, u, mirror, a, run); on the way out the
    mirror resumes and the consumer is stopped."""
    g, u, mirror = gated_and_ungated(source, dest, make_testmirror, topic_name)
    a, b = two_sidecars(source, dest, make_syncgate, g)
    run = None
    try:
        fill(source, dest, a, mirror, g, u)
        run = TidRun(tid_classes, b.bootstrap, [f"{u}:0", f"{g}:0"], 1000, total_ms)
        yield g, u, mirror, a, run
    finally:
        mirror.resume()
        if run:
            run.kill()


def test_consumer_metadata_through_another_sidecar(tid_classes, make_syncgate, make_testmirror,
                                                    source, dest, topic_name):
    """The input of the report: a Java 4.3.1 consumer bootstraps at B and
    fetches U and G (Fetch v17, TopicIds only) through A, which never saw
    their Metadata. All of U at once, G up to the mirrored HW at once."""
    with paused_scene(tid_classes, make_syncgate, make_testmirror, source, dest, topic_name,
                      total_ms=60000) as (g, u, mirror, a, run):
        wait_until(lambda: len(run.of(u)) == 20 and len(run.of(g)) == 10, timeout=20,
                   what=f"all of U and G up to the mirrored HW (got U {len(run.of(u))}, "
                        f"G {len(run.of(g))})")
        t_all = max(t for t, *_ in run.recs) - run.started
        time.sleep(2)  # nothing past the mirrored HW comes while the mirror is paused
        assert run.of(u) == list(range(20))
        assert run.of(g) == list(range(10)), run.of(g)
        print(f"\nU 20/20 and G 10/10 (the mirrored HW) {t_all:.2f} s after the consumer started; "
              f"A looked ids up {a.metric('syncgate_topic_id_lookups_total'):.0f} time(s), "
              f"withheld {a.metric('syncgate_consumer_records_withheld_total'):.0f} records")
        assert a.metric("syncgate_topic_id_lookups_total") >= 1
        assert a.metric("syncgate_topic_id_unresolved_total") == 0
        mirror.resume()
        wait_until(lambda: len(run.of(g)) == 20, timeout=30, what="the rest of G once mirrored")
        assert run.of(g) == list(range(20))
    # A never answered a Metadata request of this consumer: it asked its broker
    assert "topic_ids_learn" in a.log()


def test_sidecar_restarted_consumer_continues(tid_classes, make_syncgate, make_testmirror, source, dest,
                                              topic_name):
    """A sidecar restarted while a consumer reads through it (its Metadata
    through the other sidecar): once the restarted one has read its state
    log, the consumer gets new records of U at once and G up to the mirrored
    HW — no wait for a metadata refresh."""
    with paused_scene(tid_classes, make_syncgate, make_testmirror, source, dest,
                      topic_name) as (g, u, mirror, a, run):
        wait_until(lambda: len(run.of(u)) == 20 and len(run.of(g)) == 10, timeout=20,
                   what="the first records")
        a.stop()
        a.start()
        wait_until(lambda: a.http("/readyz")[0] == 200, timeout=60, what="A ready again")
        ready = time.time()
        source.produce(u, 10, partition=0, values=[f"u{i}" for i in range(20, 30)])
        wait_until(lambda: len(run.of(u)) == 30, timeout=15,
                   what=f"U's new records through the restarted sidecar (got {len(run.of(u))})")
        got_u = max(t for t, tp, o, _ in run.recs if tp == u) - ready
        assert run.of(u) == list(range(30))
        assert run.of(g) == list(range(10)), "nothing past the mirrored HW"
        mirror.resume()
        wait_until(lambda: len(run.of(g)) == 20, timeout=30, what="G once mirrored")
        print(f"\nafter the restart: U's 10 new records {got_u:.2f} s after A was ready")


def test_topic_recreated_consumer_through_another_sidecar(tid_classes, make_syncgate, make_testmirror,
                                                          source, dest, topic_name):
    """U deleted and recreated under the same name (a new TopicId) while a
    consumer (Metadata through B) reads it through A: A attributes none of
    the old topic's records to the new one and withholds nothing of it (U is
    not gated); G, gated, stays clamped throughout."""
    with paused_scene(tid_classes, make_syncgate, make_testmirror, source, dest,
                      topic_name) as (g, u, mirror, a, run):
        wait_until(lambda: len(run.of(u)) == 20, timeout=20, what="old U")
        source.delete_topic(u)
        wait_until(lambda: u not in source.topics(), timeout=30, what="U deleted")
        source.create_topic(u, partitions=1)
        source.produce(u, 5, partition=0, values=[f"new{i}" for i in range(5)])
        recreated = time.time()
        wait_until(lambda: any(v.startswith("new") for _, tp, _, v in run.recs if tp == u), timeout=60,
                   what="the recreated U's records")
        wait_until(lambda: sum(1 for _, tp, _, v in run.recs if tp == u and v.startswith("new")) == 5,
                   timeout=15, what="all 5 records of the new U")
        new = [(o, v) for t, tp, o, v in run.recs if tp == u and t >= recreated - 0.05]
        assert new == [(i, f"new{i}") for i in range(5)], new
        old = [(o, v) for _, tp, o, v in run.recs if tp == u and not v.startswith("new")]
        assert old == [(i, f"u{i}") for i in range(20)], "an old record after the recreation"
        assert run.of(g) == list(range(10)), "G stays clamped to the mirrored HW"
        print(f"\nnew U's 5 records {max(t for t, tp, *_ in run.recs if tp == u) - recreated:.2f} s "
              f"after they were produced")


@pytest.fixture(scope="module")
def racks(bed):
    """A controller and three brokers in racks r1..r3 serving fetch from
    follower (KIP-392), shared by this module's tests."""
    c = bed.start_cluster("tid-racks", brokers=3,
                          props={"replica.selector.class":
                                 "org.apache.kafka.common.replica.RackAwareReplicaSelector"},
                          node_props={i: {"broker.rack": f"r{i}"} for i in (1, 2, 3)})
    yield c
    c.stop(fast=True)


def test_fetch_from_follower_one_sidecar_per_broker(tid_classes, make_syncgate, make_testmirror, racks,
                                                    dest, topic_name):
    """KIP-392 through one sidecar per broker: a Java consumer in a
    follower's rack bootstraps at the leader's sidecar and is sent to the
    follower (PreferredReadReplica); the follower's sidecar, which answered
    none of its Metadata, gives it everything of U and G up to the mirrored
    HW."""
    g, u = f"{topic_name}-G", f"{topic_name}-U"
    racks.create_topic(g, partitions=1, rf=3)
    racks.create_topic(u, partitions=1, rf=3)
    dest.create_topic(g, partitions=1)
    mirror = make_testmirror([g], source=racks)
    ports = {i: free_port() for i in racks.broker_ids}
    nodes = {i: f"127.0.0.1:{p}" for i, p in ports.items()}
    sgs = {i: make_syncgate(racks, broker_id=i, advertise={"nodes": nodes},
                            mirrors=[mirror_conf("dr", dest, [g])], name=f"sg-r{i}-{g[-6:]}",
                            extra={"listen": {"kafka": nodes[i]}})
           for i in racks.broker_ids}
    for sg in sgs.values():
        wait_sync(sg, "dr", g)
    leader = racks.partitions(g)[0]["leader"]
    follower = next(i for i in racks.broker_ids if i != leader)
    try:
        n = 100
        racks.produce(g, n, partition=0, values=[f"g{i}" for i in range(n)])
        racks.produce(u, n, partition=0, values=[f"u{i}" for i in range(n)])
        wait_until(lambda: dest.high_watermark(g, 0) == n, timeout=30, what="G mirrored")
        for sg in sgs.values():
            wait_until(lambda sg=sg: progress(sg, "dr", g) == n, timeout=30, what="progress known")
        mirror.pause()
        racks.produce(g, n, partition=0, values=[f"g{i}" for i in range(n, 2 * n)], acks=1,
                      enable_idempotence=False)
        fol = sgs[follower]
        f0 = fol.metric("syncgate_consumer_fetch_requests_total")
        run = TidRun(tid_classes, sgs[leader].bootstrap, [f"{u}:0", f"{g}:0"], 3 * n, 30000,
                     f"client.rack=r{follower}")
        wait_until(lambda: len(run.of(u)) == n and len(run.of(g)) == n, timeout=30,
                   what=f"U and G up to the mirrored HW from the follower's sidecar "
                        f"(got U {len(run.of(u))}, G {len(run.of(g))})")
        time.sleep(2)
        assert run.of(u) == list(range(n))
        assert run.of(g) == list(range(n)), "G clamped to the mirrored HW"
        fetched = fol.metric("syncgate_consumer_fetch_requests_total") - f0
        print(f"\nfollower {follower}'s sidecar: {fetched:.0f} consumer fetches, "
              f"{fol.metric('syncgate_topic_id_lookups_total'):.0f} lookups, "
              f"{fol.metric('syncgate_consumer_records_withheld_total'):.0f} records withheld")
        assert fetched > 0, "the consumer fetched from the follower's sidecar"
        assert fol.metric("syncgate_topic_id_lookups_total") >= 1
        assert fol.metric("syncgate_consumer_records_withheld_total") > 0
        mirror.resume()
        wait_until(lambda: len(run.of(g)) == 2 * n, timeout=30, what="G once mirrored")
    finally:
        mirror.resume()


def test_fence_refuses_produce_v13_naming_an_id_the_sidecar_never_saw(bed, make_syncgate, make_testmirror,
                                                                       source, dest, topic_name):
    """A failover fence on topic T, and a Produce v13 naming T by a TopicId
    this sidecar never saw in a Metadata answer: refused (NOT_ENOUGH_REPLICAS,
    retriable) while it asks its broker — the old source appends nothing —
    and the retry is refused by name as fenced."""
    from rawkafka import RawClient
    from test_failover import NOT_ENOUGH_REPLICAS, sidecar
    from sghelpers import call
    source.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    make_testmirror([topic_name])
    sg = sidecar(bed, make_syncgate, source, dest, topic_name)
    host, port = source.brokers[source.broker_ids[0]].rsplit(":", 1)
    direct = RawClient(host, int(port))
    try:  # the client learnt the id elsewhere (another sidecar; here the broker itself)
        _, topics = direct.metadata([topic_name])
    finally:
        direct.close()
    tid = topics[topic_name][0]
    status, body = call(sg, "/v1/fence", {"mirror": "dr", "topics": topic_name, "fence": True})
    assert status == 200 and body["topics"][0]["result"] == "FENCED", body
    hw = source.high_watermark(topic_name, 0)
    c = RawClient("127.0.0.1", sg.port)
    try:
        (p1,) = c.produce(topic_name, 0, [b"after-fence-1"], version=13, topic_id=tid,
                          timeout_ms=5000).topics[tid.hex()]
        (p2,) = c.produce(topic_name, 0, [b"after-fence-2"], version=13, topic_id=tid,
                          timeout_ms=5000).topics[tid.hex()]
    finally:
        c.close()
    assert p1.error_code == NOT_ENOUGH_REPLICAS, p1
    assert p2.error_code == NOT_ENOUGH_REPLICAS and "fenced" in (p2.error_message or ""), p2
    assert source.high_watermark(topic_name, 0) == hw, "a fenced topic got records through an unknown id"
    assert sg.metric('syncgate_topic_id_unresolved_total{api="Produce",decision="failed"') >= 1
    assert "topic_id_unresolved" in sg.log()
    status, body = call(sg, "/v1/fence", {"mirror": "dr", "topics": topic_name, "fence": False})
    assert status == 200, body


def test_gated_topic_recreated_new_records_wait_for_the_mirror(tid_classes, make_syncgate, make_testmirror,
                                                               source, dest, topic_name):
    """G (gated) deleted and recreated on the source (a new TopicId) while a
    consumer (Metadata through B) reads it through A and the mirror is
    paused: the destination still holds the old topic's records, so none of
    the new topic's records may be shown as mirrored — the old topic's
    progress is not attributed to the new one (the consumer's offset reset,
    ListOffsets, is answered clamped too)."""
    with paused_scene(tid_classes, make_syncgate, make_testmirror, source, dest,
                      topic_name) as (g, u, mirror, a, run):
        wait_until(lambda: len(run.of(g)) == 10, timeout=20, what="old G up to the mirrored HW")
        source.delete_topic(g)
        wait_until(lambda: g not in source.topics(), timeout=30, what="G deleted")
        source.create_topic(g, partitions=1)
        source.produce(g, 3, partition=0, values=[f"newg{i}" for i in range(3)], acks=1,
                       enable_idempotence=False)
        # the consumer finds the new topic (UNKNOWN_TOPIC_ID, metadata, offset
        # reset); the destination still holds the old topic's records at the
        # same offsets, so nothing of the new one counts as mirrored
        time.sleep(10)
        new = [(o, v) for _, tp, o, v in run.recs if tp == g and v.startswith("newg")]
        assert new == [], f"records of the recreated G shown before any mirror copied them: {new}"
        assert run.of(g) == list(range(10)), "only the old G's mirrored records"
