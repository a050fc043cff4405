"""The switch under randomized faults (no false ack, nothing acknowledged lost,
consumers see only mirrored records, commits never past the destination).

Seeded rounds against the shared one-broker source and destination. Each
round: a new topic (1–3 partitions), the offset-preserving test mirror, two
sidecars in front of the source broker (switch.* configured, one state
log), an idempotent and a plain (acks=all, retrying) librdkafka producer and
a consumer group, each bootstrapping through both sidecars. At a random
moment `syncgate-ctl failover --switch` runs through one sidecar, with one
fault drawn per round:

  none            nothing else
  mirror_paused   the test mirror paused 0.3–1.5 s just before the call
                  (the drain waits for it)
  sidecar_killed  the other sidecar SIGKILLed just before the call and
                  started again after it: it replays the switch from the log
  restart_after   a sidecar SIGKILLed and restarted after the switch
  kill_caller     the calling sidecar SIGKILLed right after the call
                  returned, then started again

Checked per round, against the destination at the end (the source takes
nothing after the failover, so the destination's records at the checked
offsets are final): every acknowledged record is on the destination at its
acknowledged offset; the idempotent producer's records are there in send
order per partition, once each — except, in rounds that kill or restart a
sidecar, a record the producer had not seen acknowledged before the switch
(its answer lost with a killed sidecar's connection, or its retry reached
the other sidecar, which maps the client to another destination producer
id: docs/switchover.md "Producer state"); every record the consumer received is the
destination's record at that offset (a record the mirror never copied would
not be); every offset the group committed is at most the destination's end
at the time of the commit check; the source's end did not move after the
call; each producer had records acknowledged after the switch.

SG_SWITCH_ROUNDS=N (default 4, the CI run), SG_SWITCH_SEED=S replays,
SG_SWITCH_FAULT=NAME forces one fault in every round."""

from __future__ import annotations

import os
import random
import threading
import time
import uuid

import pytest

from kafkabed import wait_until
from sgfixture import free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl, describe, lifecycle_extra, wait_state, write_token
from test_switch import RdkafkaLoad, SwitchedGroupConsumer, switch_base

pytestmark = pytest.mark.kafka

FAULTS = ["none", "mirror_paused", "sidecar_killed", "restart_after", "kill_caller"]


