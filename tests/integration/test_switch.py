"""The switch against real Apache Kafka: after `syncgate-ctl failover
--switch`, the same sidecar addresses serve the destination cluster, and no
client is reconfigured or restarted.

* Under load (a Java idempotent producer through the sidecar the whole
  time), with the offset-preserving test mirror: every acknowledged record is
  on the destination exactly once and in send order per partition, records
  sent after the switch are acknowledged by the destination, nothing new
  reaches the source, the producer only saw retriable errors, and it only
  ever connected to sidecar addresses.
* Refusals: a switch before a failover (topics still gated) is refused and
  changes nothing; --dry-run prints the plan and changes nothing.
* A sidecar restarted after the switch replays it from the state log and
  serves the destination before it accepts a client."""

from __future__ import annotations

import collections
import json
import threading
import os
import subprocess
import time
import uuid

import pytest

from kafkabed import wait_until
from rawkafka import RawClient
from sgfixture import KAFKA_LIBS, compile_java, free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl, describe, lifecycle_extra, wait_state, write_token
from test_failover import FAILOVER_LOAD_JAVA

pytestmark = pytest.mark.kafka

# exceptions an idempotent Java producer may report while the fence stands and
# the clients move: all retriable (nothing was appended by them)
RETRIABLE = {"org.apache.kafka.common.errors.NotEnoughReplicasException",
             "org.apache.kafka.common.errors.TimeoutException",
             "org.apache.kafka.common.errors.NetworkException",
             "org.apache.kafka.common.errors.NotLeaderOrFollowerException"}


@pytest.fixture(scope="module")
def load_classes(tmp_path_factory):
    return compile_java(str(tmp_path_factory.mktemp("switchload")), "FailoverLoad.java", FAILOVER_LOAD_JAVA)


def switch_base(dest) -> int:
    """A switch.base_port whose listeners for every destination node id are free ports."""
    for _ in range(50):
        base = free_port() - max(dest.broker_ids)
        if base > 1024 and all(free_port_is(base + i) for i in dest.broker_ids):
            return base
    raise AssertionError("no free port range for switch.base_port")


def free_port_is(port: int) -> bool:
    import socket
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def switch_sidecar(bed, make_syncgate, source, dest, topic, state_topic=None):
    st = state_topic or f"__sg_state_{uuid.uuid4().hex[:8]}"
    token = write_token(bed)
    extra = lifecycle_extra(st, token)
    extra["switch"] = {"base_port": switch_base(dest), "host": "127.0.0.1"}
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic])], extra=extra)
    sg.token_file = token
    wait_until(lambda: describe(sg).get("state_ready"), timeout=30, what="the state log is read")
    wait_state(sg, "dr", topic, effective="SYNC", timeout=120)
    return sg


def java_peers(pid: int) -> set[int]:
    """Remote ports of the TCP connections process `pid` has open now."""
    out = subprocess.run(["ss", "-tnpH"], capture_output=True, text=True).stdout
    ports = set()
    for line in out.splitlines():
        if f"pid={pid}," in line:
            peer = line.split()[4]
            ports.add(int(peer.rsplit(":", 1)[1]))
    return ports


