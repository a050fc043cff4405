"""consumecheck — consumers through syncgate see only mirrored records,
checked record by record while faultdriver.py injects faults (used by
test_faults.py).

    check = ConsumeCheck(dest, topic, readers, java_classes, log_dir)
    check.start()                       # librdkafka threads + one Java process
    ...                                 # producers and faults (FaultRun)
    report = check.finish(src_hw, dst, windows)

`readers` are Reader(name, client, isolation, bootstrap, partition):
client "rdkafka" (confluent-kafka, Fetch v11: topic names) or "java"
(kafka-clients 4.3.1, Fetch v17+: TopicIds), each assigned one partition
from offset 0. Right after records are received (one librdkafka poll drained,
or one Java poll's line read), the reader reads the destination high
watermark of that partition with its own consumer (as the ack check does):
a record at offset >= that HW is a violation if the topic was effectively
SYNC throughout [the record's CreateTime, its receipt] (± MARGIN, the
driver's windows). At the end every consumed record must be the
destination's record at that offset (same payload), every reader must have
read its partition up to the source HW (which the destination then has: a
reader that does not is stalled), without a gap."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from faultdriver import sync_throughout
from kafkabed import wait_until
from sgfixture import KAFKA_LIBS
from sgfixture import compile_java as _compile_java

# Each argument after the topic is "name/isolation/bootstrap/partition": one
# KafkaConsumer per argument, assigned that partition from offset 0. Prints
# "B <name> <partition> <offset>,<CreateTime ms>,<value> ..." per poll that
# returned records, "ERR <name> <exception>" per failed poll, "READY <name>"
# after its first poll; stops at EOF on stdin, then prints DONE.
JAVA = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class FaultConsumers {
    static volatile boolean stop = false;

    public static void main(String[] a) throws Exception {
        List<Thread> ts = new ArrayList<>();
        for (int i = 1; i < a.length; i++) {
            String[] f = a[i].split("/");
            Thread t = new Thread(() -> run(a[0], f[0], f[1], f[2], Integer.parseInt(f[3])));
            t.start();
            ts.add(t);
        }
        while (System.in.read() >= 0) { }
        stop = true;
        for (Thread t : ts) t.join(30000);
        System.out.println("DONE");
        System.out.flush();
        System.exit(0);
    }

    static void run(String topic, String name, String isolation, String bootstrap, int partition) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("client.id", name);
        c.put("isolation.level", isolation);
        c.put("fetch.max.wait.ms", "500");
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.put("reconnect.backoff.max.ms", "1000");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        TopicPartition tp = new TopicPartition(topic, partition);
        try (KafkaConsumer<String, String> k = new KafkaConsumer<>(c)) {
            k.assign(List.of(tp));
            k.seek(tp, 0);
            boolean ready = false;
            while (!stop) {
                ConsumerRecords<String, String> rs;
                try {
                    rs = k.poll(Duration.ofMillis(200));
                } catch (Exception e) {
                    System.out.println("ERR " + name + " " + e.toString().replace('\n', ' '));
                    System.out.flush();
                    try { Thread.sleep(200); } catch (InterruptedException ie) { return; }
                    continue;
                }
                if (!ready) {
                    System.out.println("READY " + name);
                    System.out.flush();
                    ready = true;
                }
                if (rs.isEmpty()) continue;
                StringBuilder b = new StringBuilder("B ").append(name).append(' ').append(partition);
                for (ConsumerRecord<String, String> r : rs)
                    b.append(' ').append(r.offset()).append(',').append(r.timestamp()).append(',').append(r.value());
                System.out.println(b);
                System.out.flush();
            }
        }
    }
}
"""


def compile_java(out_dir: str) -> str:
    """Compile FaultConsumers (above) into out_dir; returns out_dir."""
    return _compile_java(out_dir, "FaultConsumers.java", JAVA)


@dataclass
class Reader:
    name: str
    client: str  # "rdkafka" or "java"
    isolation: str
    bootstrap: str  # the sidecar(s) it bootstraps through
    partition: int
    note: str = ""  # e.g. which sidecar leads the partition, for the report


@dataclass
class Consumed:
    reader: str
    partition: int
    offset: int
    value: bytes
    t_create: float  # the record's CreateTime as time.monotonic()
    t_recv: float
    hw_after: int | None  # destination HW read right after receipt; None: could not read
    hw_delay: float  # seconds from the receipt to that read


