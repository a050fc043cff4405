"""Limits and lifecycle of the proxy against real Apache Kafka: held-bytes
caps stop reading (backpressure) and reading resumes after release; no fd or
memory leak over 10,000 connections; the upstream connect timeout; graceful
SIGTERM; the broker killed under many in-flight gated requests (S12)."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest

from kafkabed import wait_until
from rawkafka import RawClient, produce_body, record_batch
from sgfixture import free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import NOT_ENOUGH_REPLICAS_AFTER_APPEND, gated_topic, wait_sync


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def gated(source, dest, make_syncgate, make_testmirror, topic, **kw):
    return gated_topic(source, dest, make_syncgate, make_testmirror, topic, **kw)


# -- backpressure -------------------------------------------------------------------

@pytest.mark.parametrize("limits,nconns", [
    ({"max_held_bytes_per_connection": 16384}, 1),
    ({"max_held_bytes": 16384, "max_held_bytes_per_connection": 16384}, 2),
], ids=["per-connection", "global"])
def test_held_bytes_cap_stops_reading_then_resumes(make_syncgate, make_testmirror, source, dest,
                                                   topic_name, limits, nconns):
    """Invariant 5: with the mirror paused, pipelined acks=all Produce
    requests (20 KB each, 40 MB in all) stop being read once the held
    responses pass the cap — few reach the broker, syncgate's RSS stays
    small — and after the mirror resumes every response arrives, in order,
    successful."""
    sg, mirror = gated(source, dest, make_syncgate, make_testmirror, topic_name, limits=limits)
    rss0 = rss_kb(sg.proc.pid)
    per_conn = 2000 // nconns
    batch = record_batch([b"x" * 20000])
    body = produce_body(9, -1, 60000, {topic_name: {0: batch}})
    clients = [RawClient("127.0.0.1", sg.port, timeout=120) for _ in range(nconns)]
    mirror.pause()
    sent = [0] * nconns

    def pump(i):
        for _ in range(per_conn):
            clients[i].send(0, 9, body)
            sent[i] += 1

    threads = [threading.Thread(target=pump, args=(i,), daemon=True) for i in range(nconns)]
    try:
        for t in threads:
            t.start()
        time.sleep(5)
        appended = source.high_watermark(topic_name, 0)
        rss_held = rss_kb(sg.proc.pid)
        held = sg.metric("syncgate_held_bytes")
        # what was forwarded before the held responses crossed the cap is
        # still read (socket buffers, FLOW_HIGH upstream): timing-dependent,
        # but far from all of it
        assert appended < 1000, f"{appended} requests read despite the cap"
        assert sum(sent) < 2000, "the clients were never pushed back"
        assert rss_held - rss0 < 30 * 1024, (rss0, rss_held)
        # requests already forwarded when the cap was crossed are still held
        # (the cap stops reading; it cannot recall what the broker has)
        assert held < appended * 1024, (held, appended)
    finally:
        mirror.resume()
    for t in threads:
        t.join(120)
    for c in clients:
        corrs = [c.recv()[0] for _ in range(per_conn)]
        assert corrs == list(range(1, per_conn + 1))
        c.close()
    assert source.high_watermark(topic_name, 0) == 2000
    wait_until(lambda: sg.metric("syncgate_held_bytes") == 0, timeout=10, what="nothing held")
    print(f"\nbackpressure[{nconns} conn]: rss before {rss0} kB, while held {rss_held} kB, "
          f"{appended} of 2000 requests read while the mirror was paused, held bytes {held}")


def test_in_flight_cap_stops_reading_small_pipelined_requests(make_syncgate, make_testmirror,
                                                             source, dest, topic_name):
    """Invariant 5 for tiny requests: held bytes stay under the caps, yet a
    client pipelining thousands of gated acks=all Produce requests is still
    pushed back — at most 1024 requests per connection await a response —
    and after the mirror resumes every response arrives, in order."""
    sg, mirror = gated(source, dest, make_syncgate, make_testmirror, topic_name)
    body = produce_body(9, -1, 60000, {topic_name: {0: record_batch([b"x"])}})
    c = RawClient("127.0.0.1", sg.port, timeout=120)
    total = 5000
    sent = [0]

    def pump():
        for _ in range(total):
            c.send(0, 9, body)
            sent[0] += 1

    mirror.pause()
    t = threading.Thread(target=pump, daemon=True)
    try:
        t.start()
        wait_until(lambda: source.high_watermark(topic_name, 0) >= 1000, timeout=30,
                   what="the first requests appended")
        time.sleep(2)
        appended = source.high_watermark(topic_name, 0)
        assert appended <= 1024 + 2, f"{appended} requests read with the mirror paused"
    finally:
        mirror.resume()
    t.join(120)
    assert [c.recv()[0] for _ in range(total)] == list(range(1, total + 1))
    c.close()
    assert source.high_watermark(topic_name, 0) == total


# -- connection churn ---------------------------------------------------------------

def test_no_fd_or_memory_leak_after_10000_connections(make_syncgate, source):
    """10,000 connects and disconnects (a third with a request answered, a
    third closing with a request in flight, a third idle): afterwards the fd
    count is unchanged and RSS grew by less than 2 MB."""
    sg = make_syncgate(source)
    pid = sg.proc.pid
    from rawkafka import TAGS0, i32, request_header, string
    body = string("churn", True) + string("1.0", True) + TAGS0
    req = request_header(18, 3, 1) + body
    frame = i32(len(req)) + req

    def churn(n):
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", sg.port), timeout=10)
            if i % 3 == 0:
                s.sendall(frame)
                s.recv(4)
            elif i % 3 == 1:
                s.sendall(frame)
            s.close()

    churn(500)  # warm up allocator pools
    wait_until(lambda: sg.metrics().get("syncgate_client_connections") == 0, timeout=30,
               what="warm-up connections closed")
    # the baseline: the most fds seen while idle (its own sockets settle
    # after start: librdkafka's broker connections, the admin probe)
    samples = []
    for _ in range(6):
        samples.append(fds(pid))
        time.sleep(0.5)
    fd0, rss0 = max(samples), rss_kb(pid)
    churn(10000)
    wait_until(lambda: sg.metrics().get("syncgate_client_connections") == 0, timeout=60,
               what="all connections closed")
    # syncgate's own short-lived sockets (the admin's upstream probe each
    # second, librdkafka's broker connections) come and go: a leak is an fd
    # count that never comes back down
    fd1 = wait_until(lambda: (lambda n: n <= fd0 and n)(fds(pid)), timeout=15,
                     what=f"fd count back to {fd0} (now {fds(pid)})")
    rss1 = rss_kb(pid)
    print(f"\nchurn: fds {fd0} -> {fd1}, rss {rss0} kB -> {rss1} kB")
    assert rss1 - rss0 < 2048


# -- upstream connect timeout -------------------------------------------------------

def test_upstream_connect_timeout_closes_the_client(make_syncgate, source):
    """The broker address is a black hole (a listening socket whose backlog
    is full, so SYNs are dropped): the client is closed after
    upstream.connect_timeout_ms, with the reason logged."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(0)
    fillers = []
    for _ in range(4):  # fill the accept queue; later SYNs go unanswered
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(hole.getsockname())
        fillers.append(s)
    time.sleep(0.2)
    try:
        sg = make_syncgate(source, extra={"upstream": {
            "broker": "127.0.0.1:%d" % hole.getsockname()[1], "connect_timeout_ms": 1000}})
        c = RawClient("127.0.0.1", sg.port, timeout=10)
        t0 = time.monotonic()
        with pytest.raises(ConnectionError):
            c.api_versions()
        waited = time.monotonic() - t0
        c.close()
        assert 0.8 <= waited <= 3.0, waited
        assert "upstream_connect_timeout" in sg.log()
    finally:
        for s in fillers:
            s.close()
        hole.close()


