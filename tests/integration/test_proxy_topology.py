"""No bypass with a three-broker source: gateway mode (one syncgate, one
port per broker id) and one sidecar per broker with a leader move
mid-traffic (scenario S4). Java kafka-clients 4.x produce and consume; every
connection of the Java process must land on a syncgate port (checked with
`ss -tnp` while it runs) and no response names a broker. Also S8: a Java
producer whose metadata came through another sidecar (Produce v13 TopicIds
unknown to the one it produces through)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time

import pytest

from kafkabed import wait_until
from rawkafka import RawClient
from sgfixture import KAFKA_LIBS, free_port, make_syncgate, mirror_conf  # noqa: F401
from sghelpers import wait_sync


def free_base_port(n: int) -> int:
    """A base port b with b+1..b+n free on 127.0.0.1."""
    for _ in range(100):
        base = free_port()
        ok = True
        for i in range(1, n + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", base + i))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise AssertionError("no free port range")


class JavaRun:
    """A Kafka Java tool in the background whose TCP peers are sampled with
    `ss -tnp` every 100 ms until it exits."""

    def __init__(self, cls: str, *args: str):
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dlog4j2.level=WARN", "-cp", os.path.join(KAFKA_LIBS, "*"), cls, *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.peers: set[int] = set()
        self._t = threading.Thread(target=self._sample, daemon=True)
        self._t.start()

    def _sample(self):
        pat = re.compile(rf"\S+\s+\d+\s+\d+\s+\S+\s+\S+:(\d+)\s.*pid={self.proc.pid},")
        while self.proc.poll() is None:
            out = subprocess.run(["ss", "-tnpH"], capture_output=True, text=True).stdout
            for line in out.splitlines():
                m = pat.match(line)
                if m:
                    self.peers.add(int(m.group(1)))
            time.sleep(0.1)

    def wait(self, timeout: float = 180) -> str:
        out, _ = self.proc.communicate(timeout=timeout)
        self._t.join()
        if self.proc.returncode != 0:
            raise AssertionError(f"java tool failed ({self.proc.returncode}):\n{out}")
        return out


def port_of(addr: str) -> int:
    return int(addr.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def three(bed):
    """A controller and three brokers, shared by this module's tests."""
    c = bed.start_cluster("three", brokers=3)
    yield c
    c.stop(fast=True)


def produce_perf(bootstrap: str, topic: str, n: int, throughput: int = -1) -> JavaRun:
    return JavaRun("org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                   "--num-records", str(n), "--record-size", "100", "--throughput",
                   str(throughput), "--producer-props", f"bootstrap.servers={bootstrap}",
                   "acks=all", "enable.idempotence=true", "linger.ms=5",
                   "metadata.max.age.ms=2000", "delivery.timeout.ms=120000")


def consume_all(bootstrap: str, topic: str, n: int) -> JavaRun:
    return JavaRun("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
                   bootstrap, "--topic", topic, "--from-beginning", "--max-messages", str(n),
                   "--timeout-ms", "60000", "--group", f"g-{topic}",
                   "--consumer-property", "metadata.max.age.ms=2000")


def test_gateway_mode_java_clients_never_reach_a_broker(make_syncgate, three, topic_name):
    """Gateway mode: one syncgate; listeners for nodes 1..3 open as brokers
    appear; a Java producer and a consumer group only ever connect to it."""
    three.create_topic(topic_name, partitions=3, rf=3)
    base = free_base_port(3)
    sg = make_syncgate(three, advertise={"base_port": base}, extra={"mode": "gateway"})
    raw = RawClient("127.0.0.1", sg.port)
    brokers, _ = raw.metadata([topic_name])
    raw.close()
    assert sorted(brokers) == [(i, "127.0.0.1", base + i) for i in three.broker_ids]
    for i in three.broker_ids:  # the per-node listeners are open
        socket.create_connection(("127.0.0.1", base + i), timeout=5).close()

    syncgate_ports = {sg.port} | {base + i for i in three.broker_ids}
    broker_ports = {port_of(a) for a in three.brokers.values()}
    p = produce_perf(sg.bootstrap, topic_name, 5000)
    assert "5000 records sent" in p.wait()
    c = consume_all(sg.bootstrap, topic_name, 5000)
    assert "Processed a total of 5000 messages" in c.wait()
    for run in (p, c):
        assert run.peers, "ss saw no connection of the Java client"
        assert run.peers <= syncgate_ports
        assert not run.peers & broker_ports
    assert sum(three.high_watermark(topic_name, i) for i in range(3)) == 5000


