"""Randomized fault injection (invariant 1, no false ack): idempotent and
plain librdkafka producers write unique payloads through syncgate to a SYNC
topic (3 partitions) mirrored by the test mirror to a 3-broker destination
(min.insync.replicas=2), while a seeded schedule injects, one at a time:
SIGKILL + restart of syncgate, SIGHUP reloads, pause/resume and SIGKILL +
restart of the test mirror, SIGKILL + restart of a destination broker, and
demote/promote with syncgate-ctl. See faultdriver.py for what is checked.

The production shape: a 3-broker source with one sidecar per broker (each
advertising the full node map), the same producers and faults (each
syncgate fault hits one sidecar at random, at least one SIGKILL + restart),
and consumers reading the topic through syncgate meanwhile — librdkafka and
Java kafka-clients, read_uncommitted and read_committed, one per partition,
each bootstrapping through a sidecar that does not lead its partition (its
Metadata through one sidecar, its Fetch through another): every record they
receive is checked against the destination at receipt and at the end, and
each must read its partition to the end. See consumecheck.py.

SG_FAULTS=N runs N faults (default 50, the CI run) in the first test,
SG_FAULTS_PER_BROKER=N in the production shape (default 20);
SG_FAULTS_SEED=S replays a schedule (the seed is printed)."""

from __future__ import annotations

import collections
import os
import random
import re
import time
import uuid

from confluent_kafka.admin import NewTopic

from consumecheck import ConsumeCheck, Reader, compile_java
from faultdriver import FaultRun
from kafkabed import wait_until
from sgfixture import free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl
from sghelpers import describe, lifecycle_extra, start, wait_state, write_token
from test_observability import reload

PARTITIONS = 3


def effective_once_ready(sg, topic):
    """dr/topic's effective type, or None while sg still reads the state log."""
    doc = describe(sg)
    if not doc.get("state_ready"):
        return None
    for m in doc["mirrors"]:
        for t in m["topics"]:
            if m["name"] == "dr" and t["topic"] == topic:
                return t["effective"]
    return None


def effective_all_ready(sidecars, topic):
    """dr/topic's effective type as the sidecars that have read the state log
    report it (one not SYNC wins), or None while none can tell."""
    seen = []
    for sg in sidecars:
        try:
            eff = effective_once_ready(sg, topic)
        except Exception:  # noqa: BLE001 - this one is restarting
            continue
        if eff is not None:
            seen.append(eff)
    return next((e for e in seen if e != "SYNC"), seen[0] if seen else None)


def test_random_faults_never_ack_what_the_destination_lacks(
        bed, make_syncgate, make_testmirror, make_cluster, source, topic_name):
    n = int(os.environ.get("SG_FAULTS", "50"))
    seed = int(os.environ.get("SG_FAULTS_SEED", str(random.randrange(1 << 31))))
    print(f"\nfaults: {n}, seed: {seed} (replay: SG_FAULTS={n} SG_FAULTS_SEED={seed})")
    dest = make_cluster("fdest", brokers=3, props={"min.insync.replicas": 2})
    source.create_topic(topic_name, partitions=PARTITIONS)
    dest.create_topic(topic_name, partitions=PARTITIONS, rf=3, config={"min.insync.replicas": 2})
    mirror = make_testmirror([topic_name], dest=dest, extra=["--strict", "--settle-ms", "3000"])
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    sg = start(make_syncgate, source, [mirror_conf("dr", dest, [topic_name])], st, tok)
    wait_state(sg, "dr", topic_name, effective="SYNC")
    run = FaultRun(sg, source, dest, mirror, topic_name, PARTITIONS, seed, ctl=ctl, reload=reload,
                   describe_topic=lambda: effective_once_ready(sg, topic_name))
    t0 = time.monotonic()
    run.start_producers()
    try:
        run.inject(n)
        time.sleep(2)
    finally:
        run.broker_back()
        run.stop_producers()
    r = run.verify()
    print(f"faults by kind: {r['faults']}")
    print(f"acks: {r['acks']} ({r['no_offset']} without offset), checked (effective SYNC throughout): {r['checked']}, "
          f"destination HW unreadable at ack: {r['hw_unreadable']}, read > 0.5 s after: {r['hw_late']}, violations: {len(r['violations'])}, "
          f"not on the destination as acked: {len(r['missing_or_different'])}")
    print(f"delivery errors: {r['errors']}; demotions: {r['demotions']} ({r['slow_promotions']} promoted "
          f"again after > 10 s); monitor samples: {r['samples']} "
          f"({r['non_sync_samples']} not SYNC); duration {time.monotonic() - t0:.0f}s; seed {seed}")
    demoted = collections.Counter(re.findall(r"mirror_topic_type_changed mirror=dr topic=\S+ from=SYNC to=ASYNC "
                                             r"reason=\"([^\"]*)\"", sg.log()))
    print(f"syncgate's SYNC -> ASYNC changes by reason: {dict(demoted)}")
    for a in r["violations"][:10]:
        print(f"  VIOLATION {a}")
    assert r["faults"] and sum(r["faults"].values()) == n
    assert r["checked"] > 0, "no ack was checked"
    assert r["violations"] == [], f"false acks (seed {seed})"
    assert r["missing_or_different"] == [], f"acked records not on the destination (seed {seed})"


