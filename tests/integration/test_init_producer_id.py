"""The InitProducerId request a switched sidecar sends its broker for a
client's idempotent producer (proxy/pidmap.c, docs/switchover.md "Producer
state"), built by codec/init_producer_id.c, against a real broker: every
version v0–v5 is answered with a fresh producer id, and two requests get two
different ids (what makes a rewritten batch unique on the destination). A
broker that just started answers COORDINATOR_LOAD_IN_PROGRESS (14) until it
holds a producer id block — which is why pidmap.c asks again after a backoff
on that code instead of closing the connection."""

from __future__ import annotations

import os
import struct
import subprocess
import time

import pytest

from rawkafka import RawClient
from kafkabed import REPO

pytestmark = pytest.mark.kafka

FRAME_BIN = os.path.join(REPO, "build", "tests", "codec", "init-producer-id-frame")


def init_producer_id(client: RawClient, version: int) -> tuple[int, int, int]:
    """Send syncgate's own frame; (ErrorCode, ProducerId, ProducerEpoch)."""
    frame = bytes.fromhex(subprocess.check_output([FRAME_BIN, str(version)], text=True).strip())
    client.send_raw(frame)
    size = struct.unpack(">i", client._read_exact(4))[0]
    resp = client._read_exact(size)
    assert struct.unpack(">i", resp[:4])[0] == 1, "correlation id"
    body = resp[5:] if version >= 2 else resp[4:]  # response header v1 (tags) from v2
    _throttle, err, pid, epoch = struct.unpack(">ihqh", body[:16])
    assert len(body) == (17 if version >= 2 else 16), body.hex()
    return err, pid, epoch


def test_every_version_of_the_sidecars_init_producer_id_gets_a_fresh_id(source):
    host, port = source.bootstrap.rsplit(":", 1)
    c = RawClient(host, int(port))
    try:
        deadline = time.monotonic() + 60
        while True:  # as the sidecar does: a retriable code is asked again
            err, pid, epoch = init_producer_id(c, 4)
            print(f"\nInitProducerId v4 (first): error {err} producer id {pid}")
            if err != 14 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert err == 0 and pid >= 0, (err, pid)
        seen = {pid}
        for version in range(6):
            for _ in range(2):
                err, pid, epoch = init_producer_id(c, version)
                print(f"\nInitProducerId v{version}: error {err} producer id {pid} epoch {epoch}")
                assert err == 0 and pid >= 0 and epoch == 0, (version, err, pid, epoch)
                assert pid not in seen, "each request gets its own id"
                seen.add(pid)
    finally:
        c.close()