def test_sidecar_per_broker_leader_move_s4(make_syncgate, three, topic_name):
    """S4: three sidecars (advertise.nodes maps), a broker restarted while a
    Java producer runs: leadership moves (NOT_LEADER, KIP-951 NodeEndpoints
    in Produce/Fetch responses), every record is acknowledged and read back,
    and the Java clients never connect to a broker port."""
    three.create_topic(topic_name, partitions=3, rf=3)
    ports = {i: free_port() for i in three.broker_ids}
    nodes = {i: f"127.0.0.1:{p}" for i, p in ports.items()}
    sgs = {i: make_syncgate(three, broker_id=i, advertise={"nodes": nodes},
                            extra={"listen": {"kafka": nodes[i]}}) for i in three.broker_ids}
    bootstrap = ",".join(nodes.values())
    broker_ports = {port_of(a) for a in three.brokers.values()}

    p = produce_perf(bootstrap, topic_name, 30000, throughput=2000)
    time.sleep(4)
    # the leader of partition 0 goes away (controlled shutdown), then comes back
    leader = three.partitions(topic_name)[0]["leader"]
    three.stop_broker(leader)
    wait_until(lambda: three.partitions(topic_name)[0]["leader"] not in (leader, -1),
               timeout=30, what="partition 0 led by another broker")
    time.sleep(2)
    three.start_broker(leader)
    out = p.wait(timeout=240)
    assert "30000 records sent" in out
    assert sum(three.high_watermark(topic_name, i) for i in range(3)) == 30000

    c = consume_all(bootstrap, topic_name, 30000)
    assert "Processed a total of 30000 messages" in c.wait(timeout=240)
    for run in (p, c):
        assert run.peers <= set(ports.values()), run.peers
        assert not run.peers & broker_ports
    assert any("NOT_LEADER" in s.log() or "conn_close" in s.log() for s in sgs.values())


def test_java_produce_v13_unknown_topic_id_learnt_from_broker(
        make_syncgate, make_testmirror, source, dest, topic_name):
    """S8: a Java 4.x producer (Produce v13, TopicIds) whose metadata came
    through sidecar B produces through sidecar A, which never saw that
    Metadata: A asks the broker itself (internal Metadata request) and gates
    the topic by name — every record acked, none failed safe."""
    source.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    make_testmirror([topic_name])
    pa = free_port()
    a = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic_name])],
                      extra={"listen": {"kafka": f"127.0.0.1:{pa}"}},
                      advertise={"nodes": {source.broker_ids[0]: f"127.0.0.1:{pa}"}})
    wait_sync(a, "dr", topic_name)
    b = make_syncgate(source, advertise={"nodes": {source.broker_ids[0]: f"127.0.0.1:{pa}"}})
    p = JavaRun("org.apache.kafka.tools.ProducerPerformance", "--topic", topic_name,
                "--num-records", "500", "--record-size", "100", "--throughput", "-1",
                "--producer-props", f"bootstrap.servers={b.bootstrap}", "acks=all",
                "enable.idempotence=true", "delivery.timeout.ms=20000",
                "request.timeout.ms=10000")
    assert "500 records sent" in p.wait()
    assert a.metric("syncgate_unknown_topic_id_partitions_total") == 0
    assert "topic_ids_learn" in a.log()
    assert a.metric('syncgate_gate_partition_outcomes_total{outcome="satisfied"') > 0
    assert dest.high_watermark(topic_name, 0) >= source.high_watermark(topic_name, 0) == 500
