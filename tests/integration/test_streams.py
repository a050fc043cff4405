"""Kafka Streams (kafka-streams 4.3.1, the test bed's clients) through
syncgate, then a disaster: the source broker SIGKILLed while the application
runs, the application started again against the destination cluster.

The application (StreamsCounter, streamsbed.py) counts the records of each key of
its input topic in a state store (`counts`, in memory, logged to its
changelog topic `<application.id>-counts-changelog`) and writes, for every
input record, `<id>,<count after it>` to its output topic. Every input
record carries a unique id, so the output says which input records were
processed, how often, and the count each processing saw.

What the mirror copies: the input topic (so the destination has the input
to resume from), the output topic, and the changelog (so the destination
application restores the counts instead of starting from zero). Streams'
consumer-group offsets are not a topic the mirror copies: they reach the
destination through syncgate's synchronous group commits
(`mirrors[].sync_groups` lists the application.id). No repartition topic:
the input is keyed already (`process()` on the input stream).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter, defaultdict

import pytest

from kafkabed import wait_until
from sgfixture import KAFKA_LIBS, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl_json, lifecycle_extra, wait_sync, write_token
from test_group_commits import committed_on
from test_txn_commit import txn_mirror  # noqa: F401 - fixture
from streamsbed import (KEYS, Entry, InputProducer, all_records, app_classes, committed_output,  # noqa: F401
                        out_entry, streams_apps, streams_setup)

pytestmark = pytest.mark.kafka

@pytest.mark.parametrize("protocol", ["classic", "streams"])
def test_at_least_once_resumes_on_the_destination_without_reprocessing_committed_input(
        bed, make_cluster, dest, make_syncgate, make_testmirror, streams_apps, topic_name, protocol):
    """processing.guarantee=at_least_once, commit.interval.ms=100, through
    syncgate with the application.id in sync_groups; input written through
    syncgate while the application runs; the source broker SIGKILLed
    mid-stream (the application with it); disaster runbook: verify
    --destination-only, nothing to move for a synchronous group; the same
    application started on the destination (fresh state directory). Both
    group protocols: classic (JoinGroup/SyncGroup, the default) and KIP-1071
    `streams` (StreamsGroupHeartbeat); Streams commits with OffsetCommit
    either way.

    Let C be the group's committed offsets on the destination after the kill
    — at least the last commit Streams saw acknowledged, since syncgate
    answers an OffsetCommit only once the destination stores it. Streams
    commits only after its producer flushed (output and changelog records
    acknowledged, so on the destination: acks=all through syncgate), so:

    * every input record below C was processed exactly once: its output is
      on the destination from before the kill, and the destination
      application, starting at C, does not process it again (reprocessed
      committed records: 0);
    * every input record at or after C is processed by the destination
      application exactly once — at least once in all (at_least_once allows
      a second output for a record processed after the last acknowledged
      commit, and only for those);
    * the counts: the destination application restores the changelog the
      mirror copied (R per key) and counts every record from C again, so its
      final count per key is exactly R + (the key's input records at or
      after C). R covers every committed input record (R >= the key's input
      records below C); R is more only by records processed after the last
      commit — counted twice, the at_least_once excess, the same records
      that appear twice in the output. When nothing was processed after the
      last commit, the final counts equal the input counts exactly.
    """
    src = make_cluster("stsrc", brokers=1)
    app_id = f"{topic_name}-app"
    sg, _, inp, out, chg = streams_setup(src, dest, make_syncgate, make_testmirror, topic_name, app_id)
    app = streams_apps(bed, sg.bootstrap, app_id, inp, out, "at_least_once", 100, "source", protocol)
    app.wait_running(timeout=90)
    prod = InputProducer(sg.bootstrap, inp)
    prod.start()
    wait_until(lambda: sum(max(o, 0) for o in committed_on(dest, app_id, inp, 2).values()) >= 150,
               timeout=90, what="the application committed 150 input records on the destination")
    # disaster: the source broker (and the application's host with it)
    src.stop_broker(src.broker_ids[0], kill=True)
    app.kill()
    prod.stop()
    acked = set(prod.acked)
    assert app.errors == [], app.errors

    # the runbook: the destination holds every confirmed record; a
    # synchronous group needs nothing moved
    rc, doc, err = ctl_json(sg, "verify", "--mirror", "dr", "--destination-only", timeout=60)
    assert rc == 0, (doc, err)
    committed = committed_on(dest, app_id, inp, 2)
    assert all(o > 0 for o in committed.values()), committed
    inputs = all_records(dest, inp, 2)
    ids_on_dest = {int(r.value) for rs in inputs.values() for r in rs}
    assert acked <= ids_on_dest, f"acknowledged input missing on the destination: {sorted(acked - ids_on_dest)[:10]}"
    for p, o in committed.items():
        assert o <= len(inputs[p]), (p, o, len(inputs[p]))
    out_before = all_records(dest, out, 2)
    restored = {}
    for rs in all_records(dest, chg, 2).values():
        for r in rs:
            if r.value is not None:
                restored[r.key.decode()] = int.from_bytes(r.value, "big", signed=True)

    # the same application on the destination, from a fresh state directory;
    # more input arrives there meanwhile (producers moved too)
    app2 = streams_apps(bed, dest.bootstrap, app_id, inp, out, "at_least_once", 100, "dest", protocol)
    app2.wait_running(timeout=90)
    later = InputProducer(dest.bootstrap, inp, first=prod.next_id + 1000)
    later.start()
    time.sleep(1.0)
    later.stop(flush=20)
    inputs = all_records(dest, inp, 2)
    want_after = sum(len(inputs[p]) - committed[p] for p in range(2))
    out_hw0 = {p: len(out_before[p]) for p in range(2)}
    wait_until(lambda: sum(dest.high_watermark(out, p) - out_hw0[p] for p in range(2)) >= want_after,
               timeout=90, what=f"{want_after} outputs from the destination application")
    app2.close()
    assert app2.errors == [], app2.errors
    out_after = {p: dest.consume(out, p, out_hw0[p]) for p in range(2)}

    before = [out_entry(r) for rs in out_before.values() for r in rs]
    after = [out_entry(r) for rs in out_after.values() for r in rs]
    committed_ids = {int(r.value) for p, rs in inputs.items() for r in rs if r.offset < committed[p]}
    uncommitted = [(r.key.decode(), int(r.value)) for p, rs in inputs.items() for r in rs
                   if r.offset >= committed[p]]
    n_before = Counter(i for _, i, _ in before)
    n_after = Counter(i for _, i, _ in after)
    # committed input: processed exactly once, before the kill
    assert all(n_before[i] == 1 for i in committed_ids), \
        [i for i in committed_ids if n_before[i] != 1][:10]
    reprocessed_committed = [i for i in committed_ids if n_after[i]]
    assert reprocessed_committed == [], f"committed input processed again: {reprocessed_committed[:10]}"
    # the rest: exactly once by the destination application
    assert sorted(n_after.elements()) == sorted(i for _, i in uncommitted), \
        "the destination application did not process each input record at or after the commit exactly once"
    assert all(n_before[i] <= 1 for i in n_before), "an output twice before the kill"
    reprocessed = sorted(i for _, i in uncommitted if n_before[i])

    # the counts
    input_count = Counter(r.key.decode() for rs in inputs.values() for r in rs)
    committed_count = Counter(f"k{i % KEYS}" for i in committed_ids)
    after_count = Counter(k for k, _ in uncommitted)
    final = dict(restored)
    for k, _, n in sorted(after, key=lambda e: e[2]):
        final[k] = max(final.get(k, 0), n)
    for k in input_count:
        # the restored count covers every committed record, and never a record
        # the destination lacks (Streams read its input clamped to the mirror)
        assert committed_count[k] <= restored.get(k, 0) <= input_count[k], \
            (k, restored.get(k), committed_count[k], input_count[k])
        assert final[k] == restored.get(k, 0) + after_count[k], (k, final[k], restored.get(k), after_count[k])
    excess = {k: final[k] - input_count[k] for k in input_count}
    assert all(v >= 0 for v in excess.values()), excess
    stored = sg.metric('syncgate_group_commits_total{outcome="stored"}')
    assert stored >= 1, "no synchronous group commit stored"
    hold = sg.metric("syncgate_group_commit_hold_seconds_sum") / max(
        1, sg.metric("syncgate_group_commit_hold_seconds_count"))
    if protocol == "streams":
        assert "api=StreamsGroupHeartbeat" in sg.log(), "the application did not use the streams protocol"
    print(f"\nstreams at_least_once ({protocol}): input {sum(len(v) for v in inputs.values())}, acked before the kill "
          f"{len(acked)}, committed below C {len(committed_ids)}, committed reprocessed "
          f"{len(reprocessed_committed)}, processed after the last commit and again {len(reprocessed)}, "
          f"count excess {sum(excess.values())}, group commits stored "
          f"{stored:.0f}, mean hold {hold * 1000:.1f} ms")


def eos_setup(src, dst, make_syncgate, make_testmirror, txn_mirror, topic):
    """One partition each: the input (test mirror), the output and the
    changelog (TxnMirror, read_committed: their transactions with the
    markers at the source's offsets); a sidecar in commit mode gating the
    three, sync_groups = the application.id."""
    app_id = f"{topic}-app"
    inp, out, chg = f"{topic}-in", f"{topic}-out", f"{app_id}-counts-changelog"
    for c in (src, dst):
        c.create_topic(inp, partitions=1)
        c.create_topic(out, partitions=1)
        c.create_topic(chg, partitions=1, config={"cleanup.policy": "compact"})
    make_testmirror([inp], source=src, dest=dst)
    mirrors = [txn_mirror(src, dst, t, "read_committed") for t in (out, chg)]
    token = write_token(src.bed)
    sg = make_syncgate(src, mirrors=[mirror_conf("dr", dst, [inp, out, chg], sync_groups=[app_id])],
                       gate={"transactions": "commit"}, extra=lifecycle_extra(f"__sg-{topic}", token))
    sg.token_file = token
    for t in (inp, out, chg):
        wait_sync(sg, "dr", t)
    return sg, mirrors, app_id, inp, out, chg


def test_exactly_once_v2_commit_gated_survives_a_mirror_pause_and_a_source_kill(
        bed, make_cluster, dest, make_syncgate, make_testmirror, txn_mirror, streams_apps, topic_name):
    """processing.guarantee=exactly_once_v2 through syncgate with
    `gate.transactions: commit` (the mode for a mirror that copies committed
    transactions with their markers: here TxnMirror, read_committed, one per
    transactional partition — output and changelog; the non-transactional
    input goes through the test mirror and is held as ever). Streams' offsets
    travel in its transactions (TxnOffsetCommit of the application.id, a
    sync_groups group): the EndTxn(commit) answer is held until the
    destination has the COMMIT markers of every gated partition *and* the
    transaction's offsets are stored for the group there.

    The mirrors of the transactional topics pause for 3 s: Streams'
    commitTransaction() is held (no error), then completes. Then the input
    stops, the application commits what it read, the source broker is
    SIGKILLed (the application with it) and the same application starts on
    the destination: a read_committed reader of the output there sees every
    input record's output exactly once (before the kill and after), with
    the counts 1..n per key in order — the restored state is the committed
    one, no record counted twice or skipped.
    """
    src = make_cluster("eossrc", brokers=1)
    sg, mirrors, app_id, inp, out, chg = eos_setup(src, dest, make_syncgate, make_testmirror, txn_mirror, topic_name)
    app = streams_apps(bed, sg.bootstrap, app_id, inp, out, "exactly_once_v2", 100, "source")
    app.wait_running(timeout=90)
    prod = InputProducer(sg.bootstrap, inp)
    prod.start()
    wait_until(lambda: len(committed_output(dest, out, 0)) >= 50, timeout=90,
               what="50 committed outputs on the destination")
    for m in mirrors:
        m.send_signal(signal.SIGSTOP)
    try:
        wait_until(lambda: sg.metric("syncgate_txn_commits_held") >= 1, timeout=20,
                   what="a Streams commit held while the mirrors are paused")
        time.sleep(3.0)
        held_dest_hw = dest.high_watermark(out, 0)
    finally:
        for m in mirrors:
            m.send_signal(signal.SIGCONT)
    wait_until(lambda: sg.metric("syncgate_txn_commits_held") == 0, timeout=30, what="the held commit released")
    time.sleep(1.0)
    prod.stop(flush=20)
    n_input = src.high_watermark(inp, 0)
    assert prod.acked and n_input >= len(prod.acked)
    # the application read all the input and committed it (its output on the
    # destination covers every input record), then the disaster
    wait_until(lambda: len(committed_output(dest, out, 0)) >= n_input, timeout=60,
               what=f"outputs of all {n_input} input records committed on the destination")
    wait_until(lambda: sg.metric("syncgate_txn_commits_held") == 0, timeout=30, what="no commit in flight")
    src.stop_broker(src.broker_ids[0], kill=True)
    app.kill()
    assert app.errors == [], app.errors
    timeouts = sg.metric("syncgate_txn_commit_timeouts_total")

    committed = committed_on(dest, app_id, inp, 1)
    out_before = [Entry(m) for m in committed_output(dest, out, 0)]
    app2 = streams_apps(bed, dest.bootstrap, app_id, inp, out, "exactly_once_v2", 100, "dest")
    app2.wait_running(timeout=90)
    later = InputProducer(dest.bootstrap, inp, first=prod.next_id + 1000)
    later.start()
    time.sleep(1.0)
    later.stop(flush=20)
    inputs = dest.consume(inp, 0)
    wait_until(lambda: len(committed_output(dest, out, 0)) >= len(inputs), timeout=90,
               what=f"outputs of all {len(inputs)} input records")
    app2.close()
    assert app2.errors == [], app2.errors
    entries = [Entry(m) for m in committed_output(dest, out, 0)]

    n = Counter(e.id for e in entries)
    dups = sorted(i for i, k in n.items() if k > 1)
    lost = sorted({int(r.value) for r in inputs} - set(n))
    print(f"\nstreams exactly_once_v2: input {len(inputs)} ({n_input} through syncgate), committed outputs "
          f"{len(entries)} ({len(out_before)} before the kill), duplicates {len(dups)}, lost {len(lost)}, "
          f"group offset on the destination {committed}, commits held "
          f"{sg.metric('syncgate_txn_commit_hold_seconds_count'):.0f} (timeouts {timeouts:.0f}), mean hold "
          f"{1000 * sg.metric('syncgate_txn_commit_hold_seconds_sum') / max(1, sg.metric('syncgate_txn_commit_hold_seconds_count')):.1f} ms, "
          f"destination output HW at the pause {held_dest_hw}")
    assert committed[0] == n_input, f"the destination group resumes at {committed[0]}, not {n_input}"
    assert sg.metric("syncgate_txn_offset_commits_kept_total") >= 1, sg.metrics()
    assert sg.metric('syncgate_txn_offset_stores_total{outcome="stored"}') >= 1, sg.metrics()
    assert not lost, f"input never in the committed output: {lost[:10]}"
    assert not dups, f"committed output twice: {dups[:10]}"
    per_key = defaultdict(list)
    for e in entries:
        per_key[e.key].append(e.count)
    for k, counts in per_key.items():
        assert counts == list(range(1, len(counts) + 1)), (k, counts[:20])
    assert sum(len(v) for v in per_key.values()) == len(inputs)


def test_exactly_once_v2_source_killed_mid_stream_duplicates_only_the_unacknowledged_transaction(
        bed, make_cluster, dest, make_syncgate, make_testmirror, txn_mirror, streams_apps, topic_name):
    """exactly_once_v2 as above, but the source broker is SIGKILLed while the
    application processes input (commits in flight). The mirror tool's
    failover: the mirrors stop and their open destination transactions are
    aborted (initTransactions with their transactional ids). What holds:

    * every input record below the destination group's offset C (the last
      commit whose offsets reached the destination — at least the last one
      acknowledged) has its output exactly once, and the destination
      application does not process it again; every record from C on is
      processed by the destination application exactly once; no input record
      is without output;
    * the only outputs twice are those of the one transaction in flight at
      the kill, if its output marker reached the destination before its
      offsets (docs/operating.md, Transactions: "A commit in flight at the
      disaster"): input records C, C+1, … — a contiguous run from C, one
      transaction;
    * the counts: before the kill 1..n per key in order (committed state
      only); the destination application's final count per key is exactly
      the mirrored changelog's (R) plus the key's records from C on, and R
      is the committed records' count, or that plus the in-flight
      transaction's if its changelog marker got there.
    """
    src = make_cluster("eosmid", brokers=1)
    sg, mirrors, app_id, inp, out, chg = eos_setup(src, dest, make_syncgate, make_testmirror, txn_mirror,
                                                  topic_name)
    app = streams_apps(bed, sg.bootstrap, app_id, inp, out, "exactly_once_v2", 100, "source")
    app.wait_running(timeout=90)
    prod = InputProducer(sg.bootstrap, inp, gap=0.005)
    prod.start()
    wait_until(lambda: len(committed_output(dest, out, 0)) >= 300, timeout=90,
               what="300 committed outputs on the destination")
    src.stop_broker(src.broker_ids[0], kill=True)
    app.kill()
    prod.stop()
    assert app.errors == [], app.errors
    for m in mirrors:  # the mirror tool's failover: stop copying, abort what it left open
        m.kill()
        m.wait()
    fence = subprocess.run(["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                            "-Dlog4j2.level=WARN", "-cp", app_classes(bed) + os.pathsep + os.path.join(KAFKA_LIBS, "*"),
                            "Fence", dest.bootstrap, f"txnmirror-{out}-0", f"txnmirror-{chg}-0"],
                           capture_output=True, text=True, timeout=120)
    assert "FENCED" in fence.stdout, fence.stdout + fence.stderr

    committed = committed_on(dest, app_id, inp, 1)[0]
    assert committed > 0, committed
    restored = {}
    for m in committed_output(dest, chg, 0):
        restored[m.key().decode()] = int.from_bytes(m.value(), "big", signed=True)
    before = [Entry(m) for m in committed_output(dest, out, 0)]
    app2 = streams_apps(bed, dest.bootstrap, app_id, inp, out, "exactly_once_v2", 100, "dest")
    app2.wait_running(timeout=90)
    later = InputProducer(dest.bootstrap, inp, first=prod.next_id + 1000)
    later.start()
    time.sleep(1.0)
    later.stop(flush=20)
    inputs = dest.consume(inp, 0)
    offset_of = {int(r.value): r.offset for r in inputs}
    want = len(before) + (len(inputs) - committed)
    wait_until(lambda: len(committed_output(dest, out, 0)) >= want, timeout=90,
               what=f"{want} committed outputs (before the kill and from the destination application)")
    app2.close()
    assert app2.errors == [], app2.errors
    entries = [Entry(m) for m in committed_output(dest, out, 0)]
    after = entries[len(before):]

    lost = sorted(set(offset_of) - {e.id for e in entries})
    assert not lost, f"input never in the committed output: {lost[:10]}"
    n_before = Counter(e.id for e in before)
    assert max(n_before.values()) == 1, "an output twice before the kill"
    assert all(n_before[i] == 1 for i, o in offset_of.items() if o < committed), \
        "committed input without its output from before the kill"
    assert sorted(e.id for e in after) == sorted(i for i, o in offset_of.items() if o >= committed), \
        "the destination application did not process each record from the committed offset exactly once"
    again = sorted(offset_of[i] for i in n_before if offset_of[i] >= committed)
    assert again == list(range(committed, committed + len(again))), \
        f"outputs twice beyond one transaction from {committed}: {again[:20]}"
    per_key = defaultdict(list)
    for e in before:
        per_key[e.key].append(e.count)
    for k, counts in per_key.items():
        assert counts == list(range(1, len(counts) + 1)), (k, counts[:20])
    committed_count = Counter(f"k{i % KEYS}" for i, o in offset_of.items() if o < committed)
    after_count = Counter(f"k{i % KEYS}" for i, o in offset_of.items() if o >= committed)
    final = dict(restored)
    for e in after:
        final[e.key] = max(final.get(e.key, 0), e.count)
    for k in set(committed_count) | set(after_count):
        assert final[k] == restored.get(k, 0) + after_count[k], (k, final[k], restored.get(k), after_count[k])
        assert committed_count[k] <= restored.get(k, 0) <= committed_count[k] + after_count[k], \
            (k, restored.get(k), committed_count[k], after_count[k])
    extra = sum(restored.get(k, 0) - committed_count[k] for k in committed_count | after_count)
    print(f"\nstreams exactly_once_v2, killed mid-stream: input {len(inputs)}, committed offset {committed}, "
          f"outputs before the kill {len(before)}, outputs twice {len(again)}, counts restored beyond the "
          f"commit {extra}, commits held {sg.metric('syncgate_txn_commit_hold_seconds_count'):.0f} "
          f"(timeouts {sg.metric('syncgate_txn_commit_timeouts_total'):.0f})")
