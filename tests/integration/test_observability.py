"""Observability and reload against real Apache Kafka: /healthz and /readyz
during start-up and while the upstream broker is lost, /metrics through
promtool and scraped by a real Prometheus, and SIGHUP reloads applied and
rejected, TLS certificates swapped by a reload (invariant 6: a bad config
gets a clear log line, never a crash)."""

from __future__ import annotations

import copy
import json
import logging
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.parse
import urllib.request
import uuid

import pytest
import yaml
from confluent_kafka import KafkaException, Producer

from kafkabed import wait_until
from rawkafka import RawClient, i32, parse_produce_response, produce_body, record_batch, request_header
from sgfixture import SYNCGATE_BIN, free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import gated_setup

def readyz(sg) -> tuple[int, str]:
    return sg.http("/readyz")


def reload(sg, config, event: str = "reloaded") -> str:
    """Write `config` (a dict, or YAML text) to sg's file, send SIGHUP, and
    wait for the log line `event`; returns the log written after it began."""
    before = len(sg.log())
    with open(sg.path, "w") as f:
        if isinstance(config, str):
            f.write(config)
        else:
            yaml.safe_dump(config, f, sort_keys=False)
    os.kill(sg.proc.pid, signal.SIGHUP)
    return wait_until(lambda: (lambda tail: tail if f" {event} " in tail else None)(sg.log()[before:]),
                      timeout=20, what=f"{event} in the syncgate log")


def test_health_during_startup_and_upstream_loss(make_syncgate, make_cluster, dest, topic_name):
    """/readyz: 503 naming what is missing (the first progress report of a
    mirror that tracks a topic, at start-up; the upstream broker while it is
    down), 200 otherwise. /healthz: 200 throughout."""
    src = make_cluster("obs-src", brokers=1)
    bid = src.broker_ids[0]
    # the sync topic is on the source but not yet on the destination: the
    # mirror tracks it and has no progress to report
    src.create_topic(topic_name)
    sg = make_syncgate(src, mirrors=[mirror_conf("dr", dest, [topic_name])])
    assert sg.http("/healthz") == (200, "ok\n")
    code, body = readyz(sg)
    assert code == 503
    assert "not ready: mirror dr: no progress report yet" in body
    wait_until(lambda: "upstream" not in readyz(sg)[1], timeout=10, what="upstream probed")
    assert "not ready: mirror dr: no progress report yet" in readyz(sg)[1]

    dest.create_topic(topic_name)
    wait_until(lambda: readyz(sg) == (200, "ready\n"), timeout=30, what="/readyz 200")
    assert sg.metric("syncgate_upstream_up") == 1

    src.stop_broker(bid, kill=True)
    try:
        want = f"not ready: upstream {src.brokers[bid]} unreachable: Connection refused\n"
        wait_until(lambda: readyz(sg) == (503, want), timeout=15, what="/readyz 503 naming upstream")
        assert sg.http("/healthz") == (200, "ok\n")
        assert sg.metric("syncgate_upstream_up") == 0
        assert "WARN upstream_unreachable" in sg.log()
    finally:
        src.start_broker(bid)
    wait_until(lambda: readyz(sg) == (200, "ready\n"), timeout=30, what="/readyz 200 again")
    assert "INFO upstream_reachable" in sg.log()
    assert sg.proc.alive()


