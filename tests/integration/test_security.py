"""Production security against real Kafka.

* source.properties: syncgate's own source clients (state log, decider,
  source high watermarks, probe) authenticate with SASL PLAIN over TLS to a
  source listener that is SASL_SSL; the lifecycle works through syncgate-ctl
  over HTTPS with a client certificate; a wrong password is a clear error at
  start and /readyz names it.
* admin.tls: HTTPS and mutual TLS, plain HTTP refused, bearer token still
  needed for mutations.
* limits.max_connections / max_connection_rate: hit (refused, logged,
  counted) and recovered, with a held Produce response untouched.
* limits.client_idle_ms: an idle connection closed (logged, counted), never
  one holding a Produce response (ack or the gate's code, then idle).
* Secrets: nothing any of it produced (logs, /metrics, /v1/mirrors, ctl
  output, the config reference) contains a password, token or private key.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest

from kafkabed import REPO, wait_until
from rawkafka import RawClient, parse_produce_response, produce_body, record_batch
from sgfixture import SYNCGATE_BIN, free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture
from test_proxy_security import kcat, make_pki
from sghelpers import NOT_ENOUGH_REPLICAS_AFTER_APPEND, wait_sync
from sghelpers import describe, lifecycle_extra, write_token

CTL = os.environ.get("SYNCGATE_CTL", os.path.join(REPO, "build", "proxy", "syncgate-ctl"))

SG_USER, SG_PASSWORD = "syncgate", "sg-" + uuid.uuid4().hex       # syncgate's own principal
CLIENT_USER, CLIENT_PASSWORD = "alice", "alice-" + uuid.uuid4().hex  # a Kafka client's


@pytest.fixture(scope="module")
def pki(bed):
    d = os.path.join(bed.run_dir, "pki17")
    os.makedirs(d, exist_ok=True)
    return make_pki(d)


@pytest.fixture(scope="module")
def sasl_src(bed, pki):
    """A source cluster whose only listener syncgate may use is SASL_SSL
    (PLAIN); the PLAINTEXT one serves the test harness and the test mirror."""
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_{SG_USER}="{SG_PASSWORD}" user_{CLIENT_USER}="{CLIENT_PASSWORD}";')
    c = bed.start_cluster("sec17", listeners=["SASLSSL:SASL_SSL"], props={
        "listener.name.saslssl.ssl.keystore.type": "PEM",
        "listener.name.saslssl.ssl.keystore.location": os.path.join(os.path.dirname(pki["ca"]),
                                                                    "broker.pem"),
        "listener.name.saslssl.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.saslssl.plain.sasl.jaas.config": jaas,
    })
    yield c
    c.stop(fast=True)


def _secret_file(bed, value: str) -> str:
    path = os.path.join(bed.run_dir, f"secret-{uuid.uuid4().hex[:6]}")
    with open(path, "w") as f:
        f.write(value + "\n")
    return path


def _ctl(sg, *args, tls=None, token=True, timeout=60):
    """syncgate-ctl against sg's admin; tls: extra TLS options (list)."""
    scheme = "https://" if tls is not None else ""
    argv = [CTL, "--admin", f"{scheme}127.0.0.1:{sg.admin_port}", *(tls or [])]
    if token and getattr(sg, "token_file", None):
        argv += ["--token-file", sg.token_file]
    env = {k: v for k, v in os.environ.items() if k != "SYNCGATE_TOKEN_FILE"}
    p = subprocess.run(argv + list(args), capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def _https(sg, path, pki, cert=True, method="GET", body=None, token=None):
    ctx = ssl.create_default_context(cafile=pki["ca"])
    if cert:
        ctx.load_cert_chain(pki["client_cert"], pki["client_key"])
    req = urllib.request.Request(f"https://127.0.0.1:{sg.admin_port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _sasl_sidecar(make_syncgate, src, dest, pki, topic, password_file, token_file, name=None):
    admin = lifecycle_extra(f"__sg17_{uuid.uuid4().hex[:6]}", token_file)
    admin["admin"]["tls"] = {"cert": pki["cert"], "key": pki["key"], "client_ca": pki["ca"]}
    extra = {**admin,
             "upstream": {"broker": src.listener(1, "SASLSSL"), "tls": {"ca": pki["ca"]}},
             "source": {"properties": {
                 "security.protocol": "sasl_ssl", "sasl.mechanisms": "PLAIN",
                 "sasl.username": SG_USER, "sasl.password": "${file:%s}" % password_file}}}
    sg = make_syncgate(src, mirrors=[mirror_conf("dr", dest, [topic])], extra=extra, name=name)
    sg.token_file = token_file
    return sg


def test_source_sasl_ssl_lifecycle_over_https_ctl_and_no_secret_anywhere(
        bed, make_syncgate, sasl_src, dest, pki, topic_name):
    """syncgate's own clients reach the source only over SASL_SSL
    (source.properties, password from a file): the state log is read, the
    topic is promoted, a held acks=all Produce is released by the mirror;
    syncgate-ctl works over mutual TLS; then every output is grepped for the
    secrets the run used."""
    sasl_src.create_topic(topic_name)
    dest.create_topic(topic_name)
    token = uuid.uuid4().hex
    token_file = write_token(bed, token)
    sg = _sasl_sidecar(make_syncgate, sasl_src, dest, pki, topic_name,
                       _secret_file(bed, SG_PASSWORD), token_file)
    tls = ["--cacert", pki["ca"], "--cert", pki["client_cert"], "--key", pki["client_key"]]
    outputs = []

    def describe_json():
        rc, out, err = _ctl(sg, "--output", "json", "--describe", tls=tls)
        outputs.extend([out, err])
        assert rc == 0, err
        return json.loads(out)

    wait_until(lambda: describe_json().get("state_ready"), timeout=60,
               what="state log read over SASL_SSL")

    def effective():
        for m in describe_json()["mirrors"]:
            for t in m["topics"]:
                if t["topic"] == topic_name:
                    return t["effective"]
    wait_until(lambda: effective() == "SYNC", timeout=60, what="topic promoted")

    # a client with its own SASL (passed through) produces acks=all: held until mirrored
    client_sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                   "sasl.username": CLIENT_USER, "sasl.password": CLIENT_PASSWORD}
    bed.start_testmirror(f"tm-{uuid.uuid4().hex[:6]}", sasl_src, dest, [topic_name])
    data = "".join(f"r{i}\n" for i in range(5))
    kcat(sg.bootstrap, "-P", "-t", topic_name, "-p", "0", input_=data,
         props={"acks": "all", "message.timeout.ms": "30000", **client_sasl})
    assert dest.high_watermark(topic_name, 0) == 5  # acked only once mirrored
    held = [ln for ln in _https(sg, "/metrics", pki)[1].splitlines()
            if ln.startswith("syncgate_held_responses ")]
    assert held == ["syncgate_held_responses 0"], held

    # lifecycle through syncgate-ctl over mutual TLS
    rc, out, err = _ctl(sg, "--alter", "--mirror", "dr", "--topic", topic_name, "--async", tls=tls)
    outputs.extend([out, err])
    assert rc == 0 and out.split()[1] == "DEMOTED", (out, err)
    rc, out, err = _ctl(sg, "--alter", "--mirror", "dr", "--topic", topic_name, "--sync", tls=tls)
    outputs.extend([out, err])
    assert rc == 0 and out.split()[1] in ("PROMOTED", "PENDING_LAG"), (out, err)

    # admin TLS: readable without the token, mutations need it, mTLS needs a cert
    assert _https(sg, "/healthz", pki)[0] == 200
    assert _https(sg, "/readyz", pki)[0] == 200
    st, metrics = _https(sg, "/metrics", pki)
    assert st == 200 and "syncgate_upstream_up" in metrics
    st, mirrors = _https(sg, "/v1/mirrors", pki)
    assert st == 200
    st, _ = _https(sg, "/v1/alter", pki, method="POST",
                   body={"mirror": "dr", "topic": topic_name, "type": "ASYNC", "add": False})
    assert st in (401, 403)
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError, OSError)):
        _https(sg, "/healthz", pki, cert=False)
    rc, out, err = _ctl(sg, "--describe", tls=["--cacert", pki["ca"]])
    outputs.extend([out, err])
    assert rc == 3, (out, err)
    rc, out, err = _ctl(sg, "--describe", tls=["--cacert", pki["other_ca"]])
    outputs.extend([out, err])
    assert rc == 3 and "certificate verify failed" in err, err
    # plain HTTP to the HTTPS port: refused cleanly, logged with a hint
    time.sleep(1.1)  # admin_tls_error lines are rate-limited to one a second
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(f"http://127.0.0.1:{sg.admin_port}/healthz", timeout=10).read()
    wait_until(lambda: "plain HTTP sent to the HTTPS admin port" in sg.log(), timeout=10,
               what="admin_tls_error logged")
    assert sg.proc.alive()
    rc, out, err = _ctl(sg, "--describe")
    outputs.extend([out, err])
    assert rc == 3 and "https://" in err

    # no secret anywhere
    reference = subprocess.run([SYNCGATE_BIN, "--print-config-reference"], capture_output=True,
                               text=True, check=True).stdout
    with open(pki["key"]) as f:
        key_lines = [ln for ln in f.read().splitlines() if ln and not ln.startswith("-----")]
    everything = "\n".join([sg.log(), metrics, mirrors, reference, *outputs])
    for secret in (SG_PASSWORD, CLIENT_PASSWORD, token, *key_lines[:3]):
        assert secret not in everything, f"a secret leaked: {secret[:6]}..."


