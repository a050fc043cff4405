"""TLS on both sides of syncgate and SASL passthrough, against a real broker
with extra SSL and SASL_PLAINTEXT listeners (scenarios S9, S10).

One broker ("sec") serves PLAINTEXT, SSL (PEM key store from a CA made here
with openssl) and SASL_PLAINTEXT (PLAIN and SCRAM-SHA-256) listeners.
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import time

import pytest

from kafkabed import wait_until
from rawkafka import RawClient, Reader, i16, i32, string
from sgfixture import make_syncgate  # noqa: F401 - fixture

USERS = {"alice": "alice-secret", "mm2-reader": "mm2-secret"}


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d: str) -> dict:
    """A CA, a server certificate for localhost/127.0.0.1 and a client
    certificate, all signed by the CA; plus a second, unrelated CA."""
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                 "-subj", f"/CN=syncgate test {ca}", "-keyout", f"{ca}.key", "-out", f"{ca}.pem",
                 cwd=d)
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name, cn in (("server", "localhost"), ("client", "test-client")):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={cn}",
                 "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", f"{name}.pem",
                 cwd=d)
    # Kafka's PEM key store: an unencrypted PKCS#8 key followed by the chain
    _openssl("pkcs8", "-topk8", "-nocrypt", "-in", "server.key", "-out", "server.p8", cwd=d)
    with open(os.path.join(d, "broker.pem"), "w") as out:
        for part in ("server.p8", "server.pem", "ca.pem"):
            with open(os.path.join(d, part)) as f:
                out.write(f.read())
    return {k: os.path.join(d, v) for k, v in {
        "ca": "ca.pem", "other_ca": "other-ca.pem", "cert": "server.pem", "key": "server.key",
        "client_cert": "client.pem", "client_key": "client.key"}.items()}


@pytest.fixture(scope="module")
def pki(bed):
    d = os.path.join(bed.run_dir, "pki")
    os.makedirs(d, exist_ok=True)
    return make_pki(d)


@pytest.fixture(scope="module")
def sec(bed, pki):
    """One broker with SSL and SASL_PLAINTEXT listeners besides PLAINTEXT."""
    jaas_plain = ("org.apache.kafka.common.security.plain.PlainLoginModule required " +
                  " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
    c = bed.start_cluster("sec", listeners=["SSL:SSL", "SASL:SASL_PLAINTEXT"], props={
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": os.path.join(os.path.dirname(pki["ca"]),
                                                                "broker.pem"),
        "listener.name.sasl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl.plain.sasl.jaas.config": jaas_plain,
        "listener.name.sasl.scram-sha-256.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    })
    for u, p in USERS.items():
        c.run_tool("kafka.admin.ConfigCommand", "--alter", "--entity-type", "users",
                   "--entity-name", u, "--add-config", f"SCRAM-SHA-256=[password={p}]")
    # the credential reaches the broker through the metadata log a little later
    host, port = c.listener(1, "SASL").rsplit(":", 1)
    wait_until(lambda: scram_v0_login(RawClient(host, int(port), timeout=10), "SCRAM-SHA-256"),
               timeout=30, what="SCRAM user known to the broker")
    yield c
    c.stop(fast=True)


def _sidecar(make_syncgate, cluster, upstream: str, listen_tls=None, upstream_tls=None,
             connect_timeout_ms=5000):
    """A sidecar for broker 1 of `cluster` whose upstream is `upstream`."""
    return make_syncgate(cluster, listen_tls=listen_tls, extra={"upstream": {
        "broker": upstream, "connect_timeout_ms": connect_timeout_ms,
        **({"tls": upstream_tls} if upstream_tls else {})}})


def kcat(bootstrap: str, *args: str, input_: str | None = None, props: dict | None = None,
         check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    cmd = ["kcat", "-b", bootstrap]
    for k, v in (props or {}).items():
        cmd += ["-X", f"{k}={v}"]
    return subprocess.run(cmd + list(args), input=input_, text=True, capture_output=True,
                          check=check, timeout=timeout)


def roundtrip(bootstrap: str, topic: str, props: dict, n: int = 20) -> None:
    """Produce n lines with kcat through `bootstrap` and read them back."""
    data = "".join(f"rec-{i}\n" for i in range(n))
    kcat(bootstrap, "-P", "-t", topic, "-p", "0", input_=data, props={"acks": "all", **props})
    out = kcat(bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
               props=props).stdout
    assert out == data


def metadata_addresses(bootstrap: str, props: dict) -> set:
    out = kcat(bootstrap, "-L", "-J", props=props).stdout
    import json
    return {b["name"] for b in json.loads(out)["brokers"]}


# -- TLS ------------------------------------------------------------------------

def test_tls_client_side_kcat(make_syncgate, sec, pki, topic_name):
    """listen.tls: kcat over SSL through syncgate produces and consumes; the
    metadata it sees names syncgate only."""
    sec.create_topic(topic_name)
    sg = _sidecar(make_syncgate, sec, sec.brokers[1],
                  listen_tls={"cert": pki["cert"], "key": pki["key"]})
    ssl = {"security.protocol": "SSL", "ssl.ca.location": pki["ca"]}
    roundtrip(sg.bootstrap, topic_name, ssl)
    assert metadata_addresses(sg.bootstrap, ssl) == {sg.bootstrap}


def test_mtls_requires_a_client_certificate(make_syncgate, sec, pki, topic_name):
    """listen.tls.client_ca: without a client certificate the handshake fails
    (logged as a TLS error), with one signed by the CA it works."""
    sec.create_topic(topic_name)
    sg = _sidecar(make_syncgate, sec, sec.brokers[1],
                  listen_tls={"cert": pki["cert"], "key": pki["key"], "client_ca": pki["ca"]})
    ssl = {"security.protocol": "SSL", "ssl.ca.location": pki["ca"]}
    r = kcat(sg.bootstrap, "-L", "-m", "5", props=ssl, check=False, timeout=30)
    assert r.returncode != 0
    wait_until(lambda: "tls_error" in sg.log(), timeout=10, what="tls_error logged")
    roundtrip(sg.bootstrap, topic_name, {**ssl, "ssl.certificate.location": pki["client_cert"],
                                         "ssl.key.location": pki["client_key"]})


def test_plaintext_client_on_tls_listener_closes_promptly(make_syncgate, sec, pki):
    """A plaintext Kafka request on the TLS listener: the connection closes
    at once with a TLS error in the log; TLS clients are unaffected."""
    sg = _sidecar(make_syncgate, sec, sec.brokers[1],
                  listen_tls={"cert": pki["cert"], "key": pki["key"]})
    s = socket.create_connection(("127.0.0.1", sg.port), timeout=10)
    t0 = time.monotonic()
    frame = i16(18) + i16(0) + i32(1) + string("plain", False)
    s.sendall(i32(len(frame)) + frame)
    try:
        got = s.recv(1000) + s.recv(1000)
    except ConnectionResetError:
        got = b""
    # nothing Kafka-shaped comes back: EOF/reset, or at most a TLS alert record
    assert got == b"" or got[:1] == b"\x15"
    s.close()
    assert time.monotonic() - t0 < 5
    wait_until(lambda: "does not speak TLS to this TLS listener" in sg.log(), timeout=5,
               what="tls_error with a hint logged")
    assert sg.proc.alive()
    ssl = {"security.protocol": "SSL", "ssl.ca.location": pki["ca"]}
    assert metadata_addresses(sg.bootstrap, ssl) == {sg.bootstrap}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_upstream_tls_to_ssl_listener(make_syncgate, sec, pki, topic_name, host):
    """upstream.tls: a plaintext client through syncgate to the broker's SSL
    listener (hostname verification on: IP literal and DNS name); the
    broker's SSL address never reaches the client."""
    sec.create_topic(topic_name)
    port = sec.listener(1, "SSL").rsplit(":", 1)[1]
    sg = _sidecar(make_syncgate, sec, f"{host}:{port}", upstream_tls={"ca": pki["ca"]})
    roundtrip(sg.bootstrap, topic_name, {})
    assert metadata_addresses(sg.bootstrap, {}) == {sg.bootstrap}


