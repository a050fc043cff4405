"""Transactions with a read_committed MirrorMaker 2
(scenario S19).

A transactional producer's data acks are held until the mirror has the
records; an MM2 that reads the source read_committed (its exactly-once mode)
copies them only after the COMMIT — which the producer sends only after the
acks. Neither side can move: the transaction cannot commit. syncgate cannot
break the cycle without acknowledging records that are not mirrored, so it
must not stay silent: when a held transactional batch times out waiting for
an `mm2` mirror it logs `gate_txn_timeout_mm2` naming the mirror and the way
out (README "Transactions") and counts it in
`syncgate_mirror_transactional_batch_timeouts_total{mirror}`. Told that MM2
reads read_committed (`mirrors[].mm2_isolation_level`), syncgate warns
`mirror_mm2_read_committed_sync` as soon as a topic of that mirror becomes
SYNC. The client gets the retriable timeout error, and no acknowledgement of an
unmirrored record.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException, Producer

from kafkabed import wait_until
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from test_gate_multi import wait_effective

pytestmark = pytest.mark.kafka


def test_transaction_with_read_committed_mm2_is_reported_not_silent(make_syncgate, make_mm2, source,
                                                                   dest, topic_name):
    source.create_topic(topic_name, partitions=1)
    make_mm2(topic_name, props={"source.consumer.isolation.level": "read_committed"})
    sg = make_syncgate(source, mirrors=[mirror_conf(
        "mm", dest, [topic_name], offsets="mm2", mm2_offset_syncs_topic="mm2-offset-syncs.dest.internal",
        mm2_isolation_level="read_committed")])
    source.produce(topic_name, 3)  # plain records: MM2 copies them, the topic gets promoted
    wait_until(lambda: dest.high_watermark(topic_name, 0) >= 3, timeout=120, what="MM2 copying")
    wait_effective(sg, "mm", topic_name, timeout=120)
    sync_warn = [ln for ln in sg.log().splitlines() if "mirror_mm2_read_committed_sync" in ln]
    assert sync_warn and f"topic={topic_name}" in sync_warn[0] and "WARN" in sync_warn[0], sg.log()[-3000:]
    metric = 'syncgate_mirror_transactional_batch_timeouts_total{mirror="mm"}'
    assert sg.metric(metric) == 0

    p = Producer({"bootstrap.servers": sg.bootstrap, "transactional.id": f"tx-{topic_name}",
                  "request.timeout.ms": 5000, "message.timeout.ms": 12000, "linger.ms": 0})
    p.init_transactions(30)
    p.begin_transaction()
    acked = []
    for i in range(5):
        p.produce(topic_name, value=f"tx{i}".encode(), partition=0,
                  on_delivery=lambda err, msg: acked.append(msg.offset()) if err is None else None)
    t0 = time.monotonic()
    with pytest.raises(KafkaException):
        p.commit_transaction(40)
    waited = time.monotonic() - t0
    warn = wait_until(lambda: [ln for ln in sg.log().splitlines() if "gate_txn_timeout_mm2" in ln], timeout=10,
                      what="the gate_txn_timeout_mm2 warning")
    assert "mirror=mm" in warn[0] and "read_committed" in warn[0] and "WARN" in warn[0], warn[0]
    assert acked == [], f"a transactional record was acknowledged although MM2 could not copy it: {acked}"
    assert waited >= 4, waited  # the data acks were held, not refused at once
    # every timed-out transactional partition is counted, not only the logged one
    assert sg.metric(metric) >= 1, sg.metrics()
    p.abort_transaction(30)