@pytest.mark.parametrize("recovery", ["rebootstrap", "none"])
def test_failover_switch_under_load_serves_the_destination(bed, load_classes, make_syncgate, make_testmirror,
                                                           source, dest, topic_name, recovery):
    """metadata.recovery.strategy: `rebootstrap` (Java 4.x's default) and
    `none`: after the switch both see the destination's cluster id, which
    neither refuses."""
    partitions = 2
    topic = topic_name
    source.create_topic(topic, partitions=partitions)
    dest.create_topic(topic, partitions=partitions)
    make_testmirror([topic])
    sg = switch_sidecar(bed, make_syncgate, source, dest, topic)
    sidecar_ports = {sg.port} | {sg.config["switch"]["base_port"] + i for i in dest.broker_ids}
    broker_ports = {int(a.rsplit(":", 1)[1]) for a in list(source.brokers.values()) + list(dest.brokers.values())}
    out_path = os.path.join(bed.run_dir, f"switchload-{uuid.uuid4().hex[:6]}.out")
    out_file = open(out_path, "w+")  # a file, not a pipe: the load prints everything at its end
    load = subprocess.Popen(
        ["java", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
         "-cp", load_classes + os.pathsep + os.path.join(KAFKA_LIBS, "*"), "FailoverLoad",
         sg.bootstrap, topic, "22000", "5", "s", f"metadata.recovery.strategy={recovery}"],
        stdout=out_file, stderr=subprocess.STDOUT, text=True)
    peers: set[int] = set()
    try:
        wait_until(lambda: sum(source.high_watermark(topic, p) for p in range(partitions)) >= 200, timeout=60,
                   what="the producer is writing through the sidecar")
        peers |= java_peers(load.pid)
        rc, out, err = ctl(sg, "failover", "--mirror", "dr", "--topics", topic, "--timeout-ms", "20000",
                           "--switch", timeout=200)
        switched_ms = time.time() * 1000
        hw_at_switch = [source.high_watermark(topic, p) for p in range(partitions)]
        deadline = time.monotonic() + 90
        while load.poll() is None and time.monotonic() < deadline:
            peers |= java_peers(load.pid)
            time.sleep(0.5)
    finally:
        if load.poll() is None:
            load.kill()
        load.wait()
        out_file.seek(0)
        out_load = err_load = out_file.read()
        out_file.close()
    assert rc == 0, (out, err)
    assert "zero RPO" in out and "SWITCHED" in out, out
    assert describe(sg)["serving"] == "dr"
    assert sg.metric("syncgate_switch_serving_destination") == 1
    assert sg.metric("syncgate_switch_connections_closed_total") >= 1

    lines = out_load.splitlines()
    assert lines and lines[-1].startswith("DONE "), err_load[-2000:]
    acks = [ln.split(" ", 4) for ln in lines if ln.startswith("ACK ")]
    errs = [ln.split(" ", 4) for ln in lines if ln.startswith("ERR ")]
    after = [a for a in acks if int(a[3]) > switched_ms]
    assert after, f"no record acknowledged after the switch ({len(acks)} acks, {len(errs)} errors)"
    assert {e[3] for e in errs} <= RETRIABLE, sorted({e[3] for e in errs})
    # nothing reached the source after the failover: every new record went to the destination
    assert [source.high_watermark(topic, p) for p in range(partitions)] == hw_at_switch
    # every acknowledged record is on the destination, at its acknowledged offset, once
    dst = {p: {r.offset: r.value for r in dest.consume(topic, p)} for p in range(partitions)}
    for _, part, off, _, v in acks:
        assert dst[int(part)].get(int(off)) == v.encode(), (part, off, v)
    for p in range(partitions):
        values = list(dst[p].values())
        assert len(values) == len(set(values)), f"partition {p}: a record is on the destination twice"
        # in send order: the producer's index grows with the destination offset
        idx = [int(v[1:]) for v in values]
        assert idx == sorted(idx), f"partition {p}: out of send order"
    print(f"{len(acks)} acks ({len(after)} after the switch), {len(errs)} retriable errors: "
          f"{sorted({e[3].rsplit('.', 1)[1] for e in errs})}")
    # the client only ever connected to sidecar addresses
    assert peers and peers <= sidecar_ports, (peers, sidecar_ports, peers & broker_ports)


def test_switch_refused_before_failover_and_dry_run_changes_nothing(bed, make_syncgate, make_testmirror, source,
                                                                     dest, topic_name):
    source.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    make_testmirror([topic_name])
    sg = switch_sidecar(bed, make_syncgate, source, dest, topic_name)
    rc, out, err = ctl(sg, "switch", "--mirror", "dr")
    assert rc == 1 and "still gated" in err, (out, err)
    rc, out, err = ctl(sg, "switch", "--mirror", "dr", "--dry-run")
    assert rc == 1 and "would switch now: no" in out, (out, err)
    assert describe(sg)["serving"] == "source"
    c = RawClient("127.0.0.1", sg.port)
    try:
        (p,) = c.produce(topic_name, 0, [b"still-source"], version=9).topics[topic_name]
    finally:
        c.close()
    assert p.error_code == 0 and source.high_watermark(topic_name, 0) == 1
    # after the failover the dry run would go ahead, and still changes nothing
    rc, out, err = ctl(sg, "failover", "--mirror", "dr", "--timeout-ms", "20000", timeout=120)
    assert rc == 0, (out, err)
    rc, doc_out, err = ctl(sg, "--output", "json", "switch", "--mirror", "dr", "--dry-run")
    doc = json.loads(doc_out)
    assert rc == 0 and doc["would_switch"] and doc["dry_run"], doc
    assert [t["result"] for t in doc["topics"]] == ["SWITCHED"], doc
    assert describe(sg)["serving"] == "source"


