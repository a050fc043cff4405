"""Real clients through the sync gate while the mirror lags (paused and resumed
several times during the run): Java kafka-clients (idempotent and not),
librdkafka through kcat, and python3-confluent-kafka's idempotent producer
with max.in.flight 5.

Invariant 1 (no false ack): every record a client sees acknowledged is on the
destination at the same offset — checked AT ACK TIME where the client lets us
(Java callback, confluent-kafka delivery callback: destination high watermark
> offset), and after the run for all (same offset, same value). No record is
lost: every record the client sent is acknowledged and on both clusters.
Clients see no error, or only retriable ones they retried themselves
(NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) is retriable; S11: never an unknown
code); librdkafka's idempotent producer never raises a fatal error (S1).
The request timeout is short (3 s) so that gate timeouts DO happen while the
mirror is paused (4 s) and the clients' retry paths are exercised.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest
from confluent_kafka import KafkaError, Producer

from kafkabed import wait_until
from sgfixture import KAFKA_LIBS, compile_java, make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import effective, gated_topic  # noqa: E402

pytestmark = pytest.mark.kafka

# Produces N records (values "<prefix><i>") through syncgate, one line per
# outcome: "ACK <partition> <offset> <destHW-at-ack> <value>" or
# "ERR <value> <exception class> <message>"; the destination high watermark is
# read inside the callback (producer I/O thread, its own consumer) so a record
# acknowledged before the destination had it shows up as hw <= offset.
ACKCHECK_JAVA = r"""
import java.util.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class AckCheck {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], dest = a[1], topic = a[2];
        int n = Integer.parseInt(a[3]);
        boolean idem = Boolean.parseBoolean(a[4]);
        long sleepMicros = Long.parseLong(a[5]);
        String prefix = a[6];
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", String.valueOf(idem));
        p.put("max.in.flight.requests.per.connection", "5");
        p.put("linger.ms", "2");
        p.put("request.timeout.ms", "3000");
        p.put("delivery.timeout.ms", "120000");
        p.put("retry.backoff.ms", "50");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        Properties c = new Properties();
        c.put("bootstrap.servers", dest);
        c.put("isolation.level", "read_uncommitted");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        KafkaConsumer<byte[], byte[]> hw = new KafkaConsumer<>(c);
        StringBuffer out = new StringBuffer();
        AtomicInteger done = new AtomicInteger();
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                final String v = prefix + i;
                prod.send(new ProducerRecord<>(topic, v, v), (md, e) -> {
                    if (e != null) {
                        out.append("ERR " + v + " " + e.getClass().getName() + " " + e.getMessage() + "\n");
                    } else {
                        TopicPartition tp = new TopicPartition(md.topic(), md.partition());
                        long h = hw.endOffsets(List.of(tp)).get(tp);
                        out.append("ACK " + md.partition() + " " + md.offset() + " " + h + " " + v + "\n");
                    }
                    done.incrementAndGet();
                });
                if (sleepMicros > 0) Thread.sleep(sleepMicros / 1000, (int) (sleepMicros % 1000) * 1000);
            }
            prod.flush();
        }
        hw.close();
        System.out.print(out);
        System.out.println("DONE " + done.get());
    }
}
"""


def gated(source, dest, make_syncgate, make_testmirror, topic, partitions=2):
    return gated_topic(source, dest, make_syncgate, make_testmirror, topic, partitions=partitions)


class Lagger:
    """Pauses the mirror `times` times for `pause_s` (with `run_s` between)
    on a thread: lag on demand during a client's run."""

    def __init__(self, mirror, times=3, pause_s=4.0, run_s=1.0, first_after=0.5):
        self.mirror, self.times, self.pause_s, self.run_s = mirror, times, pause_s, run_s
        self.first_after = first_after
        self.pauses = 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        if self.stop.wait(self.first_after):
            return
        for _ in range(self.times):
            self.mirror.pause()
            self.pauses += 1
            try:
                self.stop.wait(self.pause_s)
            finally:
                self.mirror.resume()
            if self.stop.wait(self.run_s):
                return

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()
        self.mirror.resume()