# -- graceful shutdown --------------------------------------------------------------

@pytest.mark.parametrize("release", ["mirror_resumes", "hold_times_out"])
def test_sigterm_lets_a_held_response_finish_then_exits_0(make_syncgate, make_testmirror, source,
                                                          dest, topic_name, release):
    """SIGTERM with a held Produce response: new connections are refused, the
    held response still goes out (released by the mirror, or at its timeout
    with the down-mapped code), then the process exits 0."""
    sg, mirror = gated(source, dest, make_syncgate, make_testmirror, topic_name)
    c = RawClient("127.0.0.1", sg.port, timeout=30)
    mirror.pause()
    try:
        c.send(0, 9, produce_body(9, -1, 4000, {topic_name: {0: record_batch([b"x"])}}))
        wait_until(lambda: sg.metric("syncgate_held_responses") == 1, timeout=10,
                   what="the response held")
        sg.proc.popen.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", sg.port), timeout=2).recv(1)
        assert sg.proc.alive()
        if release == "mirror_resumes":
            mirror.resume()
        from rawkafka import parse_produce_response
        _, body = c.recv()
        (p,) = parse_produce_response(body, 9).topics[topic_name]
        if release == "mirror_resumes":
            assert p.error_code == 0
        else:
            assert p.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert sg.proc.popen.wait(10) == 0
    finally:
        mirror.resume()
        c.close()
    assert "shutdown" in sg.log()


# -- broker killed mid-flight (S12) ----------------------------------------------------