def test_restarted_sidecar_replays_the_switch(bed, make_syncgate, make_testmirror, source, dest, topic_name):
    source.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    make_testmirror([topic_name])
    sg = switch_sidecar(bed, make_syncgate, source, dest, topic_name)
    rc, out, err = ctl(sg, "failover", "--mirror", "dr", "--timeout-ms", "20000", "--switch", timeout=120)
    assert rc == 0, (out, err)
    sg.stop()
    sg.start(wait=True)
    assert "switch_applied" in sg.log() and "replayed=true" in sg.log().split("switch_applied")[-1][:400]
    assert describe(sg)["serving"] == "dr"
    # ready although no mirror reports any more (their workers stop at the switch)
    wait_until(lambda: sg.http("/readyz")[0] == 200, timeout=30, what="/readyz 200 after the restart")
    c = RawClient("127.0.0.1", sg.port)
    try:
        (p,) = c.produce(topic_name, 0, [b"after-restart"], version=9).topics[topic_name]
    finally:
        c.close()
    assert p.error_code == 0, p
    assert dest.consume(topic_name, 0)[-1].value == b"after-restart"
    assert source.high_watermark(topic_name, 0) == 0


class RdkafkaLoad:
    """A librdkafka producer (idempotent by default) on a thread:
    "<prefix><i>" (key = value) every ~3 ms until stop(); acks as
    (partition, offset, value, acknowledged at ms), errors by name."""

    def __init__(self, bootstrap, topic, prefix, idempotent=True):
        from confluent_kafka import Producer
        self.p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": idempotent, "linger.ms": 2,
                           "acks": "all", "request.timeout.ms": 2000, "message.timeout.ms": 20000,
                           "retries": 1000000})
        self.topic, self.prefix = topic, prefix
        self.acks, self.errs = [], []
        self.halt = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        i = 0
        while not self.halt.is_set():
            v = f"{self.prefix}{i}"

            def cb(err, m, v=v):
                if err:
                    self.errs.append(err.name())
                else:
                    self.acks.append((m.partition(), m.offset(), v, time.time() * 1000))
            try:
                self.p.produce(self.topic, key=v, value=v, on_delivery=cb)
                i += 1
            except BufferError:
                pass
            self.p.poll(0.003)
        self.p.flush(30)

    def stop(self):
        self.halt.set()
        self.t.join(60)


class SwitchedGroupConsumer:
    """A consumer group member on a thread that commits synchronously every
    `every` records and, like any consumer written for rebalances, carries on
    when a commit fails (the switch moves the group to the destination's
    coordinator, which does not know the member: UNKNOWN_MEMBER_ID once, then
    the member rejoins there). With `dest`, each committed offset is noted
    with the destination's end right after the commit: (partition, offset,
    end)."""

    def __init__(self, bootstrap, group, topic, every=20, dest=None):
        from confluent_kafka import Consumer
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                           "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50})
        self.c.subscribe([topic])
        self.wm = Consumer({"bootstrap.servers": dest.bootstrap, "group.id": "switch-watermarks"}) if dest else None
        self.topic, self.every, self.seen, self.commits, self.commit_errors = topic, every, [], [], []
        self.halt = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        from confluent_kafka import KafkaException, TopicPartition
        n = 0
        while not self.halt.is_set():
            m = self.c.poll(0.1)
            if m is None or m.error():
                continue
            self.seen.append((m.partition(), m.offset(), m.value().decode()))
            n += 1
            if n % self.every:
                continue
            try:
                for tp in self.c.commit(asynchronous=False) or []:
                    if self.wm and tp.offset >= 0:
                        end = self.wm.get_watermark_offsets(TopicPartition(self.topic, tp.partition), timeout=10,
                                                            cached=False)[1]
                        self.commits.append((tp.partition, tp.offset, end))
            except KafkaException as e:
                self.commit_errors.append(e.args[0].name())

    def stop(self):
        self.halt.set()
        self.t.join(15)
        self.c.close()
        if self.wm:
            self.wm.close()