def test_tls_on_both_sides(make_syncgate, sec, pki, topic_name):
    """listen.tls and upstream.tls together (TLS terminated and re-originated)."""
    sec.create_topic(topic_name)
    sg = _sidecar(make_syncgate, sec, sec.listener(1, "SSL"),
                  listen_tls={"cert": pki["cert"], "key": pki["key"]},
                  upstream_tls={"ca": pki["ca"]})
    roundtrip(sg.bootstrap, topic_name, {"security.protocol": "SSL", "ssl.ca.location": pki["ca"]})


def test_upstream_tls_untrusted_broker_closes_promptly(make_syncgate, sec, pki):
    """upstream.tls with the wrong CA: the client's connection closes well
    before the connect timeout, the verify failure is logged."""
    sg = _sidecar(make_syncgate, sec, sec.listener(1, "SSL"),
                  upstream_tls={"ca": pki["other_ca"]}, connect_timeout_ms=20000)
    c = RawClient("127.0.0.1", sg.port, timeout=15)
    t0 = time.monotonic()
    with pytest.raises((ConnectionError, OSError)):
        c.api_versions()
    c.close()
    assert time.monotonic() - t0 < 5
    wait_until(lambda: "certificate verify failed" in sg.log(), timeout=5,
               what="verify failure logged")


