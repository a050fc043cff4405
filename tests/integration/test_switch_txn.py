"""S19f: a transaction open at the switch, against real Apache Kafka, with the
transactional producers of the suite (Java, librdkafka, franz-go) through a
switch sidecar and the marker-preserving TxnMirror of test_txn_commit.py
(read_uncommitted: the Cluster Linking shape) as the mirror.

One transaction is committed on the source, a second is open (its records
acknowledged) when `failover --switch` runs. Then the producer, never
restarted and never reconfigured, goes on with the open transaction: its
next send and its commit end with an error the client names, the
application aborts, and a new transaction on the same producer commits on
the destination. Nothing of the open transaction is committed anywhere, and
nothing reaches the source after the failover."""

from __future__ import annotations

import uuid

import pytest

from kafkabed import wait_until
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import ctl, describe, lifecycle_extra, wait_state, write_token
from test_switch import switch_base
from test_txn_commit import (JavaProducer, classes, producers,  # noqa: F401 - fixture
                             set_transaction_version, txn_mirror)
from test_txn_commit_clients import TxnClient, clients  # noqa: F401 - fixture

pytestmark = pytest.mark.kafka


def transaction_state(cluster, txn_id: str) -> str:
    """The coordinator's state of `txn_id` on `cluster` (kafka-transactions.sh describe)."""
    out = cluster.run_tool("org.apache.kafka.tools.TransactionsCommand", "describe", "--transactional-id", txn_id)
    head, row = out.strip().splitlines()[-2:]
    return dict(zip(head.split(), row.split()))["TransactionState"]


@pytest.fixture
def transaction_version(source, dest):
    """transaction_version(v): both clusters at transaction.version v for this
    test, set back after it."""
    before = []

    def set_to(version: int):
        before.extend((c, set_transaction_version(c, version)) for c in (source, dest))

    yield set_to
    for c, version in before:
        set_transaction_version(c, version)


@pytest.mark.parametrize("client", ["java", "java-tv1", "java-offsets", "java-tv1-offsets", "java-tv1-partition",
                                    "librdkafka", "franz-go"])
def test_transaction_open_at_the_switch_ends_and_a_new_one_commits(bed, source, dest, make_syncgate, txn_mirror,
                                                                    producers, clients, client, topic_name,
                                                                    transaction_version):
    """java-tv1: the Java producer with transaction version 1 on both clusters
    (EndTxn v4: no producer id in its answer; the client bumps its own epoch);
    -offsets: the open transaction's first call after the switch is
    sendOffsetsToTransaction (AddOffsetsToTxn at TV1, TxnOffsetCommit at TV2);
    -partition: a send to a partition it had not written (AddPartitionsToTxn)."""
    topic = topic_name
    if client.startswith("java-tv1"):
        transaction_version(1)
    partitions = 2 if client.endswith("-partition") else 1  # partition 1 stays empty until the switch
    source.create_topic(topic, partitions=partitions)
    dest.create_topic(topic, partitions=partitions)
    mirror = txn_mirror(source, dest, topic, "read_uncommitted")
    token = write_token(bed)
    extra = lifecycle_extra(f"__sg_state_{uuid.uuid4().hex[:8]}", token)
    extra["switch"] = {"base_port": switch_base(dest), "host": "127.0.0.1"}
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic])], extra=extra)
    sg.token_file = token
    wait_until(lambda: describe(sg).get("state_ready"), timeout=30, what="the state log is read")
    wait_state(sg, "dr", topic, effective="SYNC", timeout=120)
    txn_id = f"tx-{topic}"
    if client.startswith("java"):
        p = JavaProducer(classes(bed), sg.bootstrap, txn_id, topic, 30000)
        producers.append(p)
    else:
        p = TxnClient(client, bed.run_dir, sg.bootstrap, txn_id, topic, commit_timeout_ms=30000)
        clients.append(p)
    assert p.ask("init", timeout=60) == "INIT"
    assert p.ask("begin") == "BEGUN"
    assert p.ask("send 5").startswith("SENT 0,4")
    assert p.ask("commit").startswith("COMMITTED")
    assert p.ask("begin") == "BEGUN"
    assert p.ask("send 3").startswith("SENT 6,8")  # open at the switch: acknowledged, not committed
    wait_until(lambda: dest.high_watermark(topic, 0) == source.high_watermark(topic, 0), timeout=30,
               what="the mirror copied the open transaction's records")

    rc, out, err = ctl(sg, "failover", "--mirror", "dr", "--timeout-ms", "20000", "--switch", timeout=200)
    assert rc == 0 and "SWITCHED" in out, (out, err)
    mirror.kill()
    mirror.wait()
    source_end = source.high_watermark(topic, 0)

    # the open transaction, carried on after the switch
    if client.endswith("-offsets"):  # consume-transform-produce: the consumed offsets next
        steps = [("offsets", p.ask(f"offsets g-{topic} 0 9", timeout=120))]
    elif client.endswith("-partition"):  # a partition the transaction had not written: AddPartitionsToTxn first
        steps = [("send 2 1", p.ask("send 2 1", timeout=120))]
    else:
        steps = [("send 2", p.ask("send 2", timeout=120))]
    steps.append(("commit", p.ask("commit", timeout=120)))
    for _ in range(3):  # the application aborts (a client may need the abort repeated)
        steps.append(("abort", p.ask("abort", timeout=120)))
        if steps[-1][1].startswith("ABORTED"):
            break
    steps.append(("begin", p.ask("begin")))
    steps.append(("send 4", p.ask("send 4", timeout=120)))
    steps.append(("commit", p.ask("commit", timeout=120)))
    print(f"{client}: " + " | ".join(f"{c} -> {a}" for c, a in steps))
    # what the open transaction sent after the switch is refused, so it cannot commit
    assert steps[0][1].startswith("ERROR"), steps
    assert not steps[1][1].startswith("COMMITTED"), f"the transaction open at the switch committed: {steps}"
    # the application's abort ends it, and the same producer goes on
    assert any(c == "abort" and a.startswith("ABORTED") for c, a in steps), steps
    assert steps[-3][1] == "BEGUN", steps
    for partition in range(partitions):
        assert source.high_watermark(topic, partition) == (source_end if partition == 0 else 0), \
            "a record reached the source after the failover"
    if partitions > 1:
        assert dest.high_watermark(topic, 1) == 0, "the refused send to the new partition was stored"
    if client == "franz-go" and "UNKNOWN_TOPIC_ID" in steps[-2][1]:
        # franz-go's Produce v13 names the topic by the source's TopicId, which the
        # destination does not know (docs/switchover.md "Cluster identity and topic ids")
        return
    assert steps[-2][1].startswith("SENT"), f"a new transaction's send failed on the same producer: {steps}"
    assert steps[-1][1].startswith("COMMITTED"), f"a new transaction did not commit on the same producer: {steps}"
    assert transaction_state(dest, txn_id) == "CompleteCommit"
    first, last = (int(x) for x in steps[-2][1].split()[1].split(","))
    values = [r.value.decode() for r in dest.consume(topic, 0, end=last + 1)]
    # the source's records (the open transaction's three by the mirror, in its own
    # transaction), then the new transaction's four; nothing of what the open one sent
    # after the switch
    assert values[:8] == [f"v{i}" for i in range(8)], values
    # offsets 0-4, the commit marker at 5, 6-8: the new transaction comes right after them
    assert (first, last) == (9, 12), steps[-2]
    nums = [int(v[1:]) for v in values[8:]]
    assert len(nums) == 4 and nums[0] >= 8 and nums == list(range(nums[0], nums[0] + 4)), values