def test_switch_three_sidecars_to_a_destination_with_other_node_ids(bed, load_classes, make_cluster,
                                                                    make_syncgate, make_testmirror, topic_name):
    """The production shape: a 3-broker source with one sidecar per broker, a
    3-broker destination numbered 11..13 (node ids the source has not). A
    Java and a librdkafka idempotent producer and a consumer group run
    through the sidecars the whole time; nobody is reconfigured."""
    partitions, topic = 3, topic_name
    src = make_cluster("swsrc", brokers=3)
    dst = make_cluster("swdst", brokers=3, first_id=11)
    assert set(dst.broker_ids) == {11, 12, 13}
    src.create_topic(topic, partitions=partitions, rf=3)
    dst.create_topic(topic, partitions=partitions, rf=3)
    make_testmirror([topic], source=src, dest=dst)
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    nodes = {i: f"127.0.0.1:{free_port()}" for i in src.broker_ids}
    sgs = []
    for i in src.broker_ids:  # one at a time: the first creates the state log
        extra = {**lifecycle_extra(st, tok), "listen": {"kafka": nodes[i]},
                 "switch": {"base_port": switch_base(dst), "host": "127.0.0.1"}}
        sg = make_syncgate(src, mirrors=[mirror_conf("dr", dst, [topic])], broker_id=i,
                           advertise={"nodes": nodes}, name=f"sg-sw{i}-{topic[-6:]}", extra=extra)
        sg.token_file = tok
        sgs.append(sg)
        wait_until(lambda: describe(sg).get("state_ready"), timeout=90, what=f"{sg.name} read the state log")
    for sg in sgs:
        wait_state(sg, "dr", topic, timeout=120, effective="SYNC")
    bootstrap = ",".join(nodes[i] for i in src.broker_ids)
    sidecar_ports = {sg.port for sg in sgs} | {sg.config["switch"]["base_port"] + d for sg in sgs
                                               for d in dst.broker_ids}
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = SwitchedGroupConsumer(bootstrap, group, topic)
    out_path = os.path.join(bed.run_dir, f"switchload-{uuid.uuid4().hex[:6]}.out")
    out_file = open(out_path, "w+")
    java = subprocess.Popen(
        ["java", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
         "-cp", load_classes + os.pathsep + os.path.join(KAFKA_LIBS, "*"), "FailoverLoad",
         bootstrap, topic, "30000", "5", "j"], stdout=out_file, stderr=subprocess.STDOUT, text=True)
    rdk = RdkafkaLoad(bootstrap, topic, "r")
    peers: set[int] = set()
    try:
        wait_until(lambda: sum(src.high_watermark(topic, p) for p in range(partitions)) >= 400, timeout=90,
                   what="the producers write through the sidecars")
        t_switch = time.time() * 1000
        rc, out, err = ctl(sgs[1], "failover", "--mirror", "dr", "--topics", topic, "--timeout-ms", "30000",
                           "--switch", timeout=200)
        switched_ms = time.time() * 1000
        assert rc == 0, (out, err)
        hw_at_switch = [src.high_watermark(topic, p) for p in range(partitions)]
        # every sidecar serves the destination within a second of the record
        wait_until(lambda: all(describe(sg)["serving"] == "dr" for sg in sgs), timeout=5,
                   what="every sidecar applied the switch")
        deadline = time.monotonic() + 120
        while java.poll() is None and time.monotonic() < deadline:
            peers |= java_peers(java.pid)
            time.sleep(0.5)
        rdk.stop()
        ends = [dst.high_watermark(topic, p) for p in range(partitions)]
        wait_until(lambda: all(any(pp == p and o == ends[p] - 1 for pp, o, _ in consumer.seen)
                               for p in range(partitions)), timeout=90,
                   what="the consumer group read the destination to its end")
    finally:
        consumer.stop()
        rdk.stop()
        if java.poll() is None:
            java.kill()
        java.wait()
        out_file.seek(0)
        out_java = out_file.read()
        out_file.close()
    assert [src.high_watermark(topic, p) for p in range(partitions)] == hw_at_switch, "the source took records"
    lines = out_java.splitlines()
    assert lines and lines[-1].startswith("DONE "), out_java[-2000:]
    jacks = [(int(a[1]), int(a[2]), a[4], int(a[3])) for a in (ln.split(" ", 4) for ln in lines if ln.startswith("ACK "))]
    jerrs = [e.split(" ", 4)[3] for e in lines if e.startswith("ERR ")]
    assert {e for e in jerrs} <= RETRIABLE, sorted(set(jerrs))
    for name, acks in (("java", jacks), ("librdkafka", rdk.acks)):
        assert [a for a in acks if a[3] > switched_ms], f"{name}: nothing acknowledged after the switch"
    dstv = {p: {r.offset: r.value for r in dst.consume(topic, p)} for p in range(partitions)}
    for part, off, v, _ in jacks + rdk.acks:
        assert dstv[part].get(off) == v.encode(), (part, off, v)
    acked_before = {v for _, _, v, at in jacks + rdk.acks if at < t_switch}
    stored_twice = 0
    for p in range(partitions):
        values = [v.decode() for v in dstv[p].values()]
        counts = collections.Counter(values)
        twice = {v for v, n in counts.items() if n > 1}
        # Stored twice only when a producer's retry moved to another sidecar
        # after the switch (each sidecar maps a client's producer id to a
        # destination id of its own; docs/switchover.md "Producer state"):
        # never a record acknowledged before the switch, never three times.
        assert all(counts[v] == 2 for v in twice), f"partition {p}: a record stored more than twice"
        assert not twice & acked_before, f"partition {p}: acknowledged before the switch, stored twice"
        stored_twice += len(twice)
        for prefix in ("j", "r"):
            idx = [int(v[1:]) for v in dict.fromkeys(values) if v[0] == prefix]
            assert idx == sorted(idx), f"partition {p}: {prefix} records out of send order"
    seen = {(p, v) for p, _, v in consumer.seen}
    missing = [(p, o) for p in range(partitions) for o, v in dstv[p].items() if (p, v.decode()) not in seen]
    assert not missing, f"the consumer group skipped {len(missing)} records, e.g. {missing[:5]}"
    dups = len(consumer.seen) - len(seen)
    claims = [{u: sg.metric('syncgate_switch_producer_id_claims_total{used="%s"}' % u)
               for u in ("own", "other", "timeout")} for sg in sgs]
    print(f"java {len(jacks)} acks / errors {sorted(set(jerrs))}; librdkafka {len(rdk.acks)} acks / errors "
          f"{sorted({e for _, e in rdk.errs})}; consumer read {dups} records twice, commit errors "
          f"{sorted(set(consumer.commit_errors))}; {stored_twice} records stored twice; producer id claims "
          f"{claims}; switch took "
          f"{switched_ms - t_switch:.0f} ms (failover included)")
    assert peers and peers <= sidecar_ports, (peers, sidecar_ports)