def test_source_wrong_password_is_a_clear_error_and_readyz_names_it(
        bed, make_syncgate, sasl_src, dest, pki, topic_name):
    """A wrong sasl.password in source.properties: source_auth_failed at
    start, /readyz 503 naming the authentication failure; the password is
    in neither."""
    wrong = "wrong-" + uuid.uuid4().hex
    sg = _sasl_sidecar(make_syncgate, sasl_src, dest, pki, topic_name,
                       _secret_file(bed, wrong), write_token(bed))
    try:
        wait_until(lambda: "source_auth_failed" in sg.log(), timeout=60, what="auth failure logged")
    except AssertionError:
        raise AssertionError("no source_auth_failed:\n" + "\n".join(
            ln for ln in sg.log().splitlines() if "librdkafka" in ln or "state" in ln)[-3000:])
    st, body = _https(sg, "/readyz", pki)
    assert st == 503 and "authentication failed" in body, body
    assert wrong not in sg.log() and wrong not in body


@pytest.mark.parametrize("limit", ["max_connections", "max_connection_rate"])
def test_connection_caps_refuse_then_recover_held_response_untouched(
        bed, make_syncgate, source, dest, topic_name, limit):
    """A Produce held by the gate; connections past the cap are closed at
    accept (logged, counted), the held one keeps waiting and is answered
    normally (the topic is demoted); below the cap new connections work."""
    source.create_topic(topic_name)
    dest.create_topic(topic_name)
    tok = write_token(bed)
    extra = lifecycle_extra(f"__sg17_{uuid.uuid4().hex[:6]}", tok)
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic_name])], extra=extra,
                       limits={"max_connections": 2 if limit == "max_connections" else 0,
                               "max_connection_rate": 4 if limit == "max_connection_rate" else 0})
    sg.token_file = tok
    wait_until(lambda: any(t["topic"] == topic_name and t["effective"] == "SYNC"
                           for m in describe(sg)["mirrors"] for t in m["topics"]),
               timeout=60, what="topic SYNC")
    if limit == "max_connection_rate":
        time.sleep(1.2)  # the bucket refills after the fixture's own probes
    held = RawClient("127.0.0.1", sg.port, timeout=60)
    held.send(0, 9, produce_body(9, -1, 60000, {topic_name: {0: record_batch([b"held"])}}))
    wait_until(lambda: sg.metric("syncgate_held_responses") == 1, timeout=20, what="response held")

    refused = 0
    opened = []
    for _ in range(8):  # a burst, faster than any refill
        opened.append(socket.create_connection(("127.0.0.1", sg.port), timeout=5))
    for s in opened:
        s.settimeout(0.5)
        try:  # an accepted connection stays open and silent; a refused one is closed at once
            if s.recv(10) == b"":
                refused += 1
        except socket.timeout:
            pass
        except (ConnectionError, OSError):
            refused += 1
    assert refused >= 1
    wait_until(lambda: sg.metric(f'syncgate_connections_refused_total{{reason="{limit}"}}') >= 1,
               timeout=10, what="refusal counted")
    assert f"reason={limit}" in sg.log()
    assert sg.metric("syncgate_held_responses") == 1  # untouched
    for s in opened:
        s.close()

    # answered normally once the gate lets go (demote), on the same connection
    rc = subprocess.run([CTL, "--admin", f"127.0.0.1:{sg.admin_port}", "--token-file", tok,
                         "--alter", "--mirror", "dr", "--topic", topic_name, "--async"],
                        capture_output=True, text=True, timeout=60)
    assert rc.returncode == 0, rc.stderr
    _, body = held.recv()
    assert parse_produce_response(body, 9).topics[topic_name][0].error_code == 0
    held.close()
    time.sleep(1.2)
    c = RawClient("127.0.0.1", sg.port, timeout=10)  # recovered
    c.api_versions()
    c.close()


