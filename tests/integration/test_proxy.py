"""The transparent proxy against real Apache Kafka: real clients work through
syncgate as they do directly, no broker address reaches a client, framing
and version negotiation faults close cleanly, ApiVersions v5 from the newest
broker (Kafka 4.4) is rewritten, and a version newer than syncgate
understands is counted and refused or answered (scenarios S3, S5, S6, S7,
S9)."""

from __future__ import annotations

import re
import socket
import struct
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kafkabed import newest_kafka_libs, wait_until
from rawkafka import RawClient, i32, produce_body, record_batch
from sgfixture import SYNCGATE_BIN, java_tool, make_syncgate  # noqa: F401 - fixture


def test_metadata_addresses_are_syncgate_only(make_syncgate, source, topic_name):
    """Invariant 3 (no bypass): every broker in Metadata is a syncgate address,
    node ids unchanged."""
    source.create_topic(topic_name, partitions=2)
    sg = make_syncgate(source)
    c = RawClient("127.0.0.1", sg.port)
    brokers, topics = c.metadata([topic_name])
    c.close()
    assert [b[0] for b in brokers] == source.broker_ids
    for _, host, port in brokers:
        assert (host, port) == ("127.0.0.1", sg.port)
    assert sorted(topics[topic_name][1]) == [0, 1]


