"""The mirror-type lifecycle against real Apache Kafka (KIP "Registering Sync
Replica", "Source-Side Release", "Recovery", "ASYNC→SYNC Promotion",
per-partition failures and the topic-wide demote): sidecars sharing one
state log on the source cluster, driven through the admin API.

Each test uses its own state topic, so its decider group and its records
are its own."""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
import uuid

from confluent_kafka import Producer

from kafkabed import wait_until
from sgfixture import free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture


# -- helpers ------------------------------------------------------------------

from sghelpers import (call, describe, lifecycle_extra, results, setup_topic,  # noqa: F401 - shared
                       start, state_records, topic_state, wait_state, write_token)


def two_sync_sidecars(bed, make_syncgate, make_testmirror, source, dest, topic_name):
    """`topic_name` on both clusters with the test mirror copying it, and
    sidecars A and B sharing a fresh state log (and admin token) with mirror
    dr desiring it SYNC. Returns (mirror, state topic, a, b) once both see it
    effective SYNC."""
    setup_topic(source, dest, topic_name)
    mirror = make_testmirror([topic_name])
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    mirrors = [mirror_conf("dr", dest, [topic_name])]
    a = start(make_syncgate, source, mirrors, st, tok, name="sg-a")
    b = start(make_syncgate, source, mirrors, st, tok, name="sg-b")
    for sg in (a, b):
        wait_state(sg, "dr", topic_name, effective="SYNC")
    return mirror, st, a, b


# -- tests --------------------------------------------------------------------

def test_two_sidecars_alter_async_obeyed_by_both_within_1s(
        bed, make_syncgate, make_testmirror, source, dest, topic_name):
    """An operator intent written through one sidecar is applied by every
    sidecar sharing the state log (log order), within a second."""
    mirror, st, a, b = two_sync_sidecars(bed, make_syncgate, make_testmirror, source, dest, topic_name)
    # one decider at a time
    wait_until(lambda: [describe(a)["decider"], describe(b)["decider"]].count(True) == 1, timeout=30,
               what="exactly one decider")
    # a produce held by sidecar b (destination behind) ...
    mirror.pause()
    acked = []
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0,
                  "request.timeout.ms": 60000, "message.timeout.ms": 120000})
    p.produce(topic_name, value=b"held", partition=0, on_delivery=lambda err, msg: acked.append(err))
    flusher = threading.Thread(target=p.flush, args=(90,))
    flusher.start()
    try:
        time.sleep(1.5)
        assert acked == [], "held on b while the mirror is paused"
        # ... is released by an --alter --async sent to sidecar a
        t0 = time.monotonic()
        status, doc = call(a, "/v1/alter", {"mirror": "dr", "topic": topic_name, "type": "ASYNC", "add": False})
        assert status == 200, doc
        assert results(doc) == {topic_name: "DEMOTED"}
        wait_until(lambda: all(topic_state(sg, "dr", topic_name)["effective"] == "ASYNC" for sg in (a, b)),
                   timeout=1.0, interval=0.02, what="both sidecars demoted")
        wait_until(lambda: acked == [None], timeout=1.0, interval=0.02, what="b acked under the async predicate")
        assert time.monotonic() - t0 < 2.0
    finally:
        mirror.resume()
        flusher.join(30)
    for sg in (a, b):
        t = topic_state(sg, "dr", topic_name)
        assert (t["desired"], t["effective"]) == ("ASYNC", "ASYNC")
    # the records are in the log, in order
    ops = [(r["op"], r.get("type")) for r in state_records(source, st) if r["topic"] == topic_name]
    assert ("REGISTER", "SYNC") in ops and ops[-1] == ("ALTER", "ASYNC"), ops