def one_round(bed, make_syncgate, make_testmirror, source, dest, rng, r):
    partitions = rng.randint(1, 3)
    fault = os.environ.get("SG_SWITCH_FAULT") or rng.choice(FAULTS)
    topic = f"swf{r}-{uuid.uuid4().hex[:6]}"
    source.create_topic(topic, partitions=partitions)
    dest.create_topic(topic, partitions=partitions)
    mirror = make_testmirror([topic])
    st, tok = f"__sg_state_{uuid.uuid4().hex[:8]}", write_token(bed)
    bid = source.broker_ids[0]
    sgs = []
    for k in range(2):
        port = free_port()
        extra = {**lifecycle_extra(st, tok), "listen": {"kafka": f"127.0.0.1:{port}"},
                 "switch": {"base_port": switch_base(dest), "host": "127.0.0.1"}}
        sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic])], advertise={"nodes": {bid: f"127.0.0.1:{port}"}},
                           name=f"sg-swf{r}{k}-{topic[-6:]}", extra=extra)
        sg.token_file = tok
        wait_until(lambda: describe(sg).get("state_ready"), timeout=60, what=f"{sg.name} read the state log")
        sgs.append(sg)
    for sg in sgs:
        wait_state(sg, "dr", topic, timeout=120, effective="SYNC")
    caller, other = rng.sample(sgs, 2)
    bootstrap = ",".join(sg.bootstrap for sg in sgs)
    idem, plain = RdkafkaLoad(bootstrap, topic, "i"), RdkafkaLoad(bootstrap, topic, "p", idempotent=False)
    group = SwitchedGroupConsumer(bootstrap, f"g-{uuid.uuid4().hex[:6]}", topic, every=25, dest=dest)
    lead = rng.uniform(1.0, 4.0)
    print(f"round {r}: {partitions} partition(s), fault {fault}, switch after {lead:.1f} s via {caller.name}")
    try:
        time.sleep(lead)
        if fault == "mirror_paused":
            mirror.pause()
            threading.Timer(rng.uniform(0.3, 1.5), mirror.resume).start()
        if fault == "sidecar_killed":
            other.kill()
        rc, out, err = ctl(caller, "failover", "--mirror", "dr", "--timeout-ms", "20000", "--switch", timeout=120)
        switched_ms = time.time() * 1000
        src_end = [source.high_watermark(topic, p) for p in range(partitions)]
        assert rc == 0, (fault, out, err)
        if fault == "sidecar_killed":
            other.start()
        if fault == "kill_caller":
            caller.kill()
            time.sleep(rng.uniform(0.2, 1.0))
            caller.start()
        if fault == "restart_after":
            victim = rng.choice(sgs)
            time.sleep(rng.uniform(0.2, 1.5))
            victim.kill()
            victim.start()
        wait_until(lambda: all(describe(sg)["serving"] == "dr" for sg in sgs), timeout=30,
                   what="every sidecar serves the destination")
        time.sleep(rng.uniform(2.0, 4.0))
    finally:
        idem.stop()
        plain.stop()
    ends = [dest.high_watermark(topic, p) for p in range(partitions)]
    try:
        wait_until(lambda: all(not ends[p] or any(pp == p and o == ends[p] - 1 for pp, o, _ in group.seen)
                               for p in range(partitions)), timeout=60, what="the group read to the end")
    finally:
        group.stop()
    assert [source.high_watermark(topic, p) for p in range(partitions)] == src_end, "the source took records"
    dst = {p: {rec.offset: rec.value for rec in dest.consume(topic, p)} for p in range(partitions)}
    for name, load in (("idempotent", idem), ("plain", plain)):
        for part, off, v, _ in load.acks:
            assert dst[part].get(off) == v.encode(), f"round {r} {fault}: {name} ack {part}/{off} {v} not on the destination"
        assert [a for a in load.acks if a[3] > switched_ms], f"round {r} {fault}: {name}: no ack after the switch"
    moved = fault in ("sidecar_killed", "restart_after", "kill_caller")
    ndups = 0
    for p in range(partitions):
        ivals = [v.decode() for v in dst[p].values() if v.startswith(b"i")]
        dups = {v: [o for o, x in dst[p].items() if x == v.encode()] for v in set(ivals) if ivals.count(v) > 1}
        ndups += len(dups)
        if not moved:
            assert not dups, f"round {r} {fault}: idempotent records twice on partition {p}: {dups}"
        # a record whose acknowledgement the producer never saw before the
        # switch (its connection went with a killed sidecar, or its retry
        # reached the other sidecar, which maps the client to another
        # destination producer id) may be stored twice; one it saw
        # acknowledged before the switch never is
        acked_before = {a[2] for a in idem.acks if a[0] == p and a[3] < switched_ms}
        assert not [v for v in dups if v in acked_before], \
            f"round {r} {fault}: a record acknowledged before the switch stored twice: {dups}"
        first = []
        for v in ivals:
            if v not in first:
                first.append(v)
        idx = [int(v[1:]) for v in first]
        assert idx == sorted(idx), f"round {r} {fault}: idempotent records out of order on partition {p}"
    bad = [(p, o) for p, o, v in group.seen if dst[p].get(o) != v.encode()]
    assert not bad, f"round {r} {fault}: consumed records unlike the destination's: {bad[:5]}"
    past = [c for c in group.commits if c[1] > c[2]]
    assert not past, f"round {r} {fault}: commits past the destination's end: {past[:5]}"
    print(f"  acks idempotent {len(idem.acks)} plain {len(plain.acks)}; idempotent duplicates {ndups}; errors "
          f"{sorted(set(idem.errs + plain.errs))}; consumed {len(group.seen)}, commits {len(group.commits)}, "
          f"commit errors {sorted(set(group.commit_errors))}")
    for sg in sgs:
        sg.stop()
    mirror.stop()


def test_switch_under_random_faults(bed, make_syncgate, make_testmirror, source, dest):
    rounds = int(os.environ.get("SG_SWITCH_ROUNDS", "4"))
    seed = int(os.environ.get("SG_SWITCH_SEED", str(random.randrange(1 << 31))))
    print(f"\nswitch rounds: {rounds}, seed: {seed} (replay: SG_SWITCH_ROUNDS={rounds} SG_SWITCH_SEED={seed})")
    rng = random.Random(seed)
    for r in range(rounds):
        one_round(bed, make_syncgate, make_testmirror, source, dest, rng, r)
