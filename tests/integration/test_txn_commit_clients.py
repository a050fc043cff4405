"""Commit means mirrored (`gate.transactions: commit`) with transactional
producers other than Java: librdkafka (confluent-kafka-python) and franz-go,
the programs tests/clients/python/confluenttxn.py and tests/clients/go/franztxn
(built by tests/clients/install.sh), which speak the command protocol of the
Java TxnProducer of test_txn_commit.py; its marker-preserving TxnMirror
(read_committed, the MirrorMaker 2 exactly-once shape) is the mirror, paused
with SIGSTOP.

test_commit_held_until_mirrored — the sends return while the mirror is
  paused, the commit returns only once it resumed, and a read_committed
  consumer of the destination reads every record right after.
test_commit_timeout_is_retried_by_the_client — gate.max_txn_commit_hold_ms
  short: the held commit is answered CONCURRENT_TRANSACTIONS (51) again and
  again; the client retries it by itself and reports success only once the
  mirror resumed.
test_commit_past_the_clients_deadline — the mirror paused past the client's
  own commit deadline: what each client reports then, and after the mirror
  is back (docs/operating.md, Transactions, records it).
"""

from __future__ import annotations

import os
import queue
import signal

import pytest

from clientrun import CLIENTS_CACHE, CLIENTS_DIR, install
from kafkabed import wait_until
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import LineDriven, wait_sync
from test_txn_commit import committed_records, ms, txn_mirror  # noqa: F401 - fixture

pytestmark = pytest.mark.kafka

CLIENTS = {
    "librdkafka": ("confluent-kafka", lambda: [os.path.join(CLIENTS_CACHE, "confluent-kafka", "bin", "python"),
                                               os.path.join(CLIENTS_DIR, "python", "confluenttxn.py")]),
    "franz-go": ("go", lambda: [os.path.join(CLIENTS_CACHE, "go", "franztxn")]),
}


class TxnClient(LineDriven):
    """A tests/clients transactional program, driven line by line."""

    def __init__(self, client: str, run_dir: str, bootstrap: str, txn_id: str, topic: str, **opts):
        part, argv = CLIENTS[client]
        install(part)
        super().__init__(argv() + [bootstrap, txn_id, topic] + [f"{k}={v}" for k, v in opts.items()],
                         os.path.join(run_dir, f"{client}-{txn_id}.log"))


@pytest.fixture
def clients():
    made = []
    yield made
    for c in made:
        c.close()


@pytest.fixture(params=sorted(CLIENTS))
def client(request):
    return request.param


def txn_client_setup(bed, source, dest, make_syncgate, txn_mirror, clients, client, topic, client_opts=None, **gate):
    source.create_topic(topic, partitions=1)
    dest.create_topic(topic, partitions=1)
    mirror = txn_mirror(source, dest, topic)
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic])], gate={"transactions": "commit", **gate})
    wait_sync(sg, "dr", topic)
    p = TxnClient(client, bed.run_dir, sg.bootstrap, f"tx-{topic}", topic, **(client_opts or {}))
    clients.append(p)
    assert p.ask("init", timeout=60) == "INIT"
    return sg, mirror, p


def test_commit_held_until_mirrored(bed, source, dest, make_syncgate, txn_mirror, clients, client, topic_name):
    # the hold limit well above the test's own steps while the mirror is
    # stopped (a 4 s wait and several reads of both clusters: past the
    # default 8 s on a loaded machine), so the commit is answered by the
    # mirror's progress, never by the limit
    sg, mirror, p = txn_client_setup(bed, source, dest, make_syncgate, txn_mirror, clients, client, topic_name,
                                     max_txn_commit_hold_ms=30000)
    assert p.ask("begin") == "BEGUN"
    mirror.send_signal(signal.SIGSTOP)
    sent = p.ask("send 5", timeout=30)
    assert sent.startswith("SENT 0,4"), sent
    assert ms(sent) < 5000, f"a transactional send was held in commit mode: {sent}"
    p.tell("commit")
    with pytest.raises(queue.Empty):
        p.answer(timeout=4)
    assert sg.metric("syncgate_txn_commits_held") == 1, sg.metrics()
    assert dest.high_watermark(topic_name, 0) == 0
    marker_end = source.high_watermark(topic_name, 0)
    assert marker_end == 6, marker_end
    mirror.send_signal(signal.SIGCONT)
    line = p.answer(timeout=60)
    dest_hw = dest.high_watermark(topic_name, 0)
    assert line.startswith("COMMITTED"), line
    assert ms(line) >= 4000, line
    assert dest_hw >= marker_end, f"commit answered with the destination at {dest_hw} < {marker_end}"
    assert committed_records(dest, topic_name, 5, timeout=10) == 5
    assert sg.metric("syncgate_txn_commit_timeouts_total") == 0
    # the next transaction with the mirror running: committed and readable there too
    assert p.ask("begin") == "BEGUN"
    assert p.ask("send 3").startswith("SENT 6,8")
    line = p.ask("commit", timeout=60)
    assert line.startswith("COMMITTED"), line
    assert dest.high_watermark(topic_name, 0) >= 10
    assert committed_records(dest, topic_name, 8, timeout=10) == 8