def connect_refused(port: int) -> bool:
    """True when a TCP connect to 127.0.0.1:port is refused."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        return True


def librdkafka_log(port: int, seconds: float) -> tuple[str, bool]:
    """What a librdkafka producer bootstrapping from 127.0.0.1:port logs
    (log and error callbacks) while it asks for metadata for `seconds`, and
    whether it got the metadata."""
    lines = []

    class Collect(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    logger = logging.getLogger(f"rdkafka-{uuid.uuid4().hex[:6]}")
    logger.propagate = False
    logger.addHandler(Collect())
    p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "reconnect.backoff.ms": 100,
                  "reconnect.backoff.max.ms": 500, "log_level": 7, "debug": "broker",
                  "error_cb": lambda e: lines.append(f"error_cb: {e}")}, logger=logger)
    ok = False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            p.list_topics(timeout=1)
            ok = True
            break
        except KafkaException:
            pass
        p.poll(0.1)
    p.poll(0.5)
    p.flush(0)
    return "\n".join(lines), ok


def test_listener_refuses_while_upstream_down(make_syncgate, make_cluster):
    """While the broker behind a sidecar is down, a connect to the sidecar is
    refused (the listener is closed), so clients move on to other brokers and
    librdkafka never prints its security.protocol hint (what a connection
    accepted and closed at once makes it say); with the broker back, the
    sidecar accepts and serves again."""
    src = make_cluster("lst-src", brokers=1)
    bid = src.broker_ids[0]
    sg = make_syncgate(src)
    wait_until(lambda: readyz(sg) == (200, "ready\n"), timeout=30, what="/readyz 200")
    assert not connect_refused(sg.port)

    src.stop_broker(bid, kill=True)
    try:
        t0 = time.monotonic()
        wait_until(lambda: connect_refused(sg.port), timeout=10, what="connects to the sidecar refused")
        print(f"\nconnects refused {time.monotonic() - t0:.1f} s after the broker was killed")
        assert "WARN listener_paused" in sg.log()
        log, ok = librdkafka_log(sg.port, 4)
        assert not ok
        assert "Connection refused" in log, log
        assert "security.protocol" not in log, log
        assert "ApiVersion" not in log, log
        assert sg.http("/healthz") == (200, "ok\n")  # the admin listener stays
        assert connect_refused(sg.port)
    finally:
        src.start_broker(bid)
    wait_until(lambda: not connect_refused(sg.port), timeout=30, what="the sidecar accepts again")
    assert "INFO listener_resumed" in sg.log()
    log, ok = librdkafka_log(sg.port, 20)
    assert ok, log
    c = RawClient("127.0.0.1", sg.port)
    try:
        src.create_topic("lst-after")
        (p,) = c.produce("lst-after", 0, [b"after"]).topics["lst-after"]
        assert p.error_code == 0, p
    finally:
        c.close()
    assert sg.proc.alive()


def test_metrics_pass_promtool(make_syncgate, make_testmirror, source, dest, topic_name):
    """/metrics after gated traffic is valid exposition format; the only lint
    is the KIP-named `_ms` histogram."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: run deploy/install-deps.sh"
    sg, _ = gated_setup(source, dest, make_syncgate, make_testmirror, topic_name, partitions=1)
    c = RawClient("127.0.0.1", sg.port)
    for i in range(3):
        (p,) = c.produce(topic_name, 0, [f"m{i}".encode()]).topics[topic_name]
        assert p.error_code == 0
    c.close()
    _, text = sg.http("/metrics")
    for family in ("syncgate_build_info", "syncgate_start_time_seconds",
                   "syncgate_config_reloads_total", "syncgate_upstream_up",
                   "syncgate_client_connections", "syncgate_mirror_sync_replication_latency_seconds"):
        assert f"# TYPE {family} " in text
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=30)
    problems = [line for line in (p.stdout + p.stderr).splitlines() if line.strip()]
    assert p.returncode == 0 and not problems, problems  # no lint finding at all


def test_prometheus_scrapes_syncgate(bed, make_syncgate, source):
    """A real Prometheus scrapes /metrics every second; a query through its
    HTTP API returns syncgate's value."""
    prometheus = shutil.which("prometheus")
    assert prometheus, "prometheus is missing: run deploy/install-deps.sh"
    sg = make_syncgate(source)
    start = sg.metrics()["syncgate_start_time_seconds"]
    d = os.path.join(bed.run_dir, f"prometheus-{uuid.uuid4().hex[:6]}")
    os.makedirs(d)
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        yaml.safe_dump({"global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
                        "scrape_configs": [{"job_name": "syncgate", "static_configs": [
                            {"targets": [f"127.0.0.1:{sg.admin_port}"]}]}]}, f)
    port = free_port()
    proc = bed.spawn(os.path.basename(d), [
        prometheus, f"--config.file={d}/prometheus.yml", f"--storage.tsdb.path={d}/data",
        f"--web.listen-address=127.0.0.1:{port}"])
    try:
        def query():
            q = urllib.parse.quote('syncgate_start_time_seconds{job="syncgate"}')
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?query={q}",
                                        timeout=5) as r:
                res = json.load(r)
            assert res["status"] == "success", res
            return res["data"]["result"]

        (series,) = wait_until(query, timeout=60, interval=0.5,
                               what="Prometheus returning syncgate_start_time_seconds")
        assert series["metric"]["instance"] == f"127.0.0.1:{sg.admin_port}"
        assert float(series["value"][1]) == start
    finally:
        assert proc.stop() is not None
    assert not proc.alive()


