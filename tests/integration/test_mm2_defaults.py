"""MirrorMaker 2 at its defaults (scenario S18).

MM2 emits an offset-sync only when the offsets drift by more than
`offset.lag.max` (default 100). With `offsets: mm2` the gate cannot see a
record the destination already holds until a sync covers it, so acks and
promotion stall. syncgate does not guess between sparse syncs (mirror/mm2.c
says why that would not be sound); it detects the case — the destination
holds at least as many records past the last sync as the source has — and
says so: a WARN naming offset.lag.max, syncgate_mirror_stalled_partitions,
and the stall reason in /v1/mirrors and `syncgate-ctl --describe`. With
offset.lag.max=0 nothing is reported (checked at the end of
test_gate_multi.py::test_mm2_pause_timeout_resume_cycle, so that no test
starts one more MirrorMaker).
"""

from __future__ import annotations

import json

import pytest

from kafkabed import wait_until
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl

pytestmark = pytest.mark.kafka

SYNCS = "mm2-offset-syncs.dest.internal"


def partitions(sg, topic: str) -> list[dict]:
    _, body = sg.http(f"/v1/mirrors?mirror=mm&topic={topic}")
    for m in json.loads(body)["mirrors"]:
        for t in m["topics"]:
            if t["topic"] == topic:
                return t["partitions"]
    return []


def test_mm2_at_default_offset_lag_max_is_reported(make_syncgate, make_mm2, source, dest, topic_name):
    source.create_topic(topic_name, partitions=1)
    make_mm2(topic_name, props={"offset.lag.max": "100"})
    sg = make_syncgate(source, mirrors=[mirror_conf("mm", dest, [topic_name], offsets="mm2",
                                                    mm2_offset_syncs_topic=SYNCS)])
    source.produce(topic_name, 10)
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= 10, timeout=120,
               what="MirrorMaker 2 copying the records")
    # the destination has all 10, the offset-syncs do not say so
    wait_until(lambda: any(p.get("stall_reason") for p in partitions(sg, topic_name)), timeout=30,
               what="the stall reported in /v1/mirrors")
    (p0,) = partitions(sg, topic_name)
    assert p0["stall_reason"] == "offset-syncs behind the destination", p0
    assert p0["progress"] < 10 and p0["lag"] > 0, p0
    assert sg.metric(f'syncgate_mirror_stalled_partitions{{mirror="mm",topic="{topic_name}"}}') == 1
    warn = [ln for ln in sg.log().splitlines() if "mirror_mm2_offset_syncs_behind" in ln]
    assert warn and "offset.lag.max=0" in warn[0] and "WARN" in warn[0], warn
    rc, out, err = ctl(sg, "--describe", "--mirror", "mm", "--topic", topic_name)
    assert rc == 0, err
    assert "stalled: 0: offset-syncs behind the destination" in out and "offset.lag.max=0" in out, out

