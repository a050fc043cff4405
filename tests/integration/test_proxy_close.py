"""Connection ends against real Apache Kafka (invariant 7, every byte read is
delivered): a client that closes at once after an acks=0 Produce (S14), with
the upstream connect done or still in progress; a client that shuts down its
write side (TCP half-close) and still reads gets every response it is owed,
held ones included, as it would from the broker directly."""

from __future__ import annotations

import select
import socket
import threading
import time
from typing import Optional

from kafkabed import wait_until
from rawkafka import (TAGS0, RawClient, array, i8, i32, parse_api_versions, parse_metadata_v12,
                      parse_produce_response, produce_body, record_batch, request_header, string)
from sgfixture import make_syncgate  # noqa: F401 - fixture
from sghelpers import gated_setup


def acks0_write(topic: str, value: bytes) -> bytes:
    """ApiVersions v3 and Produce v9 acks=0 (one record), as one write."""
    av = request_header(18, 3, 1) + string("rawkafka", True) + string("1.0", True) + TAGS0
    prod = request_header(0, 9, 2) + produce_body(9, 0, 5000, {topic: {0: record_batch([value])}})
    return i32(len(av)) + av + i32(len(prod)) + prod


def send_and_close(port: int, data: bytes) -> None:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(data)
    s.close()


def linger_outcomes(sg) -> tuple[float, float]:
    return (sg.metric('syncgate_client_close_lingers_total{outcome="delivered"}'),
            sg.metric('syncgate_client_close_lingers_total{outcome="expired"}'))


def half_close_outcomes(sg) -> tuple[float, float]:
    return (sg.metric('syncgate_client_half_closes_total{outcome="delivered"}'),
            sg.metric('syncgate_client_half_closes_total{outcome="client_gone"}'))


def closed_delivered(sg) -> float:
    """Connections whose end delivered everything: a close with a response
    owed (here ApiVersions) looks like a half-close until a write to the
    client fails, so each ends either as a delivered half-close or in a
    linger (after the failed write, or with nothing owed)."""
    return half_close_outcomes(sg)[0] + linger_outcomes(sg)[0]


def test_acks0_then_close_delivers_every_record_s14(make_syncgate, source, topic_name):
    """S14: 200 connections each send ApiVersions + Produce acks=0 in one write
    and close at once: all 200 records are on the broker."""
    source.create_topic(topic_name)
    sg = make_syncgate(source)
    n = 200
    for i in range(n):
        send_and_close(sg.port, acks0_write(topic_name, b"r%d" % i))
    wait_until(lambda: source.high_watermark(topic_name, 0) >= n, timeout=30,
               what=f"{n} acks=0 records on the broker")
    time.sleep(0.5)
    values = sorted(r.value for r in source.consume(topic_name, 0, end=n))
    assert values == sorted(b"r%d" % i for i in range(n))
    # (and the fixture's own connect-and-close probe)
    wait_until(lambda: closed_delivered(sg) >= n + 1, timeout=15, what="connections closed")
    assert linger_outcomes(sg)[1] == 0
    assert sg.metrics()["syncgate_client_connections"] == 0