def check_on_both(source, dest, topic, acked: dict, partitions=2):
    """acked {(partition, offset): value}: each is on the destination and the
    source at that offset with that value, and the destination equals the source."""
    for part in range(partitions):
        want = source.high_watermark(topic, part)
        wait_until(lambda: dest.high_watermark(topic, part) >= want, timeout=60,
                   what=f"{topic}[{part}] caught up")
        src = {r.offset: r.value for r in source.consume(topic, part, end=want)}
        dst = {r.offset: r.value for r in dest.consume(topic, part, end=want)}
        assert dst == src
        for (p, off), v in acked.items():
            if p == part:
                assert dst.get(off) == v, (part, off, v, dst.get(off))


@pytest.fixture(scope="module")
def ackcheck_classes(tmp_path_factory):
    return compile_java(str(tmp_path_factory.mktemp("ackcheck")), "AckCheck.java", ACKCHECK_JAVA)


@pytest.mark.parametrize("idempotence", [True, False], ids=["idempotent", "plain"])
def test_java_producer_every_ack_mirrored(ackcheck_classes, make_syncgate, make_testmirror,
                                          source, dest, topic_name, idempotence):
    """Java kafka-clients 4.3.1 (Produce v13, topic ids), acks=all, in-flight
    5, idempotence on/off, request.timeout.ms 3 s, mirror paused 3 × 4 s:
    each ack is on the destination at ack time (callback), no record is
    lost, no final error (gate timeouts are retriable and retried)."""
    sg, mirror = gated(source, dest, make_syncgate, make_testmirror, topic_name)
    n = 1500
    t0 = time.monotonic()
    with Lagger(mirror, times=3, pause_s=4.0, run_s=1.0) as lag:
        p = subprocess.run(
            ["java", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
             "-cp", ackcheck_classes + os.pathsep + os.path.join(KAFKA_LIBS, "*"), "AckCheck",
             sg.bootstrap, dest.bootstrap, topic_name, str(n), str(idempotence).lower(),
             "10000", "j"], capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - t0
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lines = p.stdout.splitlines()
    assert lines[-1] == f"DONE {n}", lines[-5:]
    errs = [ln for ln in lines if ln.startswith("ERR ")]
    assert errs == [], errs[:5]
    acked, early = {}, []
    for ln in lines:
        if ln.startswith("ACK "):
            _, part, off, hw, v = ln.split(" ", 4)
            acked[(int(part), int(off))] = v.encode()
            if int(hw) <= int(off):
                early.append(ln)
    assert early == [], early[:5]
    assert sorted(acked.values()) == sorted(f"j{i}".encode() for i in range(n))
    assert lag.pauses == 3
    check_on_both(source, dest, topic_name, acked)
    # the pauses made the gate time out and the client retry (20, retriable)
    retried = "NOT_ENOUGH_REPLICAS_AFTER_APPEND" in p.stderr or \
        "NotEnoughReplicasAfterAppend" in p.stderr or \
        sg.metric("syncgate_downmapped_errors_total") > 0
    print(f"\njava idempotence={idempotence}: {n} acked in {elapsed:.1f}s with 3 x 4 s pauses; "
          f"gate timeouts retried: {retried}; downmapped "
          f"{sg.metric('syncgate_downmapped_errors_total'):.0f}")
    assert retried
    assert sg.metric("syncgate_held_responses") == 0


def test_kcat_librdkafka_acks_all(make_syncgate, make_testmirror, source, dest, topic_name):
    """kcat (librdkafka) acks=all, mirror paused twice during the run: every
    line is delivered (exit 0, no delivery failure), and on the destination at
    the source's offsets."""
    sg, mirror = gated(source, dest, make_syncgate, make_testmirror, topic_name)
    n = 600
    with Lagger(mirror, times=2, pause_s=4.0, run_s=1.0, first_after=0.3):
        proc = subprocess.Popen(
            ["kcat", "-P", "-b", sg.bootstrap, "-t", topic_name, "-X", "acks=all",
             "-X", "enable.idempotence=true", "-X", "linger.ms=2",
             "-X", "request.timeout.ms=3000", "-X", "message.timeout.ms=120000"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # feed slowly (~8 s) so that records span the pauses
        for i in range(0, n, 10):
            proc.stdin.write("".join(f"kc{j}\n" for j in range(i, min(n, i + 10))))
            proc.stdin.flush()
            time.sleep(0.13)
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-3000:]
    assert "fail" not in err.lower(), err[-3000:]
    # every line is on the source exactly once and the destination equals the source
    vals = []
    for part in (0, 1):
        vals += [r.value for r in source.consume(topic_name, part)]
    assert sorted(vals) == sorted(f"kc{i}".encode() for i in range(n))
    check_on_both(source, dest, topic_name, {})


def test_confluent_idempotent_inflight5_no_fatal(make_syncgate, make_testmirror, source, dest,
                                                 topic_name):
    """python3-confluent-kafka, idempotent, max.in.flight 5, request timeout
    3 s, mirror paused 3 × 4 s: no fatal error (S1: reordered or inconsistent
    responses are fatal for librdkafka's idempotent producer), every ack is
    on the destination at ack time (callback), nothing lost."""
    sg, mirror = gated(source, dest, make_syncgate, make_testmirror, topic_name)
    errors, fatal, acked, early, implicit = [], [], {}, [], []

    def on_error(e):
        if e.fatal():
            fatal.append(e)

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
            if err.fatal():
                fatal.append(err)
            return
        hw = dest.high_watermark(topic_name, msg.partition())
        if msg.offset() is None or msg.offset() < 0:
            # librdkafka's implicit ack: an earlier batch failed retriably (gate
            # timeout) and a LATER batch of the partition succeeded, so the
            # earlier records are persisted too; no offset is reported.
            # Checked after the run against the record's source offset.
            implicit.append((msg.partition(), msg.value(), hw))
            return
        if hw <= msg.offset():
            early.append((msg.partition(), msg.offset(), hw))
        acked[(msg.partition(), msg.offset())] = msg.value()

    p = Producer({"bootstrap.servers": sg.bootstrap, "acks": "all", "enable.idempotence": True,
                  "max.in.flight": 5, "linger.ms": 2, "request.timeout.ms": 3000,
                  "message.timeout.ms": 120000, "error_cb": on_error})
    n = 1500
    with Lagger(mirror, times=3, pause_s=4.0, run_s=1.0) as lag:
        for i in range(n):
            while True:
                try:
                    p.produce(topic_name, key=str(i).encode(), value=f"ck{i}".encode(),
                              on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
            time.sleep(0.01)
        left = p.flush(120)
    assert fatal == [], fatal
    assert left == 0 and errors == [], errors[:5]
    assert early == [], early[:5]
    assert lag.pauses == 3
    assert sorted(list(acked.values()) + [v for _, v, _ in implicit]) == \
        sorted(f"ck{i}".encode() for i in range(n))
    check_on_both(source, dest, topic_name, acked)
    # implicit acks: the destination had the record (its source offset) at ack time
    where = {}
    for part in (0, 1):
        for r in source.consume(topic_name, part):
            where.setdefault(r.value, []).append((part, r.offset))
    for part, v, hw in implicit:
        locs = [off for pp, off in where[v] if pp == part]
        assert locs and max(locs) < hw, (part, v, locs, hw)
    assert sg.metric("syncgate_downmapped_errors_total") > 0  # timeouts did happen
    print(f"\nconfluent-kafka idempotent in-flight 5: {len(acked)} acks with offsets, "
          f"{len(implicit)} implicit acks (offset -1), downmapped "
          f"{sg.metric('syncgate_downmapped_errors_total'):.0f}, no fatal error")
    assert sg.metric("syncgate_held_responses") == 0