class ConsumeCheck:
    def __init__(self, dest, topic: str, readers: list[Reader], java_classes: str | None, log_dir: str):
        self.dest, self.topic, self.readers = dest, topic, readers
        self.java_classes, self.log_dir = java_classes, log_dir
        self.records: list[Consumed] = []
        self.errors: dict[str, list[str]] = {r.name: [] for r in readers}
        self.hw_reads = 0
        self._next: dict[str, int] = {r.name: 0 for r in readers}  # next offset after the highest read
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._java: subprocess.Popen | None = None
        self._java_q: dict[str, queue.Queue] = {}
        self._ready: set[str] = set()
        # CreateTime (wall clock, ms) -> time.monotonic()
        self._mono_minus_wall = time.monotonic() - time.time()

    # -- readers ---------------------------------------------------------------
    def start(self) -> None:
        """Start the readers; returns once the Java ones have polled once."""
        for r in self.readers:
            if r.client == "rdkafka":
                self._spawn(self._rdkafka, r)
        java = [r for r in self.readers if r.client == "java"]
        if java:
            args = [f"{r.name}/{r.isolation}/{r.bootstrap}/{r.partition}" for r in java]
            log = open(os.path.join(self.log_dir, f"faultconsumers-{self.topic}.log"), "ab")
            self._java = subprocess.Popen(
                ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dlog4j2.level=WARN",
                 "-cp", self.java_classes + os.pathsep + os.path.join(KAFKA_LIBS, "*"), "FaultConsumers",
                 self.topic, *args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
            log.close()
            for r in java:
                self._java_q[r.name] = queue.Queue()
                self._spawn(self._java_reader, r)
            self._spawn(self._java_lines)
            wait_until(lambda: self._ready >= {r.name for r in java}, timeout=120, interval=0.2,
                       what="the Java consumers' first poll")

    def _spawn(self, fn, *args) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        self._threads.append(t)

    def _hw_consumer(self, r: Reader) -> Consumer:
        return Consumer({"bootstrap.servers": self.dest.bootstrap, "group.id": f"faults-hw-{r.name}",
                         "isolation.level": "read_uncommitted"})

    def _received(self, hw: Consumer, r: Reader, batches: list[tuple[float, list[tuple[int, int, bytes]]]]) -> None:
        """batches [(t_recv, [(offset, CreateTime ms, value)])], each received
        at its own t_recv: read the destination HW of r's partition now (after
        the last receipt), record every record with its own receipt time."""
        h = None
        for _ in range(3):
            try:
                h = hw.get_watermark_offsets(TopicPartition(self.topic, r.partition), timeout=1, cached=False)[1]
                break
            except Exception:  # noqa: BLE001 - destination leader moving: retry
                continue
        now = time.monotonic()
        with self._lock:
            self.hw_reads += 1
            for t_recv, recs in batches:
                for off, ts, v in recs:
                    self.records.append(Consumed(r.name, r.partition, off, v, ts / 1000 + self._mono_minus_wall,
                                                 t_recv, h, now - t_recv))
                    self._next[r.name] = max(self._next[r.name], off + 1)

    def _rdkafka(self, r: Reader) -> None:
        c = Consumer({"bootstrap.servers": r.bootstrap, "group.id": f"faults-{r.name}", "client.id": r.name,
                      "enable.auto.commit": False, "isolation.level": r.isolation, "fetch.wait.max.ms": 500,
                      "enable.partition.eof": False, "auto.offset.reset": "earliest",
                      "reconnect.backoff.max.ms": 500, "socket.connection.setup.timeout.ms": 3000})
        hw = self._hw_consumer(r)
        try:
            c.assign([TopicPartition(self.topic, r.partition, 0)])
            while not self._stop.is_set():
                m = c.poll(0.2)
                batch = []
                while m is not None:  # what librdkafka has received so far, up to 1000
                    if m.error():
                        with self._lock:
                            self.errors[r.name].append(str(m.error()))
                    else:
                        batch.append((m.offset(), m.timestamp()[1], m.value()))
                    if len(batch) >= 1000:  # stop before polling one more (it would be dropped)
                        break
                    m = c.poll(0)
                if batch:
                    self._received(hw, r, [(time.monotonic(), batch)])
        finally:
            c.close()
            hw.close()

    def _java_lines(self) -> None:
        """Dispatch the Java process's lines to its readers, stamped on arrival."""
        for line in self._java.stdout:
            t = time.monotonic()
            f = line.rstrip("\n").split(" ")
            if f[0] == "B" and f[1] in self._java_q:
                recs = []
                for x in f[3:]:
                    off, ts, v = x.split(",", 2)
                    recs.append((int(off), int(ts), v.encode()))
                self._java_q[f[1]].put((t, recs))
            elif f[0] == "READY":
                self._ready.add(f[1])
            elif f[0] == "ERR" and f[1] in self.errors:
                with self._lock:
                    self.errors[f[1]].append(" ".join(f[2:]))

    def _java_reader(self, r: Reader) -> None:
        """One Java reader's receipts: everything queued so far, one HW read."""
        q = self._java_q[r.name]
        hw = self._hw_consumer(r)
        try:
            while not (self._stop.is_set() and q.empty()):
                try:
                    batches = [q.get(timeout=0.2)]
                except queue.Empty:
                    continue
                while True:  # what queued meanwhile, each batch keeping its own arrival time
                    try:
                        batches.append(q.get_nowait())
                    except queue.Empty:
                        break
                self._received(hw, r, batches)
        finally:
            hw.close()

    def next_offsets(self) -> dict[str, int]:
        with self._lock:
            return dict(self._next)

    def stop(self) -> None:
        """Stop every reader and the Java process (idempotent)."""
        if self._java is not None and self._java.poll() is None:
            try:
                self._java.stdin.close()
                self._java.wait(timeout=60)
            except (subprocess.TimeoutExpired, BrokenPipeError):
                self._java.kill()
                self._java.wait()
        self._stop.set()
        for t in self._threads:
            t.join(60)

    # -- verdict ---------------------------------------------------------------
    def finish(self, src_hw: dict[int, int], dst: dict, windows, progress_timeout: float = 90) -> dict:
        """Wait (up to progress_timeout) until every reader has read its
        partition up to src_hw (the destination has it all: FaultRun.verify),
        stop the readers, and judge every record. `dst`: {(partition,
        offset): value} of the destination."""
        def behind():
            nxt = self.next_offsets()
            return [r for r in self.readers if nxt[r.name] < src_hw[r.partition]]
        try:
            wait_until(lambda: not behind(), timeout=progress_timeout, interval=0.5, what="readers caught up")
        except AssertionError:
            pass
        nxt = self.next_offsets()
        stalled = [f"{r.name} ({r.note}) at offset {nxt[r.name]} of {src_hw[r.partition]}" for r in behind()]
        java_rc = self._java.poll() if self._java is not None else None
        self.stop()
        recs = list(self.records)
        checked = [c for c in recs if sync_throughout(c.t_create, c.t_recv, windows)]
        violations = [c for c in checked if c.hw_after is not None and c.offset >= c.hw_after]
        different = [c for c in recs if dst.get((c.partition, c.offset)) != c.value]
        seen: dict[str, set[int]] = {r.name: set() for r in self.readers}
        redelivered = 0
        for c in recs:
            if c.offset in seen[c.reader]:
                redelivered += 1
            seen[c.reader].add(c.offset)
        gaps = {}
        for r in self.readers:
            missing = [o for o in range(nxt[r.name]) if o not in seen[r.name]]
            if missing:
                gaps[r.name] = missing
        lat = sorted(c.t_recv - c.t_create for c in recs) or [0.0]
        worst = {r.name: max((c.t_recv - c.t_create for c in recs if c.reader == r.name), default=None)
                 for r in self.readers}
        return {"consumed": len(recs), "checked": len(checked), "violations": violations,
                "latency": (lat[len(lat) // 2], lat[len(lat) * 99 // 100], lat[-1]),
                "hw_unreadable": sum(c.hw_after is None for c in checked),
                "hw_late": sum(c.hw_after is not None and c.hw_delay > 0.5 for c in checked),
                "hw_reads": self.hw_reads, "different": different, "redelivered": redelivered,
                "gaps": gaps, "stalled": stalled, "next": nxt, "worst_latency": worst,
                "errors": {k: v for k, v in self.errors.items() if v}, "java_exited_early": java_rc}
