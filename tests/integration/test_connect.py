"""Kafka Connect (connect-runtime 4.3.1, a distributed worker) through
syncgate: the worker's config, offset and status topics and the connector's
output topic are SYNC, the mirror pauses while the connector writes, and
then the destination takes over as a failover would leave it.

What is checked:
  * through syncgate, with the mirror paused for a few seconds mid-run, the
    connector and its task stay RUNNING and the worker logs no ERROR: the
    held acks only slow it down;
  * every record the connector wrote is on the destination once, in order;
  * the destination holds the worker's state: a second worker started
    straight against the destination (as after a planned failover) finds
    the connector in the destination's config topic, resumes from the source
    offset committed there, and writes the rest: every sequence number at
    least once, and again only those after the last committed offset.

The worker runs at-least-once (the default): with
exactly.once.source.support the worker writes its config topic and the
connector's records in transactions, whose COMMIT markers the offset-keeping
test mirror cannot copy (it writes with a plain producer, so offsets shift
at the first marker); transactions through syncgate are covered with mirrors
that copy them (test_txn_commit*.py, test_streams.py).

The connector (SeqSource, compiled here) writes the sequence numbers
0, 1, 2, ..., `batch` per poll, each with its source offset {"seq": n}.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
import uuid

import pytest

from kafkabed import REPO, wait_until
from sgfixture import KAFKA_LIBS, compile_java, free_port, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import wait_sync

pytestmark = pytest.mark.kafka

SEQ_SOURCE = r"""
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.*;

/* Writes "seq-<n>" for n = 0..total-1 to `topic`, `batch` records per poll
 * every `interval.ms`, source offset {"seq": n}; resumes after the committed
 * offset. */