def test_describe_cluster_and_coordinators_rewritten(make_syncgate, source, topic_name):
    """S5: DescribeCluster, FindCoordinator (group and transaction) name only
    syncgate addresses: a consumer group and a transactional producer work
    through it."""
    source.create_topic(topic_name, partitions=1)
    sg = make_syncgate(source)
    raw = RawClient("127.0.0.1", sg.port)
    assert raw.describe_cluster() == [(source.broker_ids[0], "127.0.0.1", sg.port)]
    # the first lookups create __consumer_offsets (COORDINATOR_NOT_AVAILABLE)
    coords = wait_until(lambda: (lambda r: all(e == 0 for *_, e in r) and r)(
        raw.find_coordinators(0, ["g1", "g2"])), timeout=30, what="group coordinators")
    raw.close()
    assert [(k, h, p) for k, _, h, p, _ in coords] == [("g1", "127.0.0.1", sg.port),
                                                        ("g2", "127.0.0.1", sg.port)]

    p = Producer({"bootstrap.servers": sg.bootstrap, "transactional.id": f"tx-{topic_name}",
                  "acks": "all"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic_name, value=f"tx{i}".encode())
    p.commit_transaction(30)

    cons = Consumer({"bootstrap.servers": sg.bootstrap, "group.id": f"g-{topic_name}",
                     "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                     "enable.auto.commit": False})
    cons.subscribe([topic_name])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < 10 and time.monotonic() < deadline:
        m = cons.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    cons.commit(asynchronous=False)
    committed = cons.committed([TopicPartition(topic_name, 0)], timeout=30)
    cons.close()
    assert got == [f"tx{i}".encode() for i in range(10)]
    assert committed[0].offset >= 10  # ten records and a commit marker


def test_kcat_produce_and_consume_through_syncgate(make_syncgate, source, topic_name):
    """librdkafka via kcat: the same records come back, in order."""
    source.create_topic(topic_name, partitions=1)
    sg = make_syncgate(source)
    data = "".join(f"line-{i}\n" for i in range(100))
    subprocess.run(["kcat", "-b", sg.bootstrap, "-P", "-t", topic_name, "-p", "0",
                    "-X", "acks=all"], input=data, text=True, check=True, timeout=60)
    out = subprocess.run(["kcat", "-b", sg.bootstrap, "-C", "-t", topic_name, "-p", "0",
                          "-o", "beginning", "-e", "-q"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out == data


def test_java_producer_perf_through_syncgate(make_syncgate, source, topic_name):
    """Java kafka-clients (idempotent producer) through syncgate: every record
    acknowledged and readable from the broker."""
    source.create_topic(topic_name, partitions=2)
    sg = make_syncgate(source)
    out = java_tool("org.apache.kafka.tools.ProducerPerformance", "--topic", topic_name,
                    "--num-records", "2000", "--record-size", "100", "--throughput", "-1",
                    "--producer-props", f"bootstrap.servers={sg.bootstrap}", "acks=all",
                    "enable.idempotence=true")
    assert "2000 records sent" in out
    assert sum(source.high_watermark(topic_name, p) for p in (0, 1)) == 2000


def test_acks0_flood_mixed_with_acks1_keeps_order(make_syncgate, source, topic_name):
    """S3: acks=0 takes no FIFO slot; interleaved acks=1 responses keep order."""
    source.create_topic(topic_name, partitions=1)
    sg = make_syncgate(source)
    c = RawClient("127.0.0.1", sg.port)
    expected = []
    for i in range(300):
        if i % 3 == 2:
            expected.append(c.send(0, 9, _produce_body(topic_name, acks=1)))
        else:
            c.send(0, 9, _produce_body(topic_name, acks=0), expect_response=False)
    got = [c.recv()[0] for _ in expected]
    c.close()
    assert got == expected
    wait_until(lambda: source.high_watermark(topic_name, 0) == 300, timeout=20,
               what="all 300 records appended")


def _produce_body(topic: str, acks: int) -> bytes:
    from rawkafka import produce_body, record_batch
    return produce_body(9, acks, 30000, {topic: {0: record_batch([b"x"])}})


def test_api_versions_from_the_future(make_syncgate, source):
    """S6: ApiVersions v5 (unknown to a 4.3 broker) gets the broker's v0-layout
    UNSUPPORTED_VERSION reply unchanged; the client's retry on the same
    connection works and Produce keeps min 0 (S7) with a max ≥ 7."""
    sg = make_syncgate(source)
    c = RawClient("127.0.0.1", sg.port)
    err, apis = c.api_versions(version=5)
    assert err == 35
    assert 18 in apis
    err, apis = c.api_versions(version=3)
    c.close()
    assert err == 0
    assert apis[0][0] <= 3 and apis[0][1] >= 7
    assert apis[1][1] >= 10


def test_api_versions_v5_through_the_newest_broker(make_cluster, make_syncgate):
    """S7 at ApiVersions v5 (KIP-1242, what Java 4.4 clients send first),
    through a real Kafka 4.4 broker: the answer advertises Produce v14 (the
    mirror-sync version) and the client software name is learnt
    (client_software, what gate.timeout_answers matches), as at v3/v4.
    Before syncgate read v5, the answer passed unchanged (Produce max 13)
    and the name was never logged."""
    newest = make_cluster("newest", brokers=1, kafka_libs=newest_kafka_libs())
    direct = RawClient(*newest.brokers[newest.broker_ids[0]].split(":"))
    err, apis = direct.api_versions(version=5)
    direct.close()
    assert err == 0 and apis[18][1] >= 5, "a broker that serves ApiVersions v5"
    assert apis[0][1] == 13
    sg = make_syncgate(newest)
    c = RawClient("127.0.0.1", sg.port)
    err, apis = c.api_versions(version=5, software=("rawkafka-v5", "4.4.0"))
    c.close()
    assert err == 0
    assert apis[0][1] == 14, "Produce v14 advertised"
    assert apis[0][0] <= 3, "its minimum never raised"
    assert apis[18][1] == 5, "ApiVersions v5 is understood, not capped"
    wait_until(lambda: 'client_software conn=' in sg.log() and 'name="rawkafka-v5" version="4.4.0"' in sg.log(),
               timeout=10)
    assert sg.metric("syncgate_unknown_api_version_total") == 0


def test_version_newer_than_syncgate_understands_is_counted(make_syncgate, source, topic_name):
    """A request version above what syncgate decodes, on an API whose
    handling depends on reading it, is counted
    (syncgate_unknown_api_version_total{api}) and logged
    (request_version_unknown): an ApiVersions is answered UNSUPPORTED_VERSION
    naming versions syncgate knows (the broker's own range, capped), and the
    retry on the same connection works; a Produce syncgate could not hold
    closes the connection and is never forwarded (nothing appended)."""
    source.create_topic(topic_name, partitions=1)
    sg = make_syncgate(source)
    future = 6  # one above ApiVersions v5, the newest syncgate (and Kafka 4.4) knows
    direct = RawClient(*source.brokers[source.broker_ids[0]].split(":"))
    _, broker_says = direct.api_versions(version=future)
    direct.close()
    c = RawClient("127.0.0.1", sg.port)
    err, apis = c.api_versions(version=future)
    assert err == 35
    assert list(apis) == [18]
    assert apis[18][0] == 0 and apis[18][1] == min(broker_says[18][1], 5)
    err, apis = c.api_versions(version=apis[18][1])
    assert err == 0 and apis[0][1] >= 13, "the retry within it is rewritten"
    c.close()
    assert sg.metric('syncgate_unknown_api_version_total{api="ApiVersions"}') == 1
    assert "request_version_unknown" in sg.log() and "api=ApiVersions version=6" in sg.log()

    p = RawClient("127.0.0.1", sg.port)
    p.send(0, 15, produce_body(13, -1, 30000, {topic_name: {0: record_batch([b"x"])}},
                               topic_ids={topic_name: bytes(16)}))
    try:
        p.recv()
        answered = True
    except (ConnectionError, OSError):
        answered = False
    p.close()
    assert not answered, "refused: the connection is closed"
    assert sg.metric('syncgate_unknown_api_version_total{api="Produce"}') == 1
    assert "api=Produce version=15 understood=14 action=refuse" in sg.log()
    assert source.high_watermark(topic_name, 0) == 0, "never forwarded"


def test_start_line_and_build_info_name_version_and_commit(make_syncgate, source):
    """The `started` line and syncgate_build_info carry the version (from
    meson.build) and the git commit, the same as `syncgate --version`."""
    sg = make_syncgate(source)
    out = subprocess.run([SYNCGATE_BIN, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.fullmatch(r"syncgate (\S+) \(commit (\S+)\)\n", out)
    assert m, out
    version, commit = m.groups()
    assert f"INFO started version={version} commit={commit} " in sg.log()
    assert sg.metric(f'syncgate_build_info{{version="{version}",commit="{commit}"}}') == 1


def test_tls_hello_on_plaintext_port_closes_cleanly(make_syncgate, source):
    """S9: a TLS ClientHello on the plaintext port is refused with a log hint;
    other connections keep working."""
    sg = make_syncgate(source)
    other = RawClient("127.0.0.1", sg.port)
    s = socket.create_connection(("127.0.0.1", sg.port), timeout=10)
    s.sendall(bytes.fromhex("160301020001000200") + b"\x00" * 64)
    assert s.recv(100) == b""  # closed, nothing sent
    s.close()
    wait_until(lambda: "TLS" in sg.log(), timeout=5, what="TLS hint in the log")
    err, _ = other.api_versions()
    other.close()
    assert err == 0


def test_huge_length_prefix_refused_before_allocating(make_syncgate, source):
    """S9: a 300 MB length prefix is refused at once (above max_frame_bytes)."""
    sg = make_syncgate(source, limits={"max_frame_bytes": 1048576})
    s = socket.create_connection(("127.0.0.1", sg.port), timeout=10)
    s.sendall(i32(300 * 1024 * 1024) + b"\x00" * 16)
    assert s.recv(100) == b""
    s.close()
    assert "frame_refused" in sg.log()
    assert sg.proc.alive()


def test_byte_at_a_time_frames(make_syncgate, source):
    """Framing: a request trickling in one byte at a time is still one request."""
    sg = make_syncgate(source)
    from rawkafka import request_header, string, TAGS0
    body = string("rawkafka", True) + string("1.0", True) + TAGS0
    frame = request_header(18, 3, 7) + body
    s = socket.create_connection(("127.0.0.1", sg.port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for b in i32(len(frame)) + frame:
        s.sendall(bytes([b]))
        time.sleep(0.001)
    size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
    resp = s.recv(size, socket.MSG_WAITALL)
    s.close()
    assert struct.unpack(">i", resp[:4])[0] == 7
    assert struct.unpack(">h", resp[4:6])[0] == 0