class SlowAcceptRelay:
    """A TCP relay to `target` whose listen queue can be kept full, so that a
    new connection's SYN is dropped and its connect stays in progress (the
    kernel retries the SYN after about a second) until release()."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(0)  # one queued connection fills the queue
        self.port = self.lsock.getsockname()[1]
        self.accepting = threading.Event()
        self.accepting.set()
        self.closed = False
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while chunk := a.recv(65536):
                b.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

    def _accept_loop(self) -> None:
        while not self.closed:
            self.accepting.wait()
            # never blocked inside accept() once block() cleared the flag:
            # poll briefly, then look at the flag again
            try:
                ready, _, _ = select.select([self.lsock], [], [], 0.05)
            except (OSError, ValueError):
                return
            if not ready or not self.accepting.is_set():
                continue
            try:
                conn, _ = self.lsock.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.target)
            except OSError:
                conn.close()
                continue
            threading.Thread(target=self._pump, args=(conn, up), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, conn), daemon=True).start()

    def block(self) -> Optional[socket.socket]:
        """Stop accepting and fill the queue; returns the filler connection,
        or None when the queue is full already (syncgate's own clients and
        its upstream probe connect through the relay too): either way the
        next connect stays in progress."""
        self.accepting.clear()
        time.sleep(0.2)  # let an accept() already under way return first
        try:
            return socket.create_connection(("127.0.0.1", self.port), timeout=3)
        except OSError:
            return None

    def release(self) -> None:
        self.accepting.set()

    def close(self) -> None:
        self.closed = True
        self.accepting.set()
        self.lsock.close()


def test_acks0_sent_before_upstream_connect_finished_s14(make_syncgate, source, topic_name):
    """S14, connect variant: the client writes and closes while syncgate's
    upstream connect is still in progress (its SYN dropped by a full listen
    queue); once the connect completes the record reaches the broker."""
    source.create_topic(topic_name)
    host, port = source.brokers[source.broker_ids[0]].rsplit(":", 1)
    relay = SlowAcceptRelay((host, int(port)))
    sg = make_syncgate(source, extra={"upstream": {"broker": f"127.0.0.1:{relay.port}",
                                                   "connect_timeout_ms": 10000}})
    try:
        rounds = 3
        for i in range(rounds):
            filler = relay.block()
            send_and_close(sg.port, acks0_write(topic_name, b"c%d" % i))
            time.sleep(0.5)  # syncgate's SYN is being dropped: the connect is pending
            assert source.high_watermark(topic_name, 0) == i
            relay.release()
            if filler:
                filler.close()
            wait_until(lambda: source.high_watermark(topic_name, 0) == i + 1, timeout=15,
                       what=f"record {i} delivered after the connect completed")
        values = [r.value for r in source.consume(topic_name, 0, end=rounds)]
        assert values == [b"c%d" % i for i in range(rounds)]
        wait_until(lambda: closed_delivered(sg) >= rounds + 1, timeout=15,
                   what="connections closed")
        assert linger_outcomes(sg)[1] == 0
    finally:
        relay.close()


def half_closed_exchange(port: int, topic: str, value: bytes, acks: int = 1) -> list:
    """ApiVersions v3, Metadata v12 and Produce v9 (one record, `acks`) sent
    at once, then shutdown(SHUT_WR); returns the three responses read after
    it, in arrival order, as (correlation id, parsed), and checks that the
    connection then ends."""
    c = RawClient("127.0.0.1", port, timeout=60)
    c.send(18, 3, string("rawkafka", True) + string("1.0", True) + TAGS0)
    c.send(3, 12, array([b"\x00" * 16 + string(topic, True) + TAGS0], True) + i8(0) + i8(0) + TAGS0)
    c.send(0, 9, produce_body(9, acks, 30000, {topic: {0: record_batch([value])}}))
    c.sock.shutdown(socket.SHUT_WR)
    out = []
    for parse in (lambda b: parse_api_versions(b, 3), parse_metadata_v12,
                  lambda b: parse_produce_response(b, 9)):
        corr, body = c.recv()
        out.append((corr, parse(body)))
    assert c.sock.recv(1) == b"", "the connection ends after the last response"
    c.close()
    return out


def test_half_closed_client_reads_every_response(make_syncgate, source, topic_name):
    """A raw client sends ApiVersions, Metadata and Produce acks=1, shuts down
    its write side and reads: through syncgate it gets the same three
    responses, in order, as directly from the broker, then the close."""
    source.create_topic(topic_name)
    sg = make_syncgate(source)
    wait_until(lambda: linger_outcomes(sg)[0] == 1, timeout=15, what="the fixture's probe closed")
    direct_port = int(source.brokers[source.broker_ids[0]].rsplit(":", 1)[1])
    direct = half_closed_exchange(direct_port, topic_name, b"direct")
    via = half_closed_exchange(sg.port, topic_name, b"via-syncgate")
    offsets = []
    for got in (direct, via):
        assert [corr for corr, _ in got] == [1, 2, 3]
        (_, (av_err, apis)), (_, (_, topics)), (_, produced) = got
        assert av_err == 0 and 0 in apis and 3 in apis
        assert topics[topic_name][1] == [0]
        (p,) = produced.topics[topic_name]
        assert p.error_code == 0
        offsets.append(p.base_offset)
    assert offsets == [0, 1]
    assert [r.value for r in source.consume(topic_name, 0, end=2)] == [b"direct", b"via-syncgate"]
    wait_until(lambda: half_close_outcomes(sg) == (1, 0), timeout=15,
               what="the half-close ended with everything delivered")
    assert linger_outcomes(sg) == (1, 0), "nothing owed was dropped"
    assert sg.metrics()["syncgate_client_connections"] == 0
    assert "client_half_closed" in sg.log()


def test_half_closed_client_gets_its_held_ack(make_syncgate, make_testmirror, source, dest,
                                              topic_name):
    """Held responses included: with the mirror paused, the same exchange with
    an acks=all Produce to a SYNC topic. The ApiVersions and Metadata answers
    come, the ack is held (not dropped) after the half-close; once the mirror
    resumes the client reads it, the record already on the destination."""
    sg, mirror = gated_setup(source, dest, make_syncgate, make_testmirror, topic_name,
                             partitions=1)
    mirror.pause()
    seen = []

    def resume():
        seen.append(sg.metric("syncgate_held_responses"))
        mirror.resume()

    timer = threading.Timer(2.0, resume)
    timer.start()
    try:
        got = half_closed_exchange(sg.port, topic_name, b"held", acks=-1)
    finally:
        timer.join()
    assert seen == [1], "the ack was held while the client was half-closed"
    assert "client_half_closed" in sg.log()
    (p,) = got[2][1].topics[topic_name]
    assert p.error_code == 0
    assert dest.high_watermark(topic_name, 0) > p.base_offset
    wait_until(lambda: half_close_outcomes(sg)[0] == 1, timeout=15,
               what="the half-close ended with everything delivered")