def test_switched_producer_id_colliding_with_a_destination_producer_is_stored(bed, make_syncgate, make_testmirror,
                                                                            source, dest, topic_name):
    """No false ack through the switch: a destination producer owns id 4242
    (sequences 0..9). A switched client whose source-issued id is also 4242
    sends sequence 7 — straight to the destination, the broker would answer
    success at the other producer's offset 7 and store nothing
    (test_switch_measure.py). Through the switched sidecar the batch goes out
    under a producer id the destination issued, and is stored."""
    source.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    make_testmirror([topic_name])
    sg = switch_sidecar(bed, make_syncgate, source, dest, topic_name)
    rc, out, err = ctl(sg, "failover", "--mirror", "dr", "--timeout-ms", "20000", "--switch", timeout=120)
    assert rc == 0, (out, err)
    host, port = dest.bootstrap.rsplit(":", 1)
    pid = 4242
    native = RawClient(host, int(port))
    try:
        for seq in range(10):
            r = native.produce(topic_name, 0, [f"native{seq}".encode()], producer=(pid, 0, seq))
            assert r.topics[topic_name][0].error_code == 0, r.topics
    finally:
        native.close()
    c = RawClient("127.0.0.1", sg.port)
    try:
        r = c.produce(topic_name, 0, [b"switched7"], producer=(pid, 0, 7))
        again = c.produce(topic_name, 0, [b"switched7"], producer=(pid, 0, 7))  # a retry of the same batch
        nxt = c.produce(topic_name, 0, [b"switched8"], producer=(pid, 0, 8))
    finally:
        c.close()
    res, res2, res3 = (x.topics[topic_name][0] for x in (r, again, nxt))
    stored = {rec.offset: rec.value for rec in dest.consume(topic_name, 0)}
    assert res.error_code == 0 and stored.get(res.base_offset) == b"switched7", (res, stored)
    assert res2.error_code == 0 and res2.base_offset == res.base_offset, "the retry was not de-duplicated"
    assert res3.error_code == 0 and stored.get(res3.base_offset) == b"switched8", (res3, stored)
    assert list(stored.values()).count(b"switched7") == 1
    assert stored.get(7) == b"native7"
    assert sg.metric("syncgate_switch_producer_ids_remapped_total") >= 1
