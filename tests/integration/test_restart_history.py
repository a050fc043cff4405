"""Restart with history (scenario S13; invariant 1, "only the
current state decides"): a state log holding an earlier demotion (ALTER
ASYNC, RELEASE, or an automatic DEMOTE) followed by a re-promotion must not
let the records replayed while a restarting sidecar catches up on the log —
or while a reload adds a mirror — act on live held responses.

Each restart test builds the history through syncgate itself (syncgate-ctl,
or a real all-partitions-failing demotion), pauses the test mirror, SIGKILLs
syncgate, starts it again with the same config, connects as soon as the port
accepts and sends one Produce v9 acks=-1 (TimeoutMs 8000) while it still
reads the state log. To make that window wide, the log is long: PAD no-op
ALTER SYNC records (as `syncgate-ctl --alter --sync` writes them) sit
before the demotion. Right: no success while the mirror is paused; error 20
(NOT_ENOUGH_REPLICAS_AFTER_APPEND, Produce v9's down-mapped timeout) at ~90 %
of the timeout."""

from __future__ import annotations

import copy
import json
import select
import socket
import time
import uuid

import yaml
from confluent_kafka import Producer

from kafkabed import wait_until
from rawkafka import RawClient, parse_produce_response, produce_body, record_batch
from sgfixture import free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl
from sghelpers import describe, start, state_records, topic_state, wait_state, write_token
from test_observability import reload

TIMEOUT_MS = 8000
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
PAD = 40000  # no-op state-log records before the demotion: catch-up takes a while


# -- helpers ------------------------------------------------------------------

def pad_state_log(source, state_topic: str, mirror: str, topic: str, n: int = PAD) -> None:
    """Append n ALTER SYNC records for (mirror, topic), the JSON syncgate
    writes for `--alter --sync`; for a topic already desired SYNC each is a
    no-op, they only make the log long."""
    p = Producer({"bootstrap.servers": source.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 20, "batch.size": 1 << 20})
    origin = uuid.uuid4().hex[:16]
    for i in range(n):
        rec = {"v": 1, "mirror": mirror, "topic": topic, "op": "ALTER", "type": "SYNC", "add": False,
               "recovery": False, "based_on": -1, "origin": origin, "seq": i + 1}
        while True:
            try:
                p.produce(state_topic, key=f"{mirror}/{topic}", value=json.dumps(rec).encode(), partition=0)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def ctl_ok(sg, *args) -> str:
    rc, out, err = ctl(sg, *args)
    assert rc == 0, (args, out, err)
    return out


def demote_and_repromote(sg, mirror: str, topic: str) -> None:
    """syncgate-ctl --alter --async, then --sync; wait until effective SYNC again."""
    ctl_ok(sg, "--alter", "--mirror", mirror, "--topic", topic, "--async")
    wait_state(sg, mirror, topic, effective="ASYNC", timeout=10)
    ctl_ok(sg, "--alter", "--mirror", mirror, "--topic", topic, "--sync")
    wait_state(sg, mirror, topic, effective="SYNC", desired="SYNC", timeout=60)


