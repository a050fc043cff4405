"""kafkabed — real Apache Kafka test bed for syncgate's integration tests.

Python front-end to the shell scripts in tests/kafka/ (cluster.sh, mm2.sh,
testmirror.sh). Run with /usr/bin/python3 (Debian's confluent_kafka).

    bed = KafkaBed()                         # a fresh run dir under /tmp/syncgate-testbed
    src = bed.start_cluster("source")        # 1 KRaft node; brokers=3 -> controller + 3 brokers
    dst = bed.start_cluster("dest")
    src.create_topic("orders", partitions=2); dst.create_topic("orders", partitions=2)
    m = bed.start_testmirror("tm", src, dst, ["orders"])   # or bed.start_mm2("mm", src, dst, "orders")
    src.produce("orders", 10)
    wait_until(lambda: dst.high_watermark("orders", 0) >= ..., what="mirror caught up")
    m.pause(); ...; m.resume()
    bed.stop_all()                           # also runs atexit and, via a watchdog, if we get SIGKILLed

Cleanup: every process is recorded under the run dir; KafkaBed.stop_all()
(called by the pytest fixtures' finalizers and by atexit) runs
`cluster.sh stop-all`, and the scripts' watchdog does the same once the
owning (pytest) process is gone.
"""

from __future__ import annotations

import atexit
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KAFKA_DIR = os.path.join(REPO, "tests", "kafka")
STATE_HOME = os.environ.get("SG_STATE_HOME", "/tmp/syncgate-testbed")


def _pinned_kafka() -> str:
    with open(os.path.join(KAFKA_DIR, "pom.xml")) as f:
        for line in f:
            if "<kafka.version>" in line:
                return line.split("<kafka.version>")[1].split("<")[0].strip()
    raise RuntimeError("tests/kafka/pom.xml names no <kafka.version>")


# The Kafka version the test bed runs, read from the one place that pins it
# (tests/kafka/pom.xml; fetch-jars.sh reads the same): the whole suite runs on it.
PINNED_KAFKA = _pinned_kafka()
# The newest Kafka broker, whose versions syncgate's API table follows
# (codec/api.c).
NEWEST_KAFKA = "4.4.0"
# The other release lines the broker matrix runs (test_broker_matrix.py):
# the gate, the clamp, the lifecycle and the client basics on brokers of each;
# the newest patch of each line that Maven Central serves. tests/run.sh
# fetches their jars ahead from this list.
BROKER_MATRIX = ("3.9.2", "4.0.2", NEWEST_KAFKA)


def kafka_libs(version: str) -> str:
    """The jar folder of a Kafka `version` broker (no MirrorMaker 2, no
    Streams), fetched by fetch-jars.sh when missing. For
    start_cluster(kafka_libs=...)."""
    libs = os.path.join(REPO, ".cache", f"kafka-{version}", "libs")
    if not os.path.isfile(os.path.join(libs, ".complete")):
        subprocess.run(["bash", os.path.join(KAFKA_DIR, "fetch-jars.sh")], check=True, timeout=900,
                       stdout=subprocess.DEVNULL,
                       env={**os.environ, "SG_KAFKA_VERSION": version,
                            "SG_KAFKA_BROKER_ONLY": "1", "SG_KAFKA_LIBS": libs})
    return libs


def newest_kafka_libs() -> str:
    """The jar folder of a NEWEST_KAFKA broker (kafka_libs);
    SG_KAFKA_NEWEST_LIBS says where instead."""
    return os.environ.get("SG_KAFKA_NEWEST_LIBS") or kafka_libs(NEWEST_KAFKA)


MM2_OFFSET_SYNCS_TOPIC = "mm2-offset-syncs.dest.internal"  # on the SOURCE cluster


class BedError(RuntimeError):
    """A test-bed script or client operation failed."""


