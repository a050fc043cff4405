"""The broker matrix: the gate, the clamp, the lifecycle and the client
basics on every Kafka release line syncgate supports (kafkabed.BROKER_MATRIX;
the rest of the suite runs on the pinned version, kafkabed.PINNED_KAFKA).

The tests are the suite's own, collected here a second time with `source` and
`dest` replaced by two clusters of each matrix version (started once per
version, both brokers of that version; the tools, the test mirror, the
clients and MirrorMaker 2 stay at the pinned version, as a user upgrading
the brokers first would have them). A node id reads e.g.
`test_broker_matrix.py::test_every_ack_is_on_the_destination[3.9.2]`.

What each version adds to what syncgate sees:
  * 3.9: ZooKeeper's last line, run in KRaft; Produce up to v11 (no v14 is
    advertised: `gate.advertise_produce_v14: auto` needs v13), ApiVersions
    up to v4, Fetch up to v17, log4j 1 logging;
  * 4.0: no ZooKeeper, Produce v12 (KIP-890), KIP-848 groups by default;
  * 4.4: ApiVersions v5 (KIP-1242), Produce v13 (topic ids).
"""

from __future__ import annotations

import pytest

from kafkabed import BROKER_MATRIX, kafka_libs
from rawkafka import RawClient
from sgfixture import make_syncgate  # noqa: F401 - fixture

# The tests run again on each version; their own modules' fixtures with them.
from test_consumer_clamp import clamp_classes, test_consumers_see_only_mirrored_records_s21  # noqa: F401
from test_gate import (test_every_ack_is_on_the_destination,  # noqa: F401
                       test_paused_mirror_holds_then_times_out_with_downmapped_code)
from test_gate_clients import ackcheck_classes, test_confluent_idempotent_inflight5_no_fatal  # noqa: F401
from test_gate_clients import test_java_producer_every_ack_mirrored as _java_producer
from test_lifecycle import test_release_unblocks_held_producer_then_automatic_recovery  # noqa: F401
from test_proxy import (test_describe_cluster_and_coordinators_rewritten,  # noqa: F401
                        test_metadata_addresses_are_syncgate_only)

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module", params=BROKER_MATRIX)
def _matrix_clusters(request, bed):
    """A source and a destination cluster of one matrix version, side by
    side; stopped when the version's tests are done."""
    tag = request.param.replace(".", "")
    src, dst = bed.start_clusters([f"src-{tag}", f"dst-{tag}"], kafka_libs=kafka_libs(request.param))
    request.addfinalizer(lambda: [c.stop(fast=True) for c in (src, dst)])
    return request.param, src, dst


@pytest.fixture(scope="module")
def source(_matrix_clusters):
    return _matrix_clusters[1]


@pytest.fixture(scope="module")
def dest(_matrix_clusters):
    return _matrix_clusters[2]


def test_brokers_are_the_version_under_test(_matrix_clusters, make_syncgate):
    """The bed runs what it says: the broker's ApiVersions answer is the
    one of its release line, and syncgate's answer follows it (Produce v14
    advertised only over a broker that serves v13; ApiVersions v5 read
    where the broker serves it)."""
    version, src, _ = _matrix_clusters
    direct = RawClient(*src.brokers[src.broker_ids[0]].split(":"))
    err, broker = direct.api_versions(version=3)
    direct.close()
    assert err == 0
    line = tuple(int(x) for x in version.split(".")[:2])
    produce_max = {(3, 9): 11, (4, 0): 12}.get(line, 13)
    assert broker[0][1] == produce_max, f"Kafka {version} serves Produce up to v{produce_max}"
    sg = make_syncgate(src)
    c = RawClient("127.0.0.1", sg.port)
    err, apis = c.api_versions(version=min(broker[18][1], 5))
    c.close()
    assert err == 0
    assert apis[0][1] == (14 if produce_max == 13 else produce_max)
    assert apis[18][1] == min(broker[18][1], 5)
    assert sg.metric("syncgate_unknown_api_version_total") == 0


def test_java_idempotent_producer_every_ack_mirrored(ackcheck_classes, make_syncgate, make_testmirror,
                                                     source, dest, topic_name):
    """test_gate_clients.py's Java producer check, its idempotent half (the
    producer id and sequence state of each broker version)."""
    _java_producer(ackcheck_classes, make_syncgate, make_testmirror, source, dest, topic_name,
                   idempotence=True)