def print_ack_report(r, sgs, seed):
    print(f"faults by kind: {r['faults']}")
    print(f"acks: {r['acks']} ({r['no_offset']} without offset), checked (effective SYNC throughout): "
          f"{r['checked']}, destination HW unreadable at ack: {r['hw_unreadable']}, read > 0.5 s after: "
          f"{r['hw_late']}, violations: {len(r['violations'])}, not on the destination as acked: "
          f"{len(r['missing_or_different'])}")
    print(f"delivery errors: {r['errors']}; demotions: {r['demotions']} ({r['slow_promotions']} promoted "
          f"again after > 10 s); monitor samples: {r['samples']} ({r['non_sync_samples']} not SYNC); seed {seed}")
    for sg in sgs:
        demoted = collections.Counter(re.findall(r"mirror_topic_type_changed mirror=dr topic=\S+ from=SYNC "
                                                 r"to=ASYNC reason=\"([^\"]*)\"", sg.log()))
        print(f"{sg.name}: SYNC -> ASYNC changes by reason: {dict(demoted)}")
    for a in r["violations"][:10]:
        print(f"  VIOLATION (ack) {a}")


def test_random_faults_sidecar_per_broker_consumers_see_only_mirrored(
        bed, make_syncgate, make_testmirror, make_cluster, topic_name, tmp_path):
    n = int(os.environ.get("SG_FAULTS_PER_BROKER", "20"))
    seed = int(os.environ.get("SG_FAULTS_SEED", str(random.randrange(1 << 31))))
    print(f"\nfaults: {n}, seed: {seed} (replay: SG_FAULTS_PER_BROKER={n} SG_FAULTS_SEED={seed})")
    java_classes = compile_java(str(tmp_path))
    src = make_cluster("fsrc", brokers=3, props={"min.insync.replicas": 2})
    dest = make_cluster("fdest", brokers=3, props={"min.insync.replicas": 2})
    ids = src.broker_ids
    # partition p led by broker ids[p] (its preferred leader; source brokers stay up)
    assignment = [[ids[(p + k) % len(ids)] for k in range(3)] for p in range(PARTITIONS)]
    src.admin().create_topics([NewTopic(topic_name, PARTITIONS, replica_assignment=assignment)])[topic_name].result(30)
    wait_until(lambda: [p["leader"] for p in src.partitions(topic_name)] == [a[0] for a in assignment],
               timeout=30, what="each partition led by its preferred leader")
    dest.create_topic(topic_name, partitions=PARTITIONS, rf=3, config={"min.insync.replicas": 2})
    mirror = make_testmirror([topic_name], source=src, dest=dest, extra=["--strict", "--settle-ms", "3000"])
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    nodes = {i: f"127.0.0.1:{free_port()}" for i in ids}
    sgs = []
    for i in ids:  # one at a time: the first creates the state log
        sg = make_syncgate(src, mirrors=[mirror_conf("dr", dest, [topic_name])], broker_id=i,
                           advertise={"nodes": nodes}, name=f"sg-b{i}-{topic_name[-6:]}",
                           extra={**lifecycle_extra(st, tok), "listen": {"kafka": nodes[i]}})
        sg.token_file = tok
        sgs.append(sg)
        wait_until(lambda: describe(sg).get("state_ready"), timeout=90, what=f"{sg.name} read the state log")
    for sg in sgs:
        wait_state(sg, "dr", topic_name, timeout=90, effective="SYNC")
    # each reader bootstraps through a sidecar that does not lead its partition:
    # librdkafka through the next broker's, Java through the one after
    readers = []
    for p, repl in enumerate(assignment):
        for client, via in (("rdkafka", repl[1]), ("java", repl[2])):
            for iso in ("read_uncommitted", "read_committed"):
                readers.append(Reader(f"{client}-p{p}-{iso.split('_')[1]}", client, iso, nodes[via], p,
                                      f"bootstrap sidecar of broker {via}, partition led by {repl[0]}"))
    check = ConsumeCheck(dest, topic_name, readers, java_classes, os.path.join(bed.run_dir, "logs"))
    run = FaultRun(sgs[0], src, dest, mirror, topic_name, PARTITIONS, seed, ctl=ctl, reload=reload,
                   describe_topic=lambda: effective_all_ready(sgs, topic_name), sidecars=sgs)
    t0 = time.monotonic()
    try:
        check.start()
        run.start_producers()
        try:
            run.inject(n, ensure=("sg_kill_restart",))
            time.sleep(2)
        finally:
            run.broker_back()
            run.stop_producers()
        r = run.verify()
        c = check.finish(r["src_hw"], r["dst"], run.windows())
    finally:
        check.stop()  # the readers and the Java process, whatever happened
    print_ack_report(r, sgs, seed)
    print(f"consumed: {c['consumed']} records by {len(readers)} readers ({c['redelivered']} again), "
          f"checked (effective SYNC throughout): {c['checked']}, destination HW unreadable at receipt: "
          f"{c['hw_unreadable']}, read > 0.5 s after: {c['hw_late']} ({c['hw_reads']} reads), "
          f"violations: {len(c['violations'])}, not the destination's record: {len(c['different'])}")
    print("receipt after CreateTime p50/p99/max: " + "/".join(f"{x:.2f}" for x in c["latency"]) + " s")
    print(f"source HW at the end: {r['src_hw']}; duration {time.monotonic() - t0:.0f}s; seed {seed}")
    for rd in readers:
        w = c["worst_latency"][rd.name]
        print(f"  {rd.name} ({rd.note}): next offset {c['next'][rd.name]}, slowest receipt "
              f"{'-' if w is None else f'{w:.1f} s'} after CreateTime")
    for name, errs in c["errors"].items():
        print(f"  consumer errors {name}: {len(errs)}, first: {errs[:2]}")
    for v in c["violations"][:10]:
        print(f"  VIOLATION (consumed) {v}")
    for s in c["stalled"]:
        print(f"  STALLED {s}")
    assert r["faults"] and sum(r["faults"].values()) == n and r["faults"].get("sg_kill_restart")
    assert r["checked"] > 0 and c["checked"] > 0, "no ack or no consumed record was checked"
    assert r["violations"] == [], f"false acks (seed {seed})"
    assert r["missing_or_different"] == [], f"acked records not on the destination (seed {seed})"
    assert c["java_exited_early"] is None, "the Java consumers exited early (see their log)"
    assert c["violations"] == [], (f"{len(c['violations'])} consumed records not on the destination at "
                                   f"receipt (seed {seed}), first: {c['violations'][:3]}")
    assert c["different"] == [], f"consumed records unlike the destination's (seed {seed}): {c['different'][:3]}"
    assert c["stalled"] == [], (f"readers did not reach the source HW (all mirrored) within 90 s of the "
                                f"end (seed {seed}): {c['stalled']}")
    assert c["gaps"] == {}, f"offsets skipped by readers (seed {seed}): " + \
        str({k: v[:5] for k, v in c["gaps"].items()})