def wait_until(pred: Callable[[], object], timeout: float = 30.0, interval: float = 0.1,
               what: str = "condition"):
    """Poll pred() until it returns a truthy value, and return that value.

    Exceptions raised by pred count as "not yet" (the last one is reported).
    Raises AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - transient client errors are "not yet"
            last_exc = e
        if time.monotonic() >= deadline:
            msg = f"timed out after {timeout}s waiting for {what}"
            if last_exc is not None:
                msg += f" (last error: {last_exc!r})"
            raise AssertionError(msg)
        time.sleep(interval)


@dataclass
class Record:
    """One consumed record."""
    topic: str
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: list = field(default_factory=list)  # [(name, bytes)]
    timestamp: int = -1


@dataclass
class OffsetSync:
    """One MirrorMaker 2 offset-sync record: upstream (source) offset -> downstream."""
    topic: str
    partition: int
    upstream: int
    downstream: int


class KafkaBed:
    """One test run: a run directory holding clusters, mirrors and their logs."""

    def __init__(self, run_dir: Optional[str] = None, heap: Optional[str] = None):
        os.makedirs(STATE_HOME, exist_ok=True)
        self.run_dir = run_dir or tempfile.mkdtemp(prefix="run.", dir=STATE_HOME)
        os.makedirs(self.run_dir, exist_ok=True)
        self.env = dict(os.environ)
        self.env["SG_RUN_DIR"] = self.run_dir
        self.env["SG_OWNER_PID"] = str(os.getpid())
        if heap:
            self.env["SG_HEAP"] = heap
        self.clusters: dict[str, Cluster] = {}
        self.mirrors: dict[str, Mirror] = {}
        self._stopped = False
        atexit.register(self.stop_all)

    # -- scripts -------------------------------------------------------------
    def sh(self, script: str, *args: str, timeout: float = 300, check: bool = True,
           capture: bool = False, env: Optional[dict] = None) -> subprocess.CompletedProcess:
        """Run tests/kafka/<script> with this run's environment (plus `env`).
        Progress goes to stderr (shown by pytest on failure). capture=True
        returns stdout."""
        cmd = ["bash", os.path.join(KAFKA_DIR, script), *map(str, args)]
        p = subprocess.run(cmd, env={**self.env, **(env or {})}, timeout=timeout, text=True,
                           stdout=subprocess.PIPE if capture else None)
        if check and p.returncode != 0:
            raise BedError(f"{' '.join(cmd[1:])} failed with exit code {p.returncode}")
        return p

    # -- clusters ------------------------------------------------------------
    def start_cluster(self, name: str, brokers: int = 1, props: Optional[dict] = None,
                      timeout: float = 120, listeners: Sequence[str] = (),
                      node_props: Optional[dict] = None, first_id: int = 1,
                      kafka_libs: Optional[str] = None) -> "Cluster":
        """Start a KRaft cluster (see cluster.sh) and return it once ready.
        kafka_libs: the jar folder of another Kafka version for its nodes
        (newest_kafka_libs()); its tools still run from the run's own.
        listeners: extra broker listeners "NAME:PROTOCOL" (e.g. "SSL:SSL"),
        each on its own port: Cluster.listener(broker_id, NAME).
        node_props: {node id: {key: value}} for one node only (e.g.
        {1: {"broker.rack": "r1"}})."""
        args = ["start", name, "--brokers", str(brokers), "--first-id", str(first_id),
                "--timeout", str(int(timeout))]
        for k, v in (props or {}).items():
            args += ["--prop", f"{k}={v}"]
        for node, kv in (node_props or {}).items():
            for k, v in kv.items():
                args += ["--node-prop", f"{node}:{k}={v}"]
        for lst in listeners:
            args += ["--listener", lst]
        t0 = time.monotonic()
        self.sh("cluster.sh", *args, timeout=timeout + 60,
                env={"SG_KAFKA_LIBS": kafka_libs} if kafka_libs else None)
        c = Cluster(self, name)
        c.startup_seconds = time.monotonic() - t0
        self.clusters[name] = c
        return c

    def start_clusters(self, names: Sequence[str], **kw) -> list["Cluster"]:
        """start_cluster(name, **kw) for each name, side by side (each start
        mostly waits on its JVMs); the clusters in the order named. If one
        fails, the ones that started are stopped and its error raised."""
        out: dict = {}

        def start(name):
            try:
                out[name] = self.start_cluster(name, **kw)
            except BaseException as e:  # noqa: BLE001 - re-raised below
                out[name] = e

        threads = [threading.Thread(target=start, args=(n,)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failed = [out[n] for n in names if isinstance(out[n], BaseException)]
        if failed:
            for n in names:
                if not isinstance(out[n], BaseException):
                    out[n].stop(fast=True)
            raise failed[0]
        return [out[n] for n in names]

    # -- mirrors -------------------------------------------------------------
    def start_testmirror(self, name: str, source: "Cluster", dest: "Cluster",
                         topics: Sequence[str], create_topics: bool = False, rf: int = 1,
                         extra: Sequence[str] = ()) -> "Mirror":
        """Start the offset-preserving test mirror for `topics` (names, or
        regexes starting with '^'). create_topics: create missing destination
        topics with the source's partition count and `rf` replicas."""
        args = ["start", name, "--from", source.name, "--to", dest.name]
        for t in topics:
            args += ["--topic", t]
        if create_topics:
            args += ["--create-topics", "--rf", str(rf)]
        args += list(extra)
        self.sh("testmirror.sh", *args)
        m = Mirror(self, "testmirror", name)
        m.start_args = args
        self.mirrors[name] = m
        return m

    def start_mm2(self, name: str, source: "Cluster", dest: "Cluster", topics_regex: str,
                  rf: int = 1, props: Optional[dict] = None, timeout: float = 120,
                  source_bootstrap: Optional[str] = None) -> "Mirror":
        """Start MirrorMaker 2 (dedicated mode, aliases source/dest, identity
        policy, offset.lag.max=0) for topics matching `topics_regex`. Its
        offset-syncs topic is MM2_OFFSET_SYNCS_TOPIC on the source cluster.
        source_bootstrap: MM2 reads (and writes its offset-syncs to) the source
        at this address instead, e.g. through syncgate."""
        src = ["--source", source_bootstrap] if source_bootstrap else ["--from", source.name]
        args = ["start", name, *src, "--to", dest.name,
                "--topics", topics_regex, "--rf", str(rf), "--timeout", str(int(timeout))]
        for k, v in (props or {}).items():
            args += ["--prop", f"{k}={v}"]
        t0 = time.monotonic()
        self.sh("mm2.sh", *args, timeout=timeout + 60)
        m = Mirror(self, "mm2", name)
        m.start_args = args
        m.startup_seconds = time.monotonic() - t0
        self.mirrors[name] = m
        return m

    # -- any other process (e.g. syncgate) -------------------------------------
    def spawn(self, name: str, argv: Sequence[str], env: Optional[dict] = None) -> "Proc":
        """Start argv in the background, logging to <run>/logs/NAME.log, recorded
        so that stop_all() stops it (SIGTERM, then SIGKILL)."""
        logs = os.path.join(self.run_dir, "logs")
        os.makedirs(logs, exist_ok=True)
        os.makedirs(os.path.join(self.run_dir, "pids"), exist_ok=True)
        log_path = os.path.join(logs, f"{name}.log")
        penv = dict(self.env)
        penv.update(env or {})
        with open(log_path, "ab") as lf:
            p = subprocess.Popen(list(argv), stdout=lf, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=penv)
        with open(os.path.join(self.run_dir, "pids", f"proc.{name}.pid"), "w") as f:
            f.write(f"{p.pid} proc {name}\n")
        return Proc(name, p, log_path)

    # -- cleanup ----------------------------------------------------------------
    def stop_all(self, fast: bool = True, clean: bool = False) -> None:
        """Stop every process of this run (idempotent). clean: remove the run dir."""
        if not os.path.isdir(self.run_dir):
            return
        args = ["stop-all"] + (["--fast"] if fast else [])
        try:
            self.sh("cluster.sh", *args, timeout=120, check=False)
        finally:
            self._stopped = True
            if clean:
                shutil.rmtree(self.run_dir, ignore_errors=True)


