"""A broker that advertises an address syncgate cannot dial (S16, the shape
of deploy/kubernetes/syncgate-sidecar.yaml): its client listener is bound to
127.0.0.1:P but advertised as 127.0.0.2:P, where nothing listens.
syncgate's own clients (state log, decider, source high watermarks)
bootstrap from upstream.broker, find the advertised address refused and
dial the syncgate that fronts the broker instead — here this syncgate
itself, so upstream.broker: the sidecar becomes ready, the topic is
promoted, acks are held and released."""

from __future__ import annotations

import os
import socket
import time
import uuid

from kafkabed import Mirror, wait_until
from rawkafka import RawClient, parse_produce_response, produce_body, record_batch
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import assert_held, wait_sync


def advertise_on(cluster, broker_id: int, host: str) -> None:
    """Restart the broker with its PLAINTEXT listener advertised on `host`
    (still bound to 127.0.0.1)."""
    port = cluster.brokers[broker_id].rsplit(":", 1)[1]
    path = os.path.join(cluster.dir, f"node-{broker_id}", "server.properties")
    lines = open(path).read().splitlines()
    out = [ln.replace(f"PLAINTEXT://127.0.0.1:{port}", f"PLAINTEXT://{host}:{port}")
           if ln.startswith("advertised.listeners=") else ln for ln in lines]
    assert out != lines
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    cluster.stop_broker(broker_id)
    cluster.start_broker(broker_id)


def test_broker_advertising_undialable_address_s16(bed, make_cluster, make_syncgate, dest,
                                                   topic_name):
    src = make_cluster("s16src", brokers=1, listeners=["REPL:PLAINTEXT"])
    bid = src.broker_ids[0]
    src.create_topic(topic_name)
    dest.create_topic(topic_name)
    advertise_on(src, bid, "127.0.0.2")
    port = int(src.brokers[bid].rsplit(":", 1)[1])
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.2", port)) != 0, "something listens on the advertised address"

    # the mirror reads the source through its own listener, as replication does
    name = f"tm-{uuid.uuid4().hex[:6]}"
    bed.sh("testmirror.sh", "start", name, "--source", src.listener(bid, "REPL"),
           "--to", dest.name, "--topic", topic_name)
    mirror = Mirror(bed, "testmirror", name)
    try:
        t0 = time.monotonic()
        sg = make_syncgate(src, mirrors=[mirror_conf("dr", dest, [topic_name])])
        wait_until(lambda: sg.http("/readyz")[0] == 200, timeout=60, what="/readyz 200")
        ready_s = time.monotonic() - t0
        wait_sync(sg, "dr", topic_name)
        print(f"s16: ready after {ready_s:.1f}s, promoted after {time.monotonic() - t0:.1f}s")
        assert f"broker=127.0.0.2:{port} node={bid}" in sg.log()
        assert "source_route " in sg.log()

        c = RawClient("127.0.0.1", sg.port)
        brokers, _ = c.metadata([topic_name])
        assert brokers == [(bid, "127.0.0.1", sg.port)]  # clients see syncgate only
        mirror.pause()
        try:
            c.send(0, 9, produce_body(9, -1, 30000, {topic_name: {0: record_batch([b"held"])}}))
            assert_held(c, 2, after=30, what="acked while the mirror was paused")
        finally:
            mirror.resume()
        _, body = c.recv()
        (p,) = parse_produce_response(body, 9).topics[topic_name]
        assert p.error_code == 0
        assert dest.high_watermark(topic_name, 0) > p.base_offset
        c.close()
    finally:
        mirror.stop()