def test_reload_applies_live_settings_and_keeps_connections(make_syncgate, make_testmirror,
                                                            source, dest, topic_name):
    """SIGHUP with the topic dropped from sync_topics releases a held Produce
    response at once and stops gating new ones, on the same connection; the
    log level changes; a changed restart setting is logged and kept."""
    sg, mirror = gated_setup(source, dest, make_syncgate, make_testmirror, topic_name,
                             partitions=1)
    c = RawClient("127.0.0.1", sg.port)
    cfg = copy.deepcopy(sg.config)
    cfg["mirrors"][0]["sync_topics"] = ["no-such-topic"]
    cfg["log"]["level"] = "info"
    cfg["state"]["topic"] = "__syncgate_state_other"  # restart setting
    mirror.pause()
    try:
        c.send(0, 9, produce_body(9, -1, 30000, {topic_name: {0: record_batch([b"held"])}}))
        wait_until(lambda: sg.metric("syncgate_held_responses") == 1, timeout=10,
                   what="the Produce response held")
        t0 = time.monotonic()
        after = reload(sg, cfg)
        _, body = c.recv()
        released_after = time.monotonic() - t0
        (p,) = parse_produce_response(body, 9).topics[topic_name]
        assert p.error_code == 0 and p.base_offset >= 0
        assert released_after < 5, released_after
        # still paused, but no longer gated: acked at once
        t0 = time.monotonic()
        (p,) = c.produce(topic_name, 0, [b"after"], timeout_ms=30000).topics[topic_name]
        assert p.error_code == 0 and time.monotonic() - t0 < 5
    finally:
        mirror.resume()
    assert ('WARN reload_restart_required settings="state.topic"' in after)
    # debug before the reload, info after: a new connection logs no conn_accept
    assert "DEBUG conn_accept" in sg.log()
    RawClient("127.0.0.1", sg.port).metadata([topic_name])
    time.sleep(0.5)
    tail = sg.log()[sg.log().index(" INFO reloaded "):]
    assert "DEBUG" not in tail, tail
    m = sg.metrics()
    assert m['syncgate_config_reloads_total{result="success"}'] == 1
    assert m['syncgate_config_reloads_total{result="failure"}'] == 0
    assert m["syncgate_config_last_reload_successful"] == 1
    c.close()


def test_reload_rejected_keeps_the_running_config(make_syncgate, source, dest, topic_name, tmp_path):
    """An invalid file (YAML syntax, then settings errors) is rejected with an
    ERROR line per `file:line:col` error; the process, its connections and
    its configuration stay; a valid file afterwards applies."""
    source.create_topic(topic_name)
    dest.create_topic(topic_name)
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic_name])])
    wait_until(lambda: topic_name in sg.http(f"/v1/mirrors?mirror=dr&topic={topic_name}")[1],
               timeout=30, what="the gate knowing the topic")
    c = RawClient("127.0.0.1", sg.port)
    c.metadata([topic_name])
    good = yaml.safe_dump(sg.config, sort_keys=False)
    broken = [good + "gate: [unclosed\n",
              good.replace("max_hold_ms: 30000", "max_hold_ms: 0") + "bogus: 1\n"]
    for i, text in enumerate(broken, 1):
        # --check-config on the same file prints the errors the reload must log
        probe = tmp_path / f"broken{i}.yaml"
        probe.write_text(text)
        check = subprocess.run([SYNCGATE_BIN, "--check-config", str(probe)], capture_output=True,
                               text=True, timeout=10)
        assert check.returncode == 2 and check.stderr
        before = len(sg.log())
        reload(sg, text, event="reload_rejected")
        after = wait_until(lambda: (lambda t: t if t.count(" reload_error ") ==
                                    len(check.stderr.splitlines()) else None)(sg.log()[before:]),
                           timeout=5, what="every reload_error line")
        assert (f'ERROR reload_rejected path="{sg.path}" errors={len(check.stderr.splitlines())} '
                in after)
        for line in check.stderr.splitlines():
            where, _, message = line.replace(str(probe), sg.path).partition(": ")
            assert f'ERROR reload_error at="{where}" message="' in after, (line, after)
        assert sg.proc.alive()
        m = sg.metrics()
        assert m['syncgate_config_reloads_total{result="failure"}'] == i
        assert m["syncgate_config_last_reload_successful"] == 0
        # the old config stays: the mirror still gates the topic, max_hold_ms unchanged
        _, body = sg.http(f"/v1/mirrors?mirror=dr&topic={topic_name}")
        (t,) = json.loads(body)["mirrors"][0]["topics"]
        assert t["desired"] == "SYNC"
        # and the connection still works
        _, topics = c.metadata([topic_name])
        assert topic_name in topics
    reload(sg, good)
    m = sg.metrics()
    assert m['syncgate_config_reloads_total{result="success"}'] == 1
    assert m["syncgate_config_last_reload_successful"] == 1
    c.close()


