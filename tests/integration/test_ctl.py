"""syncgate-ctl (KIP "Command-Line Tool") against a running sidecar on real
Kafka: --describe as a table and as JSON, --add/--alter/--release-sync
results, the compatibility probe, and the documented exit codes
(0 ok, 1 refused/failed/rejected, 2 usage, 3 admin API unreachable)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid

import pytest

from kafkabed import REPO, wait_until
from sgfixture import free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import describe, start, topic_state, wait_state, write_token

from sghelpers import CTL, ctl  # noqa: F401 - shared


def sidecar(bed, make_syncgate, source, dest, topics, token=True, **mirror_extra):
    st = f"__sg_state_{uuid.uuid4().hex[:8]}"
    tok = write_token(bed) if token else None
    return start(make_syncgate, source, [mirror_conf("dr", dest, topics, **mirror_extra)], st, tok)


def test_describe_table_and_json(bed, make_syncgate, source, dest, topic_name):
    source.create_topic(topic_name, partitions=2)
    dest.create_topic(topic_name, partitions=2)
    sg = sidecar(bed, make_syncgate, source, dest, [topic_name])
    wait_state(sg, "dr", topic_name, effective="SYNC")
    rc, out, err = ctl(sg, "--describe", "--mirror", "dr", "--topic", topic_name)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:6] == ["MIRROR", "TOPIC", "DESIRED", "EFFECTIVE", "RELEASED", "RECOVERY"]
    row = [ln for ln in lines[1:] if topic_name in ln]
    assert len(row) == 1, out
    cols = row[0].split()
    assert cols[:7] == ["dr", topic_name, "SYNC", "SYNC", "no", "-", "0"], row
    assert "0=0" in row[0] and "1=0" in row[0], row  # DestinationOffset per partition
    rc, out, err = ctl(sg, "--output", "json", "--describe", "--mirror", "dr", "--topic", topic_name)
    assert rc == 0, err
    doc = json.loads(out)
    t = doc["mirrors"][0]["topics"][0]
    assert (t["topic"], t["desired"], t["effective"], t["released"], t["recovery_pending"]) == \
        (topic_name, "SYNC", "SYNC", False, False)
    assert [p["progress"] for p in t["partitions"]] == [0, 0]


def test_admin_as_a_bare_port_is_this_hosts_loopback(make_syncgate, source):
    """`--admin 26445` means 127.0.0.1:26445 (the admin listener's default
    host), not an address without a port answered with the TLS hint."""
    sg = make_syncgate(source)
    p = subprocess.run([CTL, "--admin", str(sg.admin_port), "--output", "json", "--describe"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "mirrors" in json.loads(p.stdout)
    closed = free_port()
    p = subprocess.run([CTL, "--admin", str(closed), "--describe"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 3
    assert f"cannot reach the admin API at 127.0.0.1:{closed}" in p.stderr


def test_alter_add_release_results_and_exit_codes(bed, make_syncgate, source, dest, topic_name):
    other = topic_name + "-x"
    for t in (topic_name, other):
        source.create_topic(t, partitions=2)
        dest.create_topic(t, partitions=2)
    sg = sidecar(bed, make_syncgate, source, dest, [topic_name])
    wait_state(sg, "dr", topic_name, effective="SYNC")

    rc, out, err = ctl(sg, "--alter", "--mirror", "dr", "--topic", topic_name, "--async")
    assert rc == 0, err
    assert out.split()[:2] == [topic_name, "DEMOTED"], out
    rc, out, err = ctl(sg, "--alter", "--mirror", "dr", "--topic", topic_name, "--async")
    assert rc == 0 and out.split()[1] == "UNCHANGED", out
    rc, out, err = ctl(sg, "--alter", "--mirror", "dr", "--topic", topic_name, "--sync")
    assert rc == 0, err
    assert out.split()[1] == "PROMOTED", out  # lag zero: promoted before the answer
    rc, out, err = ctl(sg, "--output", "json", "--add", "--mirror", "dr", "--topic", other, "--sync")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["topics"][0]["topic"] == other and doc["topics"][0]["result"] in ("PROMOTED", "PENDING_LAG")
    wait_state(sg, "dr", other, effective="SYNC")
    rc, out, err = ctl(sg, "--release-sync", "--mirror", "dr", "--topics", topic_name + ".*")
    assert rc == 0, err
    got = {ln.split()[0]: ln.split()[1] for ln in out.splitlines()}
    assert got == {topic_name: "RELEASED", other: "RELEASED"}, out
    # released, then (destination healthy, lag zero) recovered by itself
    wait_state(sg, "dr", other, effective="SYNC", released=False)

    # exit codes
    rc, out, err = ctl(sg, "--alter", "--mirror", "nope", "--topic", topic_name, "--async")
    assert rc == 1 and "unknown mirror" in err, err
    rc, out, err = ctl(sg, "--alter", "--mirror", "dr", "--topic", topic_name)
    assert rc == 2 and "--sync or --async" in err, err
    rc, out, err = ctl(sg, "--describe", "--add")
    assert rc == 2
    port = free_port()
    p = subprocess.run([CTL, "--admin", f"127.0.0.1:{port}", "--describe"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 3 and "cannot reach" in p.stderr, p.stderr


def test_token_missing_or_wrong_is_refused(bed, make_syncgate, source, dest, topic_name):
    source.create_topic(topic_name)
    dest.create_topic(topic_name)
    sg = sidecar(bed, make_syncgate, source, dest, [topic_name])
    rc, out, err = ctl(sg, "--alter", "--mirror", "dr", "--topic", topic_name, "--async", token=False)
    assert rc == 1, (out, err)
    assert "HTTP 401" in err and "bearer token is required" in err, err
    wrong = write_token(bed, "not-the-token")
    p = subprocess.run([CTL, "--admin", f"127.0.0.1:{sg.admin_port}", "--token-file", wrong, "--release-sync",
                        "--mirror", "dr"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "invalid bearer token" in p.stderr, p.stderr
    # describe needs no token
    rc, out, err = ctl(sg, "--describe", token=False)
    assert rc == 0, err
    # no token file configured at all: mutating calls are disabled
    sg2 = sidecar(bed, make_syncgate, source, dest, [topic_name], token=False)
    rc, out, err = ctl(sg2, "--alter", "--mirror", "dr", "--topic", topic_name, "--async", token=False)
    assert rc == 1 and "admin.token_file is not configured" in err, err
    assert topic_state(sg, "dr", topic_name).get("desired", "SYNC") == "SYNC"


def test_compat_probe_refuses_incompatible_destination(bed, make_syncgate, source, dest, topic_name):
    """Reachable but unable to serve the gate → exit 1, nothing written;
    unreachable → a warning and the change proceeds."""
    missing, fewer = topic_name + "-missing", topic_name + "-fewer"
    source.create_topic(missing, partitions=2)
    source.create_topic(fewer, partitions=3)
    dest.create_topic(fewer, partitions=1)
    sg = sidecar(bed, make_syncgate, source, dest, ["none"])
    rc, out, err = ctl(sg, "--add", "--mirror", "dr", "--topic", missing, "--sync")
    assert rc == 1, (out, err)
    assert "HTTP 409" in err and "does not exist" in err, err
    rc, out, err = ctl(sg, "--alter", "--mirror", "dr", "--topic", fewer, "--sync")
    assert rc == 1 and "partition count differs" in err, err
    for t in (missing, fewer):
        assert topic_state(sg, "dr", t).get("desired", "ASYNC") == "ASYNC", "nothing written"
    # mm2 offsets whose offset-syncs topic does not exist on the source
    source.create_topic(topic_name, partitions=1)
    dest.create_topic("primary." + topic_name, partitions=1)
    sg_mm2 = sidecar(bed, make_syncgate, source, dest, ["none"], offsets="mm2",
                     topic_name="primary.{topic}", mm2_offset_syncs_topic=f"no-such-syncs-{uuid.uuid4().hex[:6]}")
    rc, out, err = ctl(sg_mm2, "--alter", "--mirror", "dr", "--topic", topic_name, "--sync")
    assert rc == 1 and "offset-syncs topic" in err, err
    # destination unreachable: warning, proceeds
    st = f"__sg_state_{uuid.uuid4().hex[:8]}"
    tok = write_token(bed)
    m = mirror_conf("dr", dest, ["none"])
    m["bootstrap"] = f"127.0.0.1:{free_port()}"
    sg_dead = start(make_syncgate, source, [m], st, tok)
    rc, out, err = ctl(sg_dead, "--output", "json", "--alter", "--mirror", "dr", "--topic", topic_name, "--sync")
    assert rc == 0, (out, err)
    doc = json.loads(out)
    assert "unreachable" in doc["warning"], doc
    assert doc["topics"][0]["result"] == "PENDING_LAG", doc
    assert "warning" in doc["topics"][0]["message"]
    assert describe(sg_dead)["mirrors"][0]["topics"][0]["desired"] == "SYNC"


@pytest.mark.parametrize("sync_topics", [[], ["no-such-topic-.*"]], ids=["none", "matching-nothing"])
def test_ready_while_mirror_gates_no_topic(bed, make_syncgate, source, dest, topic_name, sync_topics):
    """A mirror whose topics are to be added later (no sync_topics, or none
    matching) has nothing to report: the sidecar is ready within seconds, and
    stays ready when a topic is then added with --add --sync and promoted."""
    source.create_topic(topic_name)
    dest.create_topic(topic_name)
    sg = sidecar(bed, make_syncgate, source, dest, sync_topics)
    t0 = time.monotonic()
    wait_until(lambda: sg.http("/readyz") == (200, "ready\n"), timeout=15, what="/readyz 200")
    print(f"\nready {time.monotonic() - t0:.1f} s after start")
    rc, out, err = ctl(sg, "--add", "--mirror", "dr", "--topic", topic_name, "--sync")
    assert rc == 0, err
    codes = set()
    wait_until(lambda: codes.add(sg.http("/readyz")[0]) or topic_state(sg, "dr", topic_name).get("effective") == "SYNC",
               timeout=60, what="the added topic promoted")
    assert codes == {200}, codes