def test_broker_killed_with_many_in_flight(make_syncgate, make_testmirror, make_cluster, dest,
                                           topic_name):
    """S12: four connections pipeline 300 acks=all Produce requests each to a
    gated topic; the broker is SIGKILLed mid-flight. Every response a client
    got is a success the mirror confirmed (its offset is on the destination)
    or a retriable error — never -1 — and every connection ends closed."""
    src = make_cluster("s12k", brokers=1)
    sg, mirror = gated(src, dest, make_syncgate, make_testmirror, topic_name)
    body = produce_body(9, -1, 30000, {topic_name: {0: record_batch([b"y" * 200])}})
    results: list[list] = [[] for _ in range(4)]

    def client(i):
        c = RawClient("127.0.0.1", sg.port, timeout=60)
        from rawkafka import parse_produce_response
        try:
            for _ in range(300):
                c.send(0, 9, body)
            for _ in range(300):
                _, b = c.recv()
                results[i].append(parse_produce_response(b, 9).topics[topic_name][0])
        except (ConnectionError, OSError):
            results[i].append("closed")
        finally:
            c.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    wait_until(lambda: dest.high_watermark(topic_name, 0) > 100, timeout=30,
               what="some records mirrored (and acked) before the kill")
    src.stop_broker(src.broker_ids[0], kill=True)
    for t in threads:
        t.join(120)
    dest_hw = dest.high_watermark(topic_name, 0)
    oks = 0
    for r in results:
        assert r and r[-1] == "closed" or len(r) == 300
        for p in r:
            if p == "closed":
                continue
            assert p.error_code != -1
            if p.error_code == 0:
                oks += 1
                assert p.base_offset < dest_hw, "acked but not on the mirror"
            else:
                assert p.error_code in (NOT_ENOUGH_REPLICAS_AFTER_APPEND, 6, 7, 19), p
    print(f"\nS12: {oks} acked before the kill, all on the destination (HW {dest_hw})")
    assert sg.proc.alive()


def admin_sockets(port: int) -> tuple[int, int]:
    """Established TCP connections to 127.0.0.1:port as (accepted, waiting):
    a connection still in the listen backlog has no socket inode yet."""
    accepted = waiting = 0
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "01" and int(local.split(":")[1], 16) == port:
                if inode == "0":
                    waiting += 1
                else:
                    accepted += 1
    return accepted, waiting


def test_admin_connection_cap(make_syncgate, source, topic_name):
    """admin.max_connections: with the cap open and idle, further admin
    connections are not served (they wait in the listen backlog, holding no
    file descriptor of syncgate's) and a log line says so; the Kafka data
    path still works; once the idle ones close, the waiting request is
    answered, /metrics answers again and counts the cap reached."""
    cap = 8
    admin_port = free_port()
    sg = make_syncgate(source, extra={"admin": {"listen": f"127.0.0.1:{admin_port}",
                                                "max_connections": cap}})
    assert sg.http("/healthz") == (200, "ok\n")
    wait_until(lambda: sg.metric("syncgate_admin_connections") <= 1, timeout=10,
               what="earlier admin connections closed")
    idle = [socket.create_connection(("127.0.0.1", admin_port), timeout=5) for _ in range(cap + 4)]
    waiting = None
    try:
        wait_until(lambda: "WARN admin_connections_at_cap" in sg.log(), timeout=10,
                   what="admin_connections_at_cap logged")
        # syncgate accepted `cap` of them; the others wait in the backlog
        wait_until(lambda: admin_sockets(admin_port) == (cap, 4), timeout=5,
                   what=f"{cap} admin connections accepted, 4 waiting")
        waiting = socket.create_connection(("127.0.0.1", admin_port), timeout=5)
        waiting.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        waiting.settimeout(2)
        with pytest.raises(socket.timeout):
            waiting.recv(100)  # not served while at the cap
        # the Kafka data path is not affected
        source.create_topic(topic_name)
        c = RawClient("127.0.0.1", sg.port)
        try:
            (p,) = c.produce(topic_name, 0, [b"through"]).topics[topic_name]
            assert p.error_code == 0, p
        finally:
            c.close()
    finally:
        for s in idle:
            s.close()
    try:
        waiting.settimeout(10)
        reply = b""
        while chunk := waiting.recv(4096):
            reply += chunk
        assert reply.startswith(b"HTTP/1.0 200") or reply.startswith(b"HTTP/1.1 200"), reply
        assert reply.endswith(b"ok\n"), reply
    finally:
        waiting.close()
    assert sg.metric("syncgate_admin_connection_cap_reached_total") >= 1
    assert sg.metric("syncgate_admin_connections") <= 1
    assert "INFO admin_connections_below_cap" in sg.log()
    assert sg.proc.alive()