class Proc:
    """A process started by KafkaBed.spawn()."""

    def __init__(self, name: str, popen: subprocess.Popen, log_path: str):
        self.name, self.popen, self.log_path = name, popen, log_path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 10) -> Optional[int]:
        """SIGTERM, then SIGKILL after timeout; returns the exit code."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self.popen.returncode

    def log(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()


class Mirror:
    """A running mirror (kind 'testmirror' or 'mm2'), controlled by its script.

    pause()/resume() send SIGSTOP/SIGCONT to the whole process: nothing is
    copied while paused (lag on demand). kill() (SIGKILL) and start() again
    with the same arguments: the test mirror resumes at the destination's
    high watermarks, MirrorMaker 2 at its last committed source position."""

    def __init__(self, bed: KafkaBed, kind: str, name: str):
        self.bed, self.kind, self.name = bed, kind, name
        self.start_args: list[str] = []
        self.script = "testmirror.sh" if kind == "testmirror" else "mm2.sh"
        self.log_path = os.path.join(bed.run_dir, "logs", f"{kind}.{name}.log")
        self.startup_seconds = 0.0

    @property
    def pid(self) -> Optional[int]:
        out = self.bed.sh(self.script, "pid", self.name, check=False, capture=True).stdout.strip()
        return int(out) if out else None

    def pause(self) -> None:
        self.bed.sh(self.script, "pause", self.name)

    def resume(self) -> None:
        self.bed.sh(self.script, "resume", self.name)

    def stop(self) -> None:
        self.bed.sh(self.script, "stop", self.name)
        self.bed.mirrors.pop(self.name, None)

    def kill(self) -> None:
        """SIGKILL: records in flight are lost or land later (MirrorMaker 2
        re-copies from its last committed position when started again)."""
        self.bed.sh(self.script, "kill", self.name)

    def start(self) -> None:
        """Start again with the arguments it was started with."""
        self.bed.sh(self.script, *self.start_args)
        self.bed.mirrors[self.name] = self

    def log(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()


class Cluster:
    """A running KRaft cluster of the bed, with small client helpers."""

    def __init__(self, bed: KafkaBed, name: str):
        self.bed, self.name = bed, name
        self.startup_seconds = 0.0
        self._admin: Optional[AdminClient] = None
        self._wm_consumer: Optional[Consumer] = None
        self.refresh()

    def refresh(self) -> None:
        """Re-read `cluster.sh env NAME` (ports, pids)."""
        out = self.bed.sh("cluster.sh", "env", self.name, capture=True).stdout
        env = {}
        for line in out.splitlines():
            k, _, v = line.partition("=")
            env[k] = v.strip('"')
        pre = "SG_" + "".join(ch if ch.isalnum() else "_" for ch in self.name.upper())
        self.vars = env
        self.bootstrap: str = env[pre + "_BOOTSTRAP"]
        self.broker_ids: list[int] = [int(i) for i in env[pre + "_BROKERS"].split()]
        self.brokers: dict[int, str] = {i: env[f"{pre}_BROKER_{i}"] for i in self.broker_ids}
        self.pids: dict[int, Optional[int]] = {
            i: int(env[f"{pre}_BROKER_{i}_PID"]) if env.get(f"{pre}_BROKER_{i}_PID") else None
            for i in self.broker_ids}
        self.controller: str = env[pre + "_CONTROLLER"]
        self.dir: str = env[pre + "_DIR"]

    def __repr__(self) -> str:
        return f"Cluster({self.name!r}, {self.bootstrap})"

    def listener(self, broker_id: int, name: str) -> str:
        """host:port of an extra listener (start_cluster(listeners=...))."""
        pre = "SG_" + "".join(ch if ch.isalnum() else "_" for ch in self.name.upper())
        return self.vars[f"{pre}_BROKER_{broker_id}_{name}"]

    # -- processes -------------------------------------------------------------
    def stop(self, fast: bool = True) -> None:
        self._close_clients()
        self.bed.sh("cluster.sh", "stop", self.name, *(["--fast"] if fast else []))
        self.bed.clusters.pop(self.name, None)

    def stop_broker(self, broker_id: int, kill: bool = False) -> None:
        """SIGTERM (controlled shutdown, leaves ISR at once) or SIGKILL (the
        controller fences it after broker.session.timeout.ms = 4 s)."""
        self.bed.sh("cluster.sh", "stop-broker", self.name, broker_id, *(["--kill"] if kill else []))
        self.refresh()

    def start_broker(self, broker_id: int) -> None:
        self.bed.sh("cluster.sh", "start-broker", self.name, broker_id)
        self.refresh()

    def pause_broker(self, broker_id: int) -> None:
        """SIGSTOP one broker (it drops out of ISR after replica.lag.time.max.ms = 6 s)."""
        self.bed.sh("cluster.sh", "pause-broker", self.name, broker_id)

    def resume_broker(self, broker_id: int) -> None:
        self.bed.sh("cluster.sh", "resume-broker", self.name, broker_id)

    def run_tool(self, cls: str, *args: str, check: bool = True) -> str:
        """Run a Kafka tool class (--bootstrap-server added) and return its stdout,
        e.g. run_tool("org.apache.kafka.tools.TopicCommand", "--describe")."""
        return self.bed.sh("cluster.sh", "run", self.name, cls, *args, capture=True,
                           check=check).stdout

    # -- clients ---------------------------------------------------------------
    def client_conf(self, **extra) -> dict:
        conf = {"bootstrap.servers": self.bootstrap}
        conf.update({k.replace("_", "."): v for k, v in extra.items()})
        return conf

    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return self._admin

    def _close_clients(self) -> None:
        if self._wm_consumer is not None:
            try:
                self._wm_consumer.close()
            except Exception:  # noqa: BLE001
                pass
            self._wm_consumer = None
        self._admin = None

    def create_topic(self, topic: str, partitions: int = 1, rf: int = 1,
                     config: Optional[dict] = None, timeout: float = 30) -> None:
        """Create a topic and wait until every partition has a leader."""
        fs = self.admin().create_topics(
            [NewTopic(topic, partitions, rf, config={k: str(v) for k, v in (config or {}).items()})],
            operation_timeout=timeout)
        fs[topic].result(timeout=timeout)
        wait_until(lambda: len(self.partitions(topic)) == partitions and
                   all(p["leader"] >= 0 for p in self.partitions(topic)),
                   timeout=timeout, what=f"leaders for {topic} on {self.name}")

    def delete_topic(self, topic: str, timeout: float = 30) -> None:
        self.admin().delete_topics([topic], operation_timeout=timeout)[topic].result(timeout=timeout)

    def topics(self) -> list[str]:
        return sorted(self.admin().list_topics(timeout=10).topics)

    def partitions(self, topic: str) -> list[dict]:
        """[{partition, leader, replicas, isr}] from fresh metadata ([] if missing)."""
        md = self.admin().list_topics(topic=topic, timeout=10)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return []
        return [{"partition": p.id, "leader": p.leader, "replicas": list(p.replicas),
                 "isr": list(p.isrs)} for p in sorted(t.partitions.values(), key=lambda p: p.id)]

    def isr(self, topic: str, partition: int) -> list[int]:
        return self.partitions(topic)[partition]["isr"]

    def topic_config(self, topic: str) -> dict:
        """Effective topic configs as {name: value}."""
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        entries = self.admin().describe_configs([res])[res].result(timeout=10)
        return {k: v.value for k, v in entries.items()}

    def produce(self, topic: str, n: int = 1, partition: Optional[int] = None,
                values: Optional[Iterable] = None, key_prefix: str = "k",
                headers: Optional[list] = None, timeout: float = 30, **conf) -> list[tuple[int, int]]:
        """Produce n records (value "v<i>" unless `values`, key "<key_prefix><i>")
        with acks=all, idempotence on, and wait for every delivery.
        Extra client settings as keyword args (linger_ms=5 -> linger.ms).
        Returns [(partition, offset)] in produce order; raises BedError on any
        delivery error."""
        pconf = {"bootstrap.servers": self.bootstrap, "acks": "all",
                 "enable.idempotence": True, "linger.ms": 0, "message.timeout.ms": int(timeout * 1000)}
        pconf.update({k.replace("_", "."): v for k, v in conf.items()})
        p = Producer(pconf)
        vals = list(values) if values is not None else [f"v{i}" for i in range(n)]
        results: list = [None] * len(vals)
        errors = []

        def cb(i):
            def _cb(err, msg):
                if err is not None:
                    errors.append((i, err))
                else:
                    results[i] = (msg.partition(), msg.offset())
            return _cb

        for i, v in enumerate(vals):
            kw = {"key": f"{key_prefix}{i}", "value": v, "on_delivery": cb(i)}
            if partition is not None:
                kw["partition"] = partition
            if headers:
                kw["headers"] = headers
            while True:
                try:
                    p.produce(topic, **kw)
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
        left = p.flush(timeout)
        if left:
            raise BedError(f"produce to {topic} on {self.name}: {left} record(s) not delivered in {timeout}s")
        if errors:
            raise BedError(f"produce to {topic} on {self.name}: {len(errors)} failed, first: {errors[0][1]}")
        return results

    def consume(self, topic: str, partition: int, start: int = 0, end: Optional[int] = None,
                timeout: float = 30, isolation: str = "read_uncommitted") -> list[Record]:
        """Records of one partition with start <= offset < end (end: the high
        watermark at call time). Waits up to `timeout` for all of them; raises
        AssertionError when some never arrive."""
        if end is None:
            end = self.high_watermark(topic, partition)
        if end <= start:
            return []
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"kafkabed-{uuid.uuid4()}",
                      "enable.auto.commit": False, "enable.partition.eof": False,
                      "isolation.level": isolation, "fetch.wait.max.ms": 10})
        out: list[Record] = []
        try:
            c.assign([TopicPartition(topic, partition, start)])
            deadline = time.monotonic() + timeout
            while (not out or out[-1].offset < end - 1) and time.monotonic() < deadline:
                m = c.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise BedError(f"consume {topic}[{partition}] on {self.name}: {m.error()}")
                if m.offset() >= end:
                    break
                out.append(Record(m.topic(), m.partition(), m.offset(), m.key(), m.value(),
                                  list(m.headers() or []), m.timestamp()[1]))
        finally:
            c.close()
        if not out or out[-1].offset < end - 1:
            got = out[-1].offset if out else None
            raise AssertionError(f"consume {topic}[{partition}] on {self.name}: wanted offsets "
                                 f"{start}..{end - 1}, last got {got} after {timeout}s")
        return out

    def watermarks(self, topic: str, partition: int, timeout: float = 10) -> tuple[int, int]:
        """(low, high) watermark, fresh from the leader (read_uncommitted)."""
        if self._wm_consumer is None:
            self._wm_consumer = Consumer({"bootstrap.servers": self.bootstrap,
                                          "group.id": "kafkabed-watermarks",
                                          "isolation.level": "read_uncommitted"})
        lo, hi = self._wm_consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=timeout, cached=False)
        return lo, hi

    def high_watermark(self, topic: str, partition: int, timeout: float = 10) -> int:
        return self.watermarks(topic, partition, timeout)[1]

    def offset_syncs(self, topic: str = MM2_OFFSET_SYNCS_TOPIC, timeout: float = 10) -> list[OffsetSync]:
        """Decode every record of MirrorMaker 2's offset-syncs topic on this
        (source) cluster. Key: int16 len + topic + int32 partition; value:
        int64 upstream + int64 downstream."""
        out = []
        if not self.partitions(topic):
            return out
        for p in self.partitions(topic):
            for r in self.consume(topic, p["partition"], 0, timeout=timeout):
                (tlen,) = struct.unpack_from(">h", r.key, 0)
                t = r.key[2:2 + tlen].decode()
                (part,) = struct.unpack_from(">i", r.key, 2 + tlen)
                up, down = struct.unpack_from(">qq", r.value, 0)
                out.append(OffsetSync(t, part, up, down))
        return out