def connect_asap(sg, timeout: float = 30) -> RawClient:
    """A RawClient to sg's Kafka port the moment it accepts."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return RawClient("127.0.0.1", sg.port, timeout=60)
        except (ConnectionRefusedError, socket.timeout):
            assert sg.proc.alive(), f"{sg.name} exited:\n{sg.log()[-3000:]}"
            assert time.monotonic() < deadline, f"{sg.name} never listened"
            time.sleep(0.002)


def reading_state_log(sg) -> bool:
    """True while /readyz says the state log is not read up to its end
    (waits for the admin port to answer at all)."""
    code, body = wait_until(lambda: sg.http("/readyz"), timeout=10, interval=0.005,
                            what=f"{sg.name} /readyz answering")
    return code == 503 and "state log" in body


def held(c: RawClient, seconds: float) -> bool:
    """No response arrived on c within `seconds`."""
    r, _, _ = select.select([c.sock], [], [], seconds)
    return not r


def restart_and_produce_while_paused(sg, source, dest, mirror, topic: str) -> None:
    """SIGKILL sg, start it again, produce during the state-log catch-up with
    the mirror paused; assert: no ack the destination does not have, error 20
    at ~90 % of TimeoutMs."""
    mirror.pause()
    try:
        src_hw = source.high_watermark(topic, 0)
        dst_hw = dest.high_watermark(topic, 0)
        assert src_hw == dst_hw, "destination caught up before the pause"
        sg.kill()
        t_start = time.monotonic()
        sg.start(wait=False)
        c = connect_asap(sg)
        t_send = time.monotonic()
        c.send(0, 9, produce_body(9, -1, TIMEOUT_MS, {topic: {0: record_batch([b"s13-" + uuid.uuid4().bytes])}}))
        catching_up = reading_state_log(sg)
        _, body = c.recv()
        elapsed = time.monotonic() - t_send
        (p,) = parse_produce_response(body, 9).topics[topic]
        dest_hw_after = dest.high_watermark(topic, 0)
        c.close()
        print(f"\nlistening {t_send - t_start:.2f}s after start; produce answered after {elapsed:.2f}s: "
              f"error {p.error_code} offset {p.base_offset}; destination high watermark {dest_hw_after}; "
              f"state log still being read when sent: {catching_up}")
        assert source.high_watermark(topic, 0) == src_hw + 1, "the broker appended the record"
        # invariant 1: a success only if the destination already had it
        assert p.error_code != 0 or dest_hw_after > p.base_offset, (
            f"FALSE ACK: success {elapsed:.2f}s after sending, offset {p.base_offset}, destination "
            f"high watermark {dest_hw_after} (mirror paused)")
        assert p.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND, p
        assert 0.85 * TIMEOUT_MS / 1000 <= elapsed <= TIMEOUT_MS / 1000 + 1, elapsed
        assert catching_up, "the produce arrived after the state log was read: the window was missed"
    finally:
        mirror.resume()
    # afterwards: the sidecar is SYNC by the log's end state and gates normally
    wait_state(sg, "dr", topic, effective="SYNC", timeout=60)
    wait_until(lambda: dest.high_watermark(topic, 0) == source.high_watermark(topic, 0), timeout=30,
               what="the mirror caught up after resume")
    (p,) = RawClient("127.0.0.1", sg.port).produce(topic, 0, [b"after"], timeout_ms=30000).topics[topic]
    assert p.error_code == 0 and dest.high_watermark(topic, 0) > p.base_offset


def sidecar(bed, make_syncgate, source, dest, topic, **mirror_extra):
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    sg = start(make_syncgate, source, [mirror_conf("dr", dest, [topic], **mirror_extra)], st, tok)
    wait_state(sg, "dr", topic, effective="SYNC")
    return sg, st


# -- tests --------------------------------------------------------------------

def test_restart_with_alter_async_sync_history_never_acks_early(
        bed, make_syncgate, make_testmirror, source, dest, topic_name):
    """History REGISTER, ALTER ASYNC, ALTER SYNC, REGISTER (the field report's input)."""
    source.create_topic(topic_name)
    dest.create_topic(topic_name)
    mirror = make_testmirror([topic_name])
    sg, st = sidecar(bed, make_syncgate, source, dest, topic_name)
    pad_state_log(source, st, "dr", topic_name)
    demote_and_repromote(sg, "dr", topic_name)
    source.produce(topic_name, 5, partition=0)
    wait_until(lambda: dest.high_watermark(topic_name, 0) == 5, what="mirrored")
    tail = [(r["op"], r["type"]) for r in state_records(source, st) if r["topic"] == topic_name][-3:]
    assert tail == [("ALTER", "ASYNC"), ("ALTER", "SYNC"), ("REGISTER", "SYNC")], tail
    restart_and_produce_while_paused(sg, source, dest, mirror, topic_name)


def test_restart_with_release_and_recovery_history_never_acks_early(
        bed, make_syncgate, make_testmirror, source, dest, topic_name):
    """History REGISTER, RELEASE (--release-sync), REGISTER (RecoveryPromotion)."""
    source.create_topic(topic_name)
    dest.create_topic(topic_name)
    mirror = make_testmirror([topic_name])
    sg, st = sidecar(bed, make_syncgate, source, dest, topic_name)
    pad_state_log(source, st, "dr", topic_name)
    ctl_ok(sg, "--release-sync", "--mirror", "dr", "--topics", topic_name)
    wait_state(sg, "dr", topic_name, timeout=60, effective="SYNC", released=False, recovery_pending=False)
    recs = [r for r in state_records(source, st) if r["topic"] == topic_name and r["op"] != "ALTER"]
    assert [r["op"] for r in recs][-2:] == ["RELEASE", "REGISTER"] and recs[-1]["recovery"] is True, recs[-3:]
    restart_and_produce_while_paused(sg, source, dest, mirror, topic_name)


def test_restart_with_automatic_demote_and_recovery_history_never_acks_early(
        bed, make_syncgate, make_testmirror, source, dest, topic_name):
    """History REGISTER, DEMOTE (every partition failing for
    sync_topic_demote_timeout_ms: the destination topic deleted), REGISTER
    (recovery, the destination topic back)."""
    source.create_topic(topic_name)
    dest.create_topic(topic_name)
    sg, st = sidecar(bed, make_syncgate, source, dest, topic_name, sync_topic_demote_timeout_ms=3000)
    pad_state_log(source, st, "dr", topic_name)
    dest.delete_topic(topic_name)
    wait_state(sg, "dr", topic_name, timeout=30, effective="ASYNC", recovery_pending=True)
    wait_until(lambda: _try_create(dest, topic_name), timeout=30, what="destination topic re-created")
    wait_state(sg, "dr", topic_name, timeout=60, effective="SYNC", recovery_pending=False)
    recs = [r for r in state_records(source, st) if r["topic"] == topic_name and r["op"] != "ALTER"]
    assert [r["op"] for r in recs][-2:] == ["DEMOTE", "REGISTER"], recs[-3:]
    mirror = make_testmirror([topic_name])  # the destination is fresh: copy from here on
    restart_and_produce_while_paused(sg, source, dest, mirror, topic_name)


def reload_setup(bed, make_syncgate, make_testmirror, make_cluster, source, dest, topic):
    """Sidecar running mirror dr only, with mirror dr2's history (REGISTER,
    PAD no-op ALTERs, ALTER ASYNC, ALTER SYNC, REGISTER) kept unapplied in the
    state log; both test mirrors paused. Returns (sg, config adding dr2,
    tm1, tm2, dest2)."""
    dest2 = make_cluster("dest2", brokers=1)
    for c in (source, dest, dest2):
        c.create_topic(topic)
    tm1 = make_testmirror([topic])
    tm2 = make_testmirror([topic], dest=dest2)
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    dr, dr2 = mirror_conf("dr", dest, [topic]), mirror_conf("dr2", dest2, [topic])
    sg = start(make_syncgate, source, [dr, dr2], st, tok)
    for m in ("dr", "dr2"):
        wait_state(sg, m, topic, effective="SYNC")
    pad_state_log(source, st, "dr2", topic, n=1000)
    demote_and_repromote(sg, "dr2", topic)
    # the same sidecar, started again without dr2: dr2's records are kept unapplied
    sg.stop()
    cfg = copy.deepcopy(sg.config)
    cfg["mirrors"] = [dr]
    with open(sg.path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    sg.start()
    wait_until(lambda: describe(sg).get("state_ready"), timeout=30, what="state log read")
    wait_state(sg, "dr", topic, effective="SYNC", timeout=30)
    assert [m["name"] for m in describe(sg)["mirrors"]] == ["dr"]
    cfg["mirrors"] = [dr, dr2]
    tm1.pause()
    tm2.pause()
    return sg, cfg, tm1, tm2, dest2


def hold_then_reload(sg, cfg, topic) -> RawClient:
    """A Produce held for dr, then the reload adding dr2: still held (the
    replayed ALTER ASYNC of dr2 releases nothing), dr2 effective SYNC."""
    c = RawClient("127.0.0.1", sg.port)
    c.send(0, 9, produce_body(9, -1, 30000, {topic: {0: record_batch([b"held-by-dr"])}}))
    wait_until(lambda: sg.metric("syncgate_held_responses") == 1, timeout=10, what="held for dr")
    reload(sg, cfg)
    t = topic_state(sg, "dr2", topic)
    assert (t["desired"], t["effective"]) == ("SYNC", "SYNC"), t
    assert held(c, 1.0), "released by the replayed history of dr2"
    return c


def test_reload_adding_mirror_with_demotion_history_holds_produces(
        bed, make_syncgate, make_testmirror, make_cluster, source, dest, topic_name):
    """A SIGHUP that adds mirror dr2 replays dr2's kept records: a response
    held for dr stays held through the replay, and a produce after the
    reload waits for dr2 (paused) and times out with error 20."""
    sg, cfg, tm1, tm2, dest2 = reload_setup(bed, make_syncgate, make_testmirror, make_cluster, source,
                                            dest, topic_name)
    try:
        hold_then_reload(sg, cfg, topic_name).close()
        tm1.resume()  # dr has everything; dr2 (paused) has nothing
        c2 = RawClient("127.0.0.1", sg.port)
        t0 = time.monotonic()
        (p2,) = c2.produce(topic_name, 0, [b"after-reload"], timeout_ms=TIMEOUT_MS).topics[topic_name]
        elapsed = time.monotonic() - t0
        assert p2.error_code != 0 or dest2.high_watermark(topic_name, 0) > p2.base_offset, \
            f"FALSE ACK: offset {p2.base_offset}, dr2's destination high watermark {dest2.high_watermark(topic_name, 0)}"
        assert p2.error_code == NOT_ENOUGH_REPLICAS_AFTER_APPEND, (p2, elapsed)
        assert 0.85 * TIMEOUT_MS / 1000 <= elapsed <= TIMEOUT_MS / 1000 + 1, elapsed
    finally:
        tm1.resume()
        tm2.resume()


def test_response_held_across_reload_waits_for_the_added_mirror(
        bed, make_syncgate, make_testmirror, make_cluster, source, dest, topic_name):
    """Invariant 1 across a reload: a response held for dr when the reload
    adds dr2 (effective SYNC for the topic by the log's end) is not acked
    once dr alone has the record: dr2 must have it too."""
    sg, cfg, tm1, tm2, dest2 = reload_setup(bed, make_syncgate, make_testmirror, make_cluster, source,
                                            dest, topic_name)
    try:
        c1 = hold_then_reload(sg, cfg, topic_name)
        offset = source.high_watermark(topic_name, 0) - 1
        tm1.resume()
        wait_until(lambda: dest.high_watermark(topic_name, 0) > offset, timeout=30, what="dr's destination has it")
        still_held = held(c1, 2.0)
        if still_held:
            tm2.resume()
        _, body = c1.recv()
        (p,) = parse_produce_response(body, 9).topics[topic_name]
        dest2_hw = dest2.high_watermark(topic_name, 0)
        assert p.error_code != 0 or dest2_hw > p.base_offset, (
            f"FALSE ACK: offset {p.base_offset} acknowledged once dr had it; dr2's destination high "
            f"watermark {dest2_hw} (its mirror paused)")
        assert p.error_code == 0, p
    finally:
        tm1.resume()
        tm2.resume()


def _try_create(cluster, topic) -> bool:
    try:
        cluster.create_topic(topic, timeout=10)
        return True
    except Exception:  # noqa: BLE001 - deletion still in progress
        return False