def test_commit_timeout_is_retried_by_the_client(bed, source, dest, make_syncgate, txn_mirror, clients, client,
                                                 topic_name):
    """The held commit is answered CONCURRENT_TRANSACTIONS every 1.5 s while
    the mirror is paused; within its own time budget the client retries
    EndTxn by itself and reports nothing until the mirror has the marker."""
    sg, mirror, p = txn_client_setup(bed, source, dest, make_syncgate, txn_mirror, clients, client, topic_name,
                                     max_txn_commit_hold_ms=1500)
    assert p.ask("begin") == "BEGUN"
    mirror.send_signal(signal.SIGSTOP)
    assert p.ask("send 2", timeout=30).startswith("SENT 0,1")
    p.tell("commit 60000")
    wait_until(lambda: sg.metric("syncgate_txn_commit_timeouts_total") >= 2, timeout=30,
               what="two held commits answered the timeout code")
    with pytest.raises(queue.Empty):
        p.answer(timeout=0.1)
    assert dest.high_watermark(topic_name, 0) == 0
    mirror.send_signal(signal.SIGCONT)
    line = p.answer(timeout=60)
    assert line.startswith("COMMITTED"), line
    assert dest.high_watermark(topic_name, 0) >= 3
    assert committed_records(dest, topic_name, 2, timeout=10) == 2


def test_commit_past_the_clients_deadline(bed, source, dest, make_syncgate, txn_mirror, clients, client, topic_name):
    """The mirror paused past the client's own commit deadline (4 s): the
    client reports an error, never success; the transaction is committed on
    the source regardless (PrepareCommit was written before syncgate held the
    answer) and reaches the destination committed once the mirror is back.
    What the application can do next differs: librdkafka's _TIMED_OUT is
    retriable and commit_transaction() called again returns success;
    franz-go's deadline leaves the outcome "unconfirmed": a TryCommit retry is
    refused, the TryAbort it asks for reports the transaction aborted —
    while the coordinator committed it (docs/operating.md, Transactions)."""
    sg, mirror, p = txn_client_setup(bed, source, dest, make_syncgate, txn_mirror, clients, client, topic_name,
                                     max_txn_commit_hold_ms=1500)
    assert p.ask("begin") == "BEGUN"
    mirror.send_signal(signal.SIGSTOP)
    assert p.ask("send 2", timeout=30).startswith("SENT 0,1")
    line = p.ask("commit 4000", timeout=30)
    print(f"{client}: commit, mirror paused past the deadline: {line}")
    assert sg.metric("syncgate_txn_commit_timeouts_total") >= 1
    assert dest.high_watermark(topic_name, 0) == 0
    if client == "librdkafka":
        assert line.startswith("ERROR code=-185 name=_TIMED_OUT retriable=True"), line
    else:
        assert line.startswith("ERROR context.DeadlineExceeded"), line
    mirror.send_signal(signal.SIGCONT)
    line = p.ask("commit", timeout=60)
    print(f"{client}: commit again, mirror resumed: {line}")
    if client == "librdkafka":
        assert line.startswith("COMMITTED"), line
        assert dest.high_watermark(topic_name, 0) >= 3
    else:
        assert line.startswith("ERROR") and ("unconfirmed" in line or "OPERATION_NOT_ATTEMPTED" in line), line
        line = p.ask("abort", timeout=60)
        print(f"{client}: abort, mirror resumed: {line}")
        assert line.startswith("ABORTED"), line
    # committed on the source and, mirrored, on the destination, whatever the client said
    assert committed_records(source, topic_name, 2, timeout=10) == 2
    assert committed_records(dest, topic_name, 2, timeout=20) == 2
    assert p.ask("begin") == "BEGUN"
    assert p.ask("send 1", timeout=30).startswith("SENT 3,3")
    line = p.ask("commit", timeout=60)
    assert line.startswith("COMMITTED"), line
    assert committed_records(dest, topic_name, 3, timeout=20) == 3