public class SeqSource extends SourceConnector {
    private Map<String, String> props;
    public void start(Map<String, String> p) { props = p; }
    public Class<? extends Task> taskClass() { return SeqTask.class; }
    public List<Map<String, String>> taskConfigs(int max) { return List.of(props); }
    public void stop() {}
    public ConfigDef config() {
        return new ConfigDef()
            .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "output topic")
            .define("total", ConfigDef.Type.INT, ConfigDef.Importance.HIGH, "records in all")
            .define("batch", ConfigDef.Type.INT, 10, ConfigDef.Importance.LOW, "records per poll")
            .define("interval.ms", ConfigDef.Type.INT, 50, ConfigDef.Importance.LOW, "poll interval");
    }
    public String version() { return "1"; }
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> p) { return ExactlyOnceSupport.SUPPORTED; }

    public static class SeqTask extends SourceTask {
        private static final Map<String, String> PART = Map.of("source", "seq");
        private String topic; private int total, batch, interval; private long next;
        public String version() { return "1"; }
        public void start(Map<String, String> p) {
            topic = p.get("topic"); total = Integer.parseInt(p.get("total"));
            batch = Integer.parseInt(p.getOrDefault("batch", "10"));
            interval = Integer.parseInt(p.getOrDefault("interval.ms", "50"));
            Map<String, Object> off = context.offsetStorageReader().offset(PART);
            next = off == null ? 0 : ((Number) off.get("seq")).longValue() + 1;
            System.out.println("SEQSOURCE start next=" + next);
        }
        public List<SourceRecord> poll() throws InterruptedException {
            Thread.sleep(interval);
            List<SourceRecord> out = new ArrayList<>();
            for (int i = 0; i < batch && next < total; i++, next++)
                out.add(new SourceRecord(PART, Map.of("seq", next), topic, 0,
                                         Schema.STRING_SCHEMA, "k" + next, Schema.STRING_SCHEMA, "seq-" + next));
            return out.isEmpty() ? null : out;
        }
        public void stop() {}
    }
}
"""


@pytest.fixture(scope="module")
def seq_source(tmp_path_factory):
    return compile_java(str(tmp_path_factory.mktemp("seqsource")), "SeqSource.java", SEQ_SOURCE)


class Worker:
    """One Connect distributed worker (ConnectDistributed) as a bed process."""

    def __init__(self, bed, name: str, bootstrap: str, group: str, topics: dict, classes: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        props = {
            "bootstrap.servers": bootstrap, "group.id": group,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic": topics["configs"], "offset.storage.topic": topics["offsets"],
            "status.storage.topic": topics["status"],
            "config.storage.replication.factor": 1, "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "offset.flush.interval.ms": 500, "listeners": self.url,
            "plugin.discovery": "only_scan", "scheduled.rebalance.max.delay.ms": 1000,
        }
        path = os.path.join(bed.run_dir, f"{name}.properties")
        with open(path, "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in props.items())
        self.proc = bed.spawn(name, [
            "java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            f"-Dlog4j2.configurationFile={os.path.join(REPO, 'tests', 'kafka', 'log4j2.properties')}",
            "-cp", classes + os.pathsep + os.path.join(KAFKA_LIBS, "*"),
            "org.apache.kafka.connect.cli.ConnectDistributed", path])
        wait_until(self._up, timeout=120, interval=0.5, what=f"Connect worker {name} REST up")

    def _up(self):
        if not self.proc.alive():
            raise AssertionError(f"worker exited:\n{self.proc.log()[-3000:]}")
        return self.get("/connectors") is not None

    def get(self, path: str):
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def put_connector(self, name: str, config: dict) -> None:
        req = urllib.request.Request(f"{self.url}/connectors/{name}/config", method="PUT",
                                     data=json.dumps(config).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status in (200, 201), r.status

    def running(self, name: str) -> bool:
        st = self.get(f"/connectors/{name}/status")
        return bool(st) and st["connector"]["state"] == "RUNNING" and \
            [t["state"] for t in st["tasks"]] == ["RUNNING"]

    def errors(self) -> list[str]:
        return [ln for ln in self.proc.log().splitlines() if " ERROR " in ln]


def seqs(cluster, topic: str) -> list[int]:
    return [int(r.value.decode().split("-")[1]) for r in cluster.consume(topic, 0, isolation="read_committed")
            if r.value and r.value.startswith(b"seq-")]


def test_connect_worker_through_syncgate_and_resumed_on_the_destination(
        bed, make_syncgate, make_testmirror, source, dest, seq_source):
    tag = uuid.uuid4().hex[:6]
    topics = {k: f"connect-{k}-{tag}" for k in ("configs", "offsets", "status")}
    out = f"seq-out-{tag}"
    for c in (source, dest):
        for t in topics.values():
            c.create_topic(t, partitions=1, config={"cleanup.policy": "compact"})
        c.create_topic(out, partitions=1)
    every = [*topics.values(), out]
    mirror = make_testmirror(every)
    sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, every)])
    for t in every:
        wait_sync(sg, "dr", t)

    # never reached: the failover is always mid-run, however slow the machine
    total, group = 10 ** 9, f"connect-{tag}"
    w = Worker(bed, f"connect-{tag}", sg.bootstrap, group, topics, seq_source)
    w.put_connector("seq", {"connector.class": "SeqSource", "tasks.max": "1", "topic": out,
                            "total": str(total), "batch": "5", "interval.ms": "50"})
    wait_until(lambda: w.running("seq"), timeout=60, what="connector and task RUNNING")
    wait_until(lambda: len(seqs(dest, out)) >= 100, timeout=60, what="records reach the destination")

    mirror.pause()
    try:
        paused_at = source.high_watermark(out, 0)
        time.sleep(4)
        assert w.running("seq"), "the held acks do not fail the task"
    finally:
        mirror.resume()
    wait_until(lambda: len(seqs(dest, out)) >= 300 and source.high_watermark(out, 0) > paused_at,
               timeout=60, what="the connector writes on after the resume")
    assert w.running("seq")
    assert w.errors() == [], w.errors()[:5]

    # a planned failover mid-run: the worker stops, the mirror drains and stops
    w.proc.stop(timeout=30)
    for t in every:
        want = source.high_watermark(t, 0)
        wait_until(lambda: dest.high_watermark(t, 0) == want, timeout=30, what=f"{t} drained")
    mirror.stop()
    before = seqs(dest, out)
    assert before == list(range(len(before))), "every record once, in order, on the destination"
    assert len(before) > 0

    w2 = Worker(bed, f"connect-dr-{tag}", dest.bootstrap, group, topics, seq_source)
    wait_until(lambda: w2.running("seq"), timeout=90, what="the destination's worker finds the connector")
    wait_until(lambda: len(seqs(dest, out)) >= len(before) + 50, timeout=120,
               what="the resumed task writes on, on the destination")
    got = seqs(dest, out)
    resumed = [ln for ln in w2.proc.log().splitlines() if "SEQSOURCE start next=" in ln]
    assert resumed, "the task said where it resumed"
    nxt = int(resumed[0].rsplit("=", 1)[1])
    assert 0 < nxt <= len(before), "resumed from an offset committed through syncgate"
    print(f"\nconnect: {len(before)} records through syncgate, resumed on the destination at {nxt}, "
          f"{len(before) - nxt} written twice")
    tail = got[len(before):]
    assert got[:len(before)] == before and tail == list(range(nxt, nxt + len(tail))), \
        "at least once: nothing skipped, and only the records after the committed offset written again"
    assert w2.errors() == [], w2.errors()[:5]
    w2.proc.stop()