def test_release_while_stale_promotion_in_flight_is_rejected_by_every_sidecar(
        bed, make_syncgate, make_testmirror, source, dest, topic_name):
    """KIP race: --release-sync, then a promotion decided before it (no
    RecoveryPromotion) lands in the log: every sidecar rejects it
    (RELEASED_FRESH_PROMOTION_REQUIRED), sync is not silently re-established,
    pendingRecoveryPromotion and RetryAttempt are set."""
    mirror, st, a, b = two_sync_sidecars(bed, make_syncgate, make_testmirror, source, dest, topic_name)
    # destination falls behind (so no recovery can fire during the race)
    mirror.pause()
    try:
        source.produce(topic_name, n=5, partition=0)
        status, doc = call(a, "/v1/release", {"mirror": "dr", "topics": topic_name})
        assert status == 200, doc
        assert results(doc) == {topic_name: "RELEASED"}
        # the stale promotion, written straight to the state log
        p = Producer({"bootstrap.servers": source.bootstrap, "acks": "all", "enable.idempotence": True})
        p.produce(st, key=f"dr/{topic_name}", partition=0,
                  value=json.dumps({"mirror": "dr", "topic": topic_name, "op": "REGISTER",
                                    "recovery": False}).encode())
        assert p.flush(10) == 0
        for sg in (a, b):
            wait_state(sg, "dr", topic_name, timeout=10, retry_attempt=1)
            t = topic_state(sg, "dr", topic_name)
            assert t["effective"] == "ASYNC", t
            assert t["released"] is True and t["recovery_pending"] is True, t
            assert t["desired"] == "SYNC"
            assert sg.metric('syncgate_sync_registration_rejected_total{mirror="dr",topic="%s",'
                             'reason="RELEASED_FRESH_PROMOTION_REQUIRED"}' % topic_name) == 1
    finally:
        mirror.resume()
    # destination back and caught up: recovery promotion clears the marker
    for sg in (a, b):
        wait_state(sg, "dr", topic_name, timeout=60, effective="SYNC", released=False,
                   recovery_pending=False, retry_attempt=0)
    regs = [r for r in state_records(source, st) if r["topic"] == topic_name and r["op"] == "REGISTER"]
    assert regs[-1]["recovery"] is True, regs


def test_release_unblocks_held_producer_then_automatic_recovery(
        bed, make_syncgate, make_testmirror, source, dest, topic_name):
    """Destination unreachable for the gate (mirror paused): acks=all
    produces are held; --release-sync completes them at once; once the
    mirror resumes and lag is zero, the recovery promotion clears Released."""
    setup_topic(source, dest, topic_name, partitions=1)
    mirror = make_testmirror([topic_name])
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    sg = start(make_syncgate, source, [mirror_conf("dr", dest, [topic_name])], st, tok)
    wait_state(sg, "dr", topic_name, effective="SYNC")
    mirror.pause()
    acked = []
    try:
        p = Producer({"bootstrap.servers": sg.bootstrap, "acks": "all", "linger.ms": 0,
                      "request.timeout.ms": 60000, "message.timeout.ms": 120000})
        p.produce(topic_name, value=b"held", on_delivery=lambda err, msg: acked.append(err))
        t = threading.Thread(target=p.flush, args=(90,))
        t.start()
        time.sleep(2)
        assert acked == [], "held while the mirror is paused"
        t0 = time.monotonic()
        status, doc = call(sg, "/v1/release", {"mirror": "dr", "topics": None})
        assert status == 200 and results(doc) == {topic_name: "RELEASED"}, doc
        wait_until(lambda: acked == [None], timeout=10, what="held produce acknowledged after release")
        assert time.monotonic() - t0 < 5
        t.join(10)
        ts = topic_state(sg, "dr", topic_name)
        assert ts["released"] is True and ts["effective"] == "ASYNC", ts
        assert ts.get("annotation", "").startswith("released by source")
        time.sleep(2)
        assert topic_state(sg, "dr", topic_name)["effective"] == "ASYNC", "no recovery while lagging"
    finally:
        mirror.resume()
    wait_state(sg, "dr", topic_name, timeout=60, effective="SYNC", released=False, recovery_pending=False)


def test_promotion_pending_while_lag_then_fires(
        bed, make_syncgate, make_testmirror, source, dest, topic_name):
    """--alter --sync with lag > 0 answers PENDING_LAG (desired SYNC,
    effective ASYNC); promotion fires by itself when the lag drains."""
    setup_topic(source, dest, topic_name)
    mirror = make_testmirror([topic_name])
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    sg = start(make_syncgate, source, [mirror_conf("dr", dest, ["not-this-one"])], st, tok)
    mirror.pause()
    try:
        source.produce(topic_name, n=20)
        status, doc = call(sg, "/v1/alter", {"mirror": "dr", "topic": topic_name, "type": "SYNC", "add": True})
        assert status == 200, doc
        assert results(doc) == {topic_name: "PENDING_LAG"}, doc
        assert "pending lag drain" in doc["topics"][0]["message"]
        time.sleep(2)
        t = topic_state(sg, "dr", topic_name)
        assert (t["desired"], t["effective"]) == ("SYNC", "ASYNC"), t
        assert t["lag"] is None or t["lag"] > 0, t
    finally:
        mirror.resume()
    wait_state(sg, "dr", topic_name, timeout=60, effective="SYNC")
    assert topic_state(sg, "dr", topic_name)["lag"] == 0


