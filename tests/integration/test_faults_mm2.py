"""Randomized faults with MirrorMaker 2 (`offsets: mm2`, invariant 1, no
false ack): the same producers as test_faults.py write unique payloads
through syncgate to a SYNC topic (2 partitions) that a real MirrorMaker 2,
at its default `offset.lag.max` (100, so most acks are released by the
record match, not by an offset-sync), copies to a 3-broker destination
(min.insync.replicas=2), while a seeded schedule injects, one at a time:
SIGKILL + restart of syncgate, SIGHUP reloads, pause/resume and SIGKILL +
restart of MirrorMaker 2 (it then re-copies from its last committed
position: duplicates on the destination), SIGKILL + restart of a
destination broker, demote/promote with syncgate-ctl, and bursts of 1,000
records. MM2 renumbers, so each ack is judged by where the destination
holds the record's first copy (values are unique): the destination HW read
right after the ack must be past it (faultdriver.py, `renumbered`), and
every acknowledged record must be on the destination at the end.

SG_FAULTS_MM2=N runs N faults (default 12, the CI run); SG_FAULTS_SEED=S
replays a schedule (the seed is printed)."""

from __future__ import annotations

import os
import random
import time
import uuid

from faultdriver import FaultRun
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl, start, wait_state, write_token
from test_faults import effective_once_ready, print_ack_report
from test_observability import reload

PARTITIONS = 2
SYNCS = "mm2-offset-syncs.dest.internal"


def test_random_faults_with_mirrormaker2_never_ack_what_the_destination_lacks(
        bed, make_syncgate, make_mm2, make_cluster, source, topic_name):
    n = int(os.environ.get("SG_FAULTS_MM2", "12"))
    seed = int(os.environ.get("SG_FAULTS_SEED", str(random.randrange(1 << 31))))
    print(f"\nfaults: {n}, seed: {seed} (replay: SG_FAULTS_MM2={n} SG_FAULTS_SEED={seed})")
    dest = make_cluster("fdest", brokers=3, props={"min.insync.replicas": 2})
    source.create_topic(topic_name, partitions=PARTITIONS)
    dest.create_topic(topic_name, partitions=PARTITIONS, rf=3, config={"min.insync.replicas": 2})
    mirror = make_mm2(topic_name, dest=dest, props={"offset.lag.max": "100"})  # its topics rf 1 (1-broker source)
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    sg = start(make_syncgate, source, [mirror_conf("dr", dest, [topic_name], offsets="mm2",
                                                   mm2_offset_syncs_topic=SYNCS)], st, tok)
    source.produce(topic_name, 4)  # MM2's first offset-sync per partition: the match's anchor
    wait_state(sg, "dr", topic_name, timeout=120, effective="SYNC")
    kinds = ["sg_kill_restart", "sg_reload", "mirror_pause", "mirror_kill_restart", "dest_broker_kill",
             "demote_promote", "burst"]
    run = FaultRun(sg, source, dest, mirror, topic_name, PARTITIONS, seed, ctl=ctl, reload=reload,
                   describe_topic=lambda: effective_once_ready(sg, topic_name), renumbered=True, kinds=kinds)
    t0 = time.monotonic()
    run.start_producers()
    try:
        run.inject(n, ensure=("burst", "mirror_kill_restart"))
        time.sleep(2)
    finally:
        run.broker_back()
        run.stop_producers()
    r = run.verify()
    print_ack_report(r, [sg], seed)
    proved = sg.metric('syncgate_mirror_mm2_match_records_total{mirror="dr",kind="ahead"}')
    stops = {k: sg.metric(f'syncgate_mirror_mm2_match_stops_total{{mirror="dr",reason="{k}"}}')
             for k in ("gap", "foreign")}
    print(f"record match: {proved} offsets proved past the newest offset-sync; stops {stops}; "
          f"duration {time.monotonic() - t0:.0f}s; seed {seed}")
    assert r["faults"] and sum(r["faults"].values()) == n and r["faults"].get("burst")
    assert r["checked"] > 0, "no ack was checked"
    assert r["violations"] == [], f"false acks (seed {seed})"
    assert r["missing_or_different"] == [], f"acked records not on the destination (seed {seed})"
    assert proved > 0, "no ack was released by the record match (the campaign did not test it)"
