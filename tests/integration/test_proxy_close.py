"""Connection ends against real Apache Kafka (invariant 7, every byte read is
delivered): a client that closes at once after an acks=0 Produce (S14), with
the upstream connect done or still in progress."""

from __future__ import annotations

import select
import socket
import threading
import time
from typing import Optional

from kafkabed import wait_until
from rawkafka import TAGS0, i32, produce_body, record_batch, request_header, string
from sgfixture import make_syncgate  # noqa: F401 - fixture


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
    wait_until(lambda: linger_outcomes(sg)[0] >= n, timeout=15, what="lingers closed")
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
        wait_until(lambda: linger_outcomes(sg)[0] >= rounds, timeout=15, what="lingers closed")
        assert linger_outcomes(sg)[1] == 0
    finally:
        relay.close()