def test_both_sidecars_restarted_state_survives(
        bed, make_syncgate, make_testmirror, source, dest, topic_name):
    """Restarts lose nothing: an --alter --async that contradicts the
    config and an --alter --sync of a topic the config does not list are
    rebuilt from the state log by new sidecars."""
    t_async, t_sync = topic_name + "-a", topic_name + "-s"
    for t in (t_async, t_sync):
        setup_topic(source, dest, t)
    make_testmirror([t_async, t_sync])
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    mirrors = [mirror_conf("dr", dest, [t_async])]
    a = start(make_syncgate, source, mirrors, st, tok, name="sg-a")
    b = start(make_syncgate, source, mirrors, st, tok, name="sg-b")
    wait_state(a, "dr", t_async, effective="SYNC")
    status, doc = call(a, "/v1/alter", {"mirror": "dr", "topic": t_async, "type": "ASYNC", "add": False})
    assert status == 200 and results(doc) == {t_async: "DEMOTED"}, doc
    status, doc = call(b, "/v1/alter", {"mirror": "dr", "topic": t_sync, "type": "SYNC", "add": True})
    assert status == 200, doc
    for sg in (a, b):
        wait_state(sg, "dr", t_sync, effective="SYNC")
    a.stop()
    b.stop()
    a2 = start(make_syncgate, source, mirrors, st, tok, name="sg-a2")
    b2 = start(make_syncgate, source, mirrors, st, tok, name="sg-b2")
    for sg in (a2, b2):
        # right after reading the log: types are the log's, not the config's
        ta, ts = topic_state(sg, "dr", t_async), topic_state(sg, "dr", t_sync)
        assert (ta["desired"], ta["effective"]) == ("ASYNC", "ASYNC"), ta
        assert ts["desired"] == "SYNC", ts
        wait_state(sg, "dr", t_sync, effective="SYNC", timeout=5)
    time.sleep(3)
    assert topic_state(a2, "dr", t_async)["effective"] == "ASYNC", "config did not override the log"


def test_demote_only_when_every_partition_fails_for_the_timeout(
        bed, make_syncgate, source, dest, topic_name):
    """Per-partition failures: one failing partition never demotes; every
    partition failing for sync_topic_demote_timeout_ms demotes to ASYNC
    with pendingRecoveryPromotion (SyncRegistrationRejected{ALL_PARTITIONS_FAILING});
    the destination back, the recovery promotion restores SYNC. (Empty
    topics: lag zero without a mirror process.)"""
    setup_topic(source, dest, topic_name)
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    sg = start(make_syncgate, source,
               [mirror_conf("dr", dest, [topic_name], sync_topic_demote_timeout_ms=6000)], st, tok)
    wait_state(sg, "dr", topic_name, effective="SYNC")

    def recreate(partitions):
        wait_until(lambda: _try_create(dest, topic_name, partitions), timeout=30,
                   what=f"re-create {topic_name} with {partitions} partition(s)")

    # one partition failing: the destination topic has partition 0 only
    dest.delete_topic(topic_name)
    recreate(1)
    wait_until(lambda: any(p.get("failing_reason") for p in topic_state(sg, "dr", topic_name)["partitions"]
                           if p["partition"] == 1), timeout=20, what="partition 1 failing")
    time.sleep(9)
    t = topic_state(sg, "dr", topic_name)
    assert t["effective"] == "SYNC", t
    assert [p["partition"] for p in t["partitions"] if p["failing_reason"]] == [1], t
    # every partition failing: demoted after the timeout
    dest.delete_topic(topic_name)
    t0 = time.monotonic()
    wait_state(sg, "dr", topic_name, timeout=30, effective="ASYNC", recovery_pending=True, desired="SYNC")
    assert time.monotonic() - t0 >= 5.0
    assert sg.metric('syncgate_sync_registration_rejected_total{mirror="dr",topic="%s",'
                     'reason="ALL_PARTITIONS_FAILING"}' % topic_name) == 1
    demotes = [r for r in state_records(source, st) if r["topic"] == topic_name and r["op"] == "DEMOTE"]
    assert len(demotes) == 1, demotes
    # destination back: automatic recovery
    recreate(2)
    wait_state(sg, "dr", topic_name, timeout=60, effective="SYNC", recovery_pending=False)


def _try_create(cluster, topic, partitions) -> bool:
    try:
        cluster.create_topic(topic, partitions=partitions, timeout=10)
        return True
    except Exception:  # noqa: BLE001 - deletion still in progress
        return False
