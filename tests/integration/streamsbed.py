"""The Kafka Streams test bed of test_streams.py: the application
(StreamsCounter) and its driver, the input producer, and readers of the
output (see test_streams.py for what the tests check)."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time

import pytest
from confluent_kafka import Producer

from kafkabed import wait_until
from sgfixture import KAFKA_LIBS, KAFKA_STREAMS_LIBS, compile_java, mirror_conf
from sghelpers import lifecycle_extra, wait_sync, write_token

STREAMS_APP = r"""
import java.time.Duration;
import java.util.*;
import java.io.*;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.processor.api.*;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.*;

/* args: bootstrap application.id input output state.dir processing.guarantee
 * commit.interval.ms [group.protocol]. Counts records per key (store "counts", logged to its
 * changelog) and writes "<value>,<count>" to output for each input record.
 * Prints "STATE <state>" on every state change; "quit" on stdin closes it
 * ("CLOSED"). */
public class StreamsCounter {
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, a[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, a[4]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, a[5]);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, a[6]);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10000);
        p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);
        p.put(StreamsConfig.producerPrefix("linger.ms"), 5);
        if (a.length > 7) p.put("group.protocol", a[7]);
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("counts"),
                                                    Serdes.String(), Serdes.Long()));
        b.<String, String>stream(a[2])
         .process(() -> new Processor<String, String, String, String>() {
             private ProcessorContext<String, String> ctx;
             private KeyValueStore<String, Long> counts;
             public void init(ProcessorContext<String, String> c) { ctx = c; counts = c.getStateStore("counts"); }
             public void process(Record<String, String> r) {
                 Long n = counts.get(r.key());
                 long m = (n == null ? 0 : n) + 1;
                 counts.put(r.key(), m);
                 ctx.forward(r.withValue(r.value() + "," + m));
             }
         }, "counts")
         .to(a[3]);
        KafkaStreams ks = new KafkaStreams(b.build(), p);
        ks.setStateListener((now, before) -> { System.out.println("STATE " + now); System.out.flush(); });
        ks.setUncaughtExceptionHandler(e -> {
            System.out.println("ERROR " + e);
            System.out.flush();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        ks.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null && !line.equals("quit")) { }
        ks.close(Duration.ofSeconds(30));
        System.out.println("CLOSED");
        System.out.flush();
    }
}
"""


FENCE = r"""
import java.util.*;
import org.apache.kafka.clients.producer.*;

/* args: bootstrap transactional.id...: initTransactions() for each id, which
 * aborts a transaction the id left open (the mirror tool's job when the
 * destination becomes the primary), then closes. Prints "FENCED". */