def _closed_by_peer(sock: socket.socket, wait: float) -> bool:
    """Whether the peer closes `sock` within `wait` seconds (EOF or reset)."""
    sock.settimeout(wait)
    try:
        return sock.recv(1) == b""
    except socket.timeout:
        return False
    except (ConnectionError, OSError):
        return True


def test_client_idle_timeout_closes_idle_never_a_held_response(
        bed, make_syncgate, make_testmirror, source, dest, topic_name):
    """limits.client_idle_ms 3000: an idle client connection is closed (logged,
    counted) and a chatty one is not; with the mirror paused, a held acks=all
    Produce outlives several idle periods and is acked after the resume, and
    another held one ends in the gate's error code at its deadline — never
    an idle close; each connection idles out only once its hold has ended."""
    source.create_topic(topic_name)
    dest.create_topic(topic_name)
    mirror = make_testmirror([topic_name])
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic_name])],
                       limits={"client_idle_ms": 3000})
    wait_sync(sg, "dr", topic_name)

    idle = RawClient("127.0.0.1", sg.port, timeout=30)
    idle.api_versions()
    assert _closed_by_peer(idle.sock, 30), "an idle connection was not closed"
    wait_until(lambda: sg.metric("syncgate_client_idle_closes_total") >= 1, timeout=10,
               what="idle close counted")
    assert "client_idle_closed" in sg.log()
    idle.close()

    acked = RawClient("127.0.0.1", sg.port, timeout=60)
    timed_out = RawClient("127.0.0.1", sg.port, timeout=60)
    chatty = RawClient("127.0.0.1", sg.port, timeout=30)
    stop = threading.Event()
    chatty_errors: list = []

    def chat():  # a request a second: never idle for 3 s
        try:
            while not stop.wait(1):
                chatty.api_versions()
        except Exception as e:  # noqa: BLE001 - reported below
            chatty_errors.append(e)

    talker = threading.Thread(target=chat, daemon=True)
    talker.start()
    mirror.pause()
    try:
        acked.send(0, 9, produce_body(9, -1, 60000, {topic_name: {0: record_batch([b"a"])}}))
        timed_out.send(0, 9, produce_body(9, -1, 8000, {topic_name: {0: record_batch([b"t"])}}))
        wait_until(lambda: sg.metric("syncgate_held_responses") == 2, timeout=20,
                   what="two responses held")
        # the timed-out hold ends in the gate's code (Produce v9: down-mapped to 20)
        _, body = timed_out.recv()  # an idle close would raise ConnectionError
        assert parse_produce_response(body, 9).topics[topic_name][0].error_code == \
            NOT_ENOUGH_REPLICAS_AFTER_APPEND
        # the other hold goes on through more idle periods (a close would drop
        # it: held_responses 0)
        time.sleep(4)
        assert sg.metric("syncgate_held_responses") == 1, "the held response was dropped"
    finally:
        mirror.resume()
    stop.set()
    talker.join(30)
    assert not chatty_errors, f"a connection with traffic was closed: {chatty_errors}"
    _, body = acked.recv()
    assert parse_produce_response(body, 9).topics[topic_name][0].error_code == 0
    assert dest.high_watermark(topic_name, 0) >= 1
    # once their holds ended, both connections are idle like any other
    assert _closed_by_peer(acked.sock, 30) and _closed_by_peer(timed_out.sock, 30)
    for c in (acked, timed_out, chatty):
        c.close()
    print(f"\nidle timeout: {sg.metric('syncgate_client_idle_closes_total'):.0f} idle closes")