def test_plaintext_upstream_to_tls_broker_closes_cleanly(make_syncgate, sec, pki):
    """Misconfigured upstream (plaintext to the broker's SSL port): the
    client's connection closes, syncgate stays up."""
    sg = _sidecar(make_syncgate, sec, sec.listener(1, "SSL"))
    c = RawClient("127.0.0.1", sg.port, timeout=30)
    with pytest.raises((ConnectionError, OSError)):
        c.api_versions()
    c.close()
    assert sg.proc.alive()


# -- SASL -------------------------------------------------------------------------

@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_sasl_librdkafka_through_syncgate(make_syncgate, sec, topic_name, mechanism):
    """kcat/librdkafka SASL (SaslHandshake v1 + SaslAuthenticate frames)
    through syncgate; a wrong password fails authentication."""
    sec.create_topic(topic_name)
    sg = _sidecar(make_syncgate, sec, sec.listener(1, "SASL"))
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mechanism,
            "sasl.username": "alice", "sasl.password": USERS["alice"]}
    if mechanism.startswith("SCRAM") and kcat(sec.listener(1, "SASL"), "-L", "-m", "5",
                                               props=sasl, check=False).returncode != 0:
        pytest.skip("this librdkafka fails SCRAM directly against the broker too")
    roundtrip(sg.bootstrap, topic_name, sasl)
    assert metadata_addresses(sg.bootstrap, sasl) == {sg.bootstrap}
    bad = kcat(sg.bootstrap, "-L", "-m", "5", props={**sasl, "sasl.password": "wrong"},
               check=False, timeout=30)
    assert bad.returncode != 0


def _raw_token(c: RawClient, token: bytes) -> bytes:
    """One raw SASL v0 exchange: size-prefixed token out, size-prefixed token in."""
    c.send_raw(i32(len(token)) + token)
    (n,) = struct.unpack(">i", c._read_exact(4))
    return c._read_exact(n) if n else b""


def _handshake_v0(c: RawClient, mechanism: str) -> None:
    c.send(17, 0, string(mechanism, False))
    _, body = c.recv()
    assert struct.unpack(">h", body[:2])[0] == 0


def scram_v0_login(c: RawClient, mechanism: str, close: bool = True) -> bool:
    """SaslHandshake v0 and the two raw SCRAM exchanges as alice; True when
    the server's final message verifies (raises otherwise)."""
    from kafka.scram import ScramClient
    try:
        _handshake_v0(c, mechanism)
        sc = ScramClient("alice", USERS["alice"], mechanism)
        sc.process_server_first_message(_raw_token(c, sc.first_message().encode()).decode())
        sc.process_server_final_message(_raw_token(c, sc.final_message().encode()).decode())
        return True
    finally:
        if close:
            c.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_sasl_handshake_v0_raw_tokens(make_syncgate, sec, topic_name, mechanism):
    """S10: SaslHandshake v0, then raw tokens (PLAIN: one exchange whose
    reply is an EMPTY frame; SCRAM: two), then ordinary Kafka requests on the
    same connection — all relayed opaquely."""
    sec.create_topic(topic_name)
    sg = _sidecar(make_syncgate, sec, sec.listener(1, "SASL"))
    c = RawClient("127.0.0.1", sg.port, timeout=15)
    assert scram_v0_login(c, mechanism, close=False) if mechanism != "PLAIN" else True
    if mechanism == "PLAIN":
        _handshake_v0(c, mechanism)
        assert _raw_token(c, b"\0alice\0" + USERS["alice"].encode()) == b""
    brokers, topics = c.metadata([topic_name])
    assert [(h, p) for _, h, p in brokers] == [("127.0.0.1", sg.port)]
    r = c.produce(topic_name, 0, [b"via-v0"], version=9)
    assert r.topics[topic_name][0].error_code == 0
    c.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kafka_python_sasl_v0(make_syncgate, sec, topic_name, mechanism):
    """S10 with a real old client: kafka-python 2.0.2 always uses
    SaslHandshake v0 and raw tokens."""
    from kafka import KafkaProducer
    sec.create_topic(topic_name)
    sg = _sidecar(make_syncgate, sec, sec.listener(1, "SASL"))
    p = KafkaProducer(bootstrap_servers=sg.bootstrap, security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism=mechanism, sasl_plain_username="alice",
                      sasl_plain_password=USERS["alice"], api_version=(2, 5, 0), acks="all")
    for i in range(10):
        p.send(topic_name, f"kp-{i}".encode(), partition=0).get(timeout=30)
    p.close()
    assert sec.high_watermark(topic_name, 0) == 10
    assert [r.value for r in sec.consume(topic_name, 0)] == [f"kp-{i}".encode() for i in range(10)]