public class Fence {
    public static void main(String[] a) {
        for (int i = 1; i < a.length; i++) {
            Properties p = new Properties();
            p.put("bootstrap.servers", a[0]);
            p.put("transactional.id", a[i]);
            p.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
            p.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
            try (KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p)) { pr.initTransactions(); }
        }
        System.out.println("FENCED");
    }
}
"""


def app_classes(bed) -> str:
    out = os.path.join(bed.run_dir, "streams")
    if not os.path.exists(os.path.join(out, "StreamsCounter.class")):
        assert os.path.isfile(os.path.join(KAFKA_STREAMS_LIBS, ".complete")), \
            "no Kafka Streams jars: run tests/kafka/fetch-jars.sh"
        os.makedirs(out, exist_ok=True)
        compile_java(out, "Fence.java", FENCE)
        compile_java(out, "StreamsCounter.java", STREAMS_APP, classpath=(os.path.join(KAFKA_STREAMS_LIBS, "*"),))
    return out


class StreamsApp:
    """One StreamsCounter JVM; its log next to the classes."""

    def __init__(self, bed, bootstrap: str, app_id: str, inp: str, out: str, guarantee: str,
                 commit_ms: int, tag: str, protocol: str = "classic"):
        cp = app_classes(bed)
        self.state_dir = os.path.join(bed.run_dir, f"streams-state-{app_id}-{tag}")
        self.log = open(os.path.join(bed.run_dir, "logs", f"streams-{app_id}-{tag}.log"), "w")
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dlog4j2.level=WARN",
             f"-Dsyncgate.testbed={bed.run_dir}",
             "-cp", os.pathsep.join([cp, os.path.join(KAFKA_LIBS, "*"), os.path.join(KAFKA_STREAMS_LIBS, "*")]),
             "StreamsCounter", bootstrap, app_id, inp, out, self.state_dir, guarantee, str(commit_ms), protocol],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.states: list[str] = []
        self.errors: list[str] = []
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("STATE "):
                self.states.append(line.split()[1])
            elif line.startswith("ERROR"):
                self.errors.append(line)
            elif line == "CLOSED":
                self.lines.put(line)
            else:
                self.log.write(line + "\n")

    def wait_running(self, timeout: float = 60):
        wait_until(lambda: self.states and self.states[-1] == "RUNNING", timeout=timeout,
                   what=f"the Streams application RUNNING (states {self.states}, errors {self.errors})")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.lines.get(timeout=45)
                self.proc.wait(timeout=15)
            except Exception:  # noqa: BLE001 - killed below
                pass
        self.kill()
        self.log.close()


@pytest.fixture
def streams_apps():
    made: list[StreamsApp] = []

    def start(*args, **kw) -> StreamsApp:
        a = StreamsApp(*args, **kw)
        made.append(a)
        return a

    yield start
    for a in made:
        a.close()


KEYS = 7


class InputProducer(threading.Thread):
    """Writes input records (key k<id % KEYS>, value "<id>") with acks=all,
    one at a time every `gap` seconds, until stopped; remembers the ids whose
    produce was acknowledged."""

    def __init__(self, bootstrap: str, topic: str, first: int = 0, gap: float = 0.01):
        super().__init__(daemon=True)
        self.topic, self.next_id, self.gap = topic, first, gap
        self.acked: set[int] = set()
        self.sent = 0
        self.halt = threading.Event()
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                           "linger.ms": 0, "message.timeout.ms": 20000})

    def _cb(self, i):
        def cb(err, _msg):
            if err is None:
                self.acked.add(i)
        return cb

    def run(self):
        while not self.halt.is_set():
            i = self.next_id
            self.next_id += 1
            self.p.produce(self.topic, key=f"k{i % KEYS}", value=str(i), on_delivery=self._cb(i))
            self.sent += 1
            self.p.poll(self.gap)

    def stop(self, flush: float = 0.0):
        self.halt.set()
        self.join(10)
        self.p.flush(flush)


def all_records(cluster, topic: str, partitions: int, isolation: str = "read_uncommitted") -> dict:
    """{partition: [Record]} of the whole topic on `cluster`."""
    return {p: cluster.consume(topic, p, 0, isolation=isolation) for p in range(partitions)}


def out_entry(r) -> tuple[str, int, int]:
    """An output record: (key, input id, count after it)."""
    ident, count = r.value.decode().split(",")
    return r.key.decode(), int(ident), int(count)


def streams_setup(src, dst, make_syncgate, make_testmirror, topic, app_id, gate=None, partitions=2,
                  mirrored=None):
    """Input, output and changelog topics on both clusters (the changelog
    compacted, as Streams makes it), the test mirror copying `mirrored`
    (default: all three), a sidecar gating the three, sync_groups = the
    application.id."""
    inp, out, chg = f"{topic}-in", f"{topic}-out", f"{app_id}-counts-changelog"
    for c in (src, dst):
        c.create_topic(inp, partitions=partitions)
        c.create_topic(out, partitions=partitions)
        c.create_topic(chg, partitions=partitions, config={"cleanup.policy": "compact"})
    mirror = make_testmirror(mirrored or [inp, out, chg], source=src, dest=dst)
    token = write_token(src.bed)
    sg = make_syncgate(src, mirrors=[mirror_conf("dr", dst, [inp, out, chg], sync_groups=[app_id])],
                       gate=gate, extra=lifecycle_extra(f"__sg-{topic}", token))
    sg.token_file = token
    for t in (inp, out, chg):
        wait_sync(sg, "dr", t)
    return sg, mirror, inp, out, chg


def committed_output(cluster, topic: str, partition: int, timeout: float = 30) -> list:
    """What a read_committed consumer reads of one partition, up to the
    partition's end (its position reaches the high watermark: the last
    transaction decided)."""
    from confluent_kafka import Consumer, TopicPartition
    end = cluster.high_watermark(topic, partition)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"check-{topic}", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "fetch.wait.max.ms": 10})
    out = []
    try:
        c.assign([TopicPartition(topic, partition, 0)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                out.append(m)
            pos = c.position([TopicPartition(topic, partition)])[0].offset
            if pos >= end:
                return out
        raise AssertionError(f"read_committed {topic}[{partition}] on {cluster.name}: stuck before {end}")
    finally:
        c.close()


class Entry:
    def __init__(self, m):
        ident, count = m.value().decode().split(",")
        self.key, self.id, self.count = m.key().decode(), int(ident), int(count)