def _self_signed(d: str, name: str) -> tuple[str, str]:
    """A self-signed certificate and key with CN=name, in `d`."""
    cert, key = os.path.join(d, f"{name}.crt"), os.path.join(d, f"{name}.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", f"/CN={name}", "-keyout", key, "-out", cert],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def _tls_connect(port: int) -> ssl.SSLSocket:
    """A TLS connection that accepts any certificate (we only read it)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10))


def _served_cn(s: ssl.SSLSocket) -> str:
    """The CN of the certificate the server presented."""
    pem = ssl.DER_cert_to_PEM_cert(s.getpeercert(binary_form=True))
    out = subprocess.run(["openssl", "x509", "-noout", "-subject"], input=pem, text=True,
                         capture_output=True, check=True).stdout
    return out.strip().rsplit("=", 1)[1].strip()


def _api_versions_v0(s) -> int:
    """Send ApiVersions v0 on `s`; returns the response's ErrorCode."""
    frame = request_header(18, 0, 7)
    s.sendall(i32(len(frame)) + frame)
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:4], "big"):
        chunk = s.recv(65536)
        assert chunk, "connection closed"
        buf += chunk
    assert int.from_bytes(buf[4:8], "big") == 7
    return int.from_bytes(buf[8:10], "big", signed=True)


def test_reload_swaps_tls_certificate_and_keeps_connections(make_syncgate, source, tmp_path):
    """listen.tls.cert/key are re-read on SIGHUP: new connections get the new
    certificate, open ones continue; an unreadable certificate is rejected
    and the one in force stays."""
    a_cert, a_key = _self_signed(str(tmp_path), "cert-a")
    b_cert, b_key = _self_signed(str(tmp_path), "cert-b")
    cert, key = str(tmp_path / "server.crt"), str(tmp_path / "server.key")
    shutil.copy(a_cert, cert)
    shutil.copy(a_key, key)
    port = free_port()
    sg = make_syncgate(source, extra={"listen": {"kafka": f"127.0.0.1:{port}",
                                                 "tls": {"cert": cert, "key": key}}})
    old = _tls_connect(port)
    assert _served_cn(old) == "cert-a"
    assert _api_versions_v0(old) == 0

    shutil.copy(b_cert, cert)
    shutil.copy(b_key, key)
    reload(sg, sg.config)
    new = _tls_connect(port)
    assert _served_cn(new) == "cert-b"
    assert _api_versions_v0(new) == 0
    assert _api_versions_v0(old) == 0  # not dropped by the reload

    with open(cert, "w") as f:
        f.write("not a certificate\n")
    after = reload(sg, sg.config, event="reload_failed")
    assert "ERROR reload_failed" in after
    third = _tls_connect(port)
    assert _served_cn(third) == "cert-b"
    assert _api_versions_v0(third) == 0 and _api_versions_v0(old) == 0
    m = sg.metrics()
    assert m['syncgate_config_reloads_total{result="failure"}'] == 1
    assert m['syncgate_config_reloads_total{result="success"}'] == 1
    for s in (old, new, third):
        s.close()