@pytest.mark.parametrize("mechanism,client", [("PLAIN", "librdkafka"), ("SCRAM-SHA-256", "kafka-python")])
def test_exempt_sasl_principal_is_not_clamped(make_syncgate, make_testmirror, sec, dest, topic_name, mechanism,
                                              client):
    """consumers.exempt_principals with SASL: syncgate reads the
    user from the client's first SASL message and takes it once the broker
    accepted it. The exempt user reads past the mirrored HW while the mirror
    is paused; another user with the same client id is clamped. librdkafka:
    SaslHandshake v1 + SaslAuthenticate; kafka-python 2.0.2: SaslHandshake v0
    and raw SCRAM tokens."""
    from confluent_kafka import Consumer, TopicPartition
    from sgfixture import mirror_conf
    from sghelpers import effective

    def sasl(user):
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mechanism,
                "sasl.username": user, "sasl.password": USERS[user]}
    def consume(user, seconds, expect):
        if client == "kafka-python":
            from kafka import KafkaConsumer
            from kafka import TopicPartition as KTP
            k = KafkaConsumer(bootstrap_servers=sg.bootstrap, client_id="same-id", group_id=None,
                              security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                              sasl_plain_username=user, sasl_plain_password=USERS[user],
                              enable_auto_commit=False, fetch_max_wait_ms=500)
            out = []
            try:
                k.assign([KTP(topic_name, 0)])
                k.seek(KTP(topic_name, 0), 0)
                end = time.monotonic() + seconds
                while len(out) < expect and time.monotonic() < end:
                    for recs in k.poll(timeout_ms=200).values():
                        out += [r.offset for r in recs]
            finally:
                k.close()
            return out
        c = Consumer({"bootstrap.servers": sg.bootstrap, "group.id": f"sasl-{user}", "client.id": "same-id",
                      "enable.auto.commit": False, "fetch.wait.max.ms": 500, **sasl(user)})
        out = []
        try:
            c.assign([TopicPartition(topic_name, 0, 0)])
            end = time.monotonic() + seconds
            while len(out) < expect and time.monotonic() < end:
                m = c.poll(0.2)
                if m is not None and not m.error():
                    out.append(m.offset())
        finally:
            c.close()
        return out

    sec.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    mirror = make_testmirror([topic_name], source=sec)
    sg = make_syncgate(sec, mirrors=[mirror_conf("dr", dest, [topic_name])], extra={
        "upstream": {"broker": sec.listener(1, "SASL"), "connect_timeout_ms": 5000},
        "source": {"properties": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                                  "sasl.username": "alice", "sasl.password": USERS["alice"]}},
        "consumers": {"exempt_principals": ["mm2-.*"]}})
    wait_until(lambda: effective(sg, "dr", topic_name) == "SYNC", timeout=60, what="dr effective SYNC")
    mirror.pause()
    try:
        sec.produce(topic_name, 3, partition=0, acks=1, enable_idempotence=False)
        assert consume("mm2-reader", 20, 3) == [0, 1, 2]
        assert 'sasl_user="mm2-reader"' in sg.log()
        assert sg.metric("syncgate_consumer_exempt_requests_total") > 0
        assert consume("alice", 3, 3) == []
        assert sg.metric("syncgate_consumer_records_withheld_total") > 0
    finally:
        mirror.resume()
    assert consume("alice", 30, 3) == [0, 1, 2]

