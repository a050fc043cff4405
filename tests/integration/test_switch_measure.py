"""Measurement bed for switchover: what an idempotent producer does when the
address it produces to starts serving another cluster.

The switch is simulated: a sidecar in front of the source broker is stopped
and started again, same listen address, with the destination broker as its
upstream (the advertised node map follows the destination's node id). Each
client sends records before and after, through the same address, never
reconfigured. Two destinations:

* `preserved`: the test mirror copies the source's batches as they are, so the
  destination holds the producer's id, epoch and sequence numbers;
* `empty`: the destination topic exists but never saw the producer.

Prints per client what it saw (acks, errors) and asserts what must hold
whatever the client does: every record it saw acknowledged after the switch
is on the destination, exactly once. It also pins what each client does
today (docs/switchover.md "Measured"): an unknown producer id is accepted by
the destination (no error), and franz-go, which names topics by TopicId,
fails its records with UNKNOWN_TOPIC_ID — the case the switch's topic-id
translation is for.
"""

from __future__ import annotations

import os
import time

import pytest
import yaml

from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import wait_sync
from rawkafka import RawClient
from clientrun import CLIENTS_CACHE, LineClient, install
from sgfixture import KAFKA_LIBS
from test_client_matrix import CLIENTS, V, Spec, stored

pytestmark = pytest.mark.kafka

SPECS = [s for s in CLIENTS if s.id in {
    f"java-{V['KAFKA_CLIENTS_3']}", f"confluent-kafka-{V['CONFLUENT_KAFKA']}",
    f"franz-go-{V['FRANZ_GO']}", f"sarama-{V['SARAMA']}", f"kafka-python-{V['KAFKA_PYTHON_3']}"}]


class Java4(Spec):
    """LineProd (built against the 3.x client) on the broker's own 4.x kafka-clients."""

    def start(self, bootstrap, topic, **opts):
        install("java-3")
        d = os.path.join(CLIENTS_CACHE, "java-3")
        kv = {"idempotent": 1, **opts}
        return LineClient(["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                           "-cp", f"{d}/classes{os.pathsep}{KAFKA_LIBS}/*", "LineProd", bootstrap, topic]
                          + [f"{k}={v}" for k, v in kv.items()])


SPECS.append(Java4("java-4.3.1", "java-3", "apache-kafka-java", True))


def switch_upstream(sg, cluster) -> None:
    """Stop the sidecar and start it again in front of `cluster`'s first broker."""
    sg.stop()
    bid = cluster.broker_ids[0]
    cfg = dict(sg.config)
    cfg["upstream"] = {**cfg["upstream"], "broker": cluster.brokers[bid]}
    cfg["advertise"] = {"nodes": {bid: f"127.0.0.1:{sg.port}"}}
    cfg["mirrors"] = []
    with open(sg.path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    sg.start()


@pytest.mark.parametrize("dest_kind", ["preserved", "empty"])
@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_idempotent_producer_across_switch(spec, dest_kind, make_syncgate, make_testmirror, source, dest,
                                          topic_name):
    source.create_topic(topic_name, partitions=1)
    dest.create_topic(topic_name, partitions=1)
    if dest_kind == "preserved":
        make_testmirror([topic_name], source=source, dest=dest)
        sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, [topic_name])])
        wait_sync(sg, "dr", topic_name)
    else:
        sg = make_syncgate(source)
    c = spec.start(sg.bootstrap, topic_name, request_timeout_ms=5000)
    try:
        for i in range(10):
            c.send(0, f"a{i}")
        c.flush(timeout=60)
        before = len(c.acks)
        t0 = time.monotonic()
        switch_upstream(sg, dest)
        for i in range(10):
            c.send(0, f"b{i}")
        c.flush(timeout=120)
        took = time.monotonic() - t0
    finally:
        c.close()
    after_acks = c.acks[before:]
    dst = stored(dest, topic_name, 1)[0]
    values = list(dst.values())
    print(f"\nMEASURE {spec.id} {dest_kind}: before {before} acked; after: {len(after_acks)} acked, "
          f"{len(c.errs)} errors {sorted({e[2][:80] for e in c.errs})}; {took:.1f}s; "
          f"dest has {len(values)} records {values[:3]}..{values[-3:]}; other {c.other[:3]}")
    bad = [(p, off, v) for p, off, v in after_acks if values.count(v) != 1 or (off >= 0 and dst.get(off) != v)]
    assert not bad, f"acknowledged after the switch but not on the destination once at its offset: {bad}"
    if spec.id.startswith("franz-go"):
        # Produce v13 names the topic by its TopicId, which is the source's;
        # franz-go fails the records after its unknown-topic retries
        # (docs/switchover.md "Topic ids"): the switch must translate them
        assert not after_acks and all("UNKNOWN_TOPIC_ID" in e[2] for e in c.errs), (after_acks, c.errs)
    else:
        assert [v for _, _, v in after_acks] == [f"b{i}" for i in range(10)] and not c.errs, (after_acks, c.errs)


def test_colliding_producer_id_is_acknowledged_without_being_stored(dest, topic_name):
    """Why the switch must not forward a source-allocated producer id
    (docs/switchover.md "Producer state"): when the destination has state for
    the same id and epoch from another producer, a batch whose sequence range
    equals one of that producer's last five batches is taken for a retry of
    it: the broker answers success with the offset of *that* batch and does
    not store the new record — a false ack."""
    dest.create_topic(topic_name, partitions=1)
    host, port = dest.bootstrap.rsplit(":", 1)
    pid = 4242
    c = RawClient(host, int(port))
    try:
        for seq in range(10):  # the destination's own producer with that id
            r = c.produce(topic_name, 0, [f"native{seq}".encode()], producer=(pid, 0, seq))
            assert r.topics[topic_name][0].error_code == 0, r.topics
        # a switched client whose source-allocated id is the same
        r = c.produce(topic_name, 0, [b"switched7"], producer=(pid, 0, 7))
    finally:
        c.close()
    stored_values = {rec.offset: rec.value for rec in dest.consume(topic_name, 0)}
    res = r.topics[topic_name][0]
    print(f"\nMEASURE colliding producer id: error {res.error_code} offset {res.base_offset}, "
          f"stored there {stored_values.get(res.base_offset)}, {len(stored_values)} records")
    assert (res.error_code, res.base_offset) == (0, 7), res
    assert stored_values[7] == b"native7" and b"switched7" not in stored_values.values(), stored_values
