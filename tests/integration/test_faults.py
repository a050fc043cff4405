"""Randomized fault injection (invariant 1, no false ack): idempotent and
plain librdkafka producers write unique payloads through syncgate to a SYNC
topic (3 partitions) mirrored by the test mirror to a 3-broker destination
(min.insync.replicas=2), while a seeded schedule injects, one at a time:
SIGKILL + restart of syncgate, SIGHUP reloads, pause/resume and SIGKILL +
restart of the test mirror, SIGKILL + restart of a destination broker, and
demote/promote with syncgate-ctl. See faultdriver.py for what is checked.

SG_FAULTS=N runs N faults (default 50, the CI run); SG_FAULTS_SEED=S replays
a schedule (the seed is printed)."""

from __future__ import annotations

import collections
import os
import random
import re
import time
import uuid

from faultdriver import FaultRun
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from test_ctl import ctl
from test_lifecycle import describe, start, wait_state, write_token
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
