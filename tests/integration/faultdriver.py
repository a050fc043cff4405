"""faultdriver — randomized fault injection against syncgate's promise
(invariant 1, no false ack), used by test_faults.py.

    run = FaultRun(sg, source, dest, mirror, topic, partitions, seed)
    run.start_producers()            # confluent-kafka idempotent + plain, unique payloads
    run.inject(n_faults)             # the seeded schedule, one fault at a time
    run.stop_producers(); report = run.verify()

With sidecars=[sg1, sg2, sg3] (one per source broker, sg is the first) the
producers bootstrap through all of them, and each syncgate fault (SIGKILL +
restart, SIGHUP, syncgate-ctl) picks one at random; describe_topic then
answers for all of them (see test_faults.py). consumecheck.py checks the
records consumers read through syncgate against the same SYNC windows.

Producers write through syncgate with acks=all. In each delivery callback the
destination high watermark is read at once (its own consumer): HW read after
the ack and still <= offset is a violation, if the topic was effectively SYNC
throughout [send, ack] (± MARGIN): the driver knows its own demotions (from
`--alter --async` until SYNC is seen again) and a monitor thread samples
/v1/mirrors every 100 ms for any other non-SYNC moment (automatic demotion;
samples taken while a restarted sidecar still reads the state log do not
count: the type it reports then is not the one that decides — the log's end
state does, and a topic listed in sync_topics is held meanwhile).
At the end every acknowledged record must be on the destination at the same
offset with the same payload."""

from __future__ import annotations

import collections
import random
import threading
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition

from kafkabed import wait_until

MARGIN = 0.5  # seconds around [send, ack] that must be SYNC for an ack to be checked


def sync_throughout(lo: float, hi: float, windows) -> bool:
    """Whether [lo - MARGIN, hi + MARGIN] (time.monotonic()) meets no
    not-SYNC window (FaultRun.windows())."""
    lo, hi = lo - MARGIN, hi + MARGIN
    return not any(s <= hi and e >= lo for s, e in windows)


@dataclass
class Ack:
    producer: str
    partition: int
    offset: int
    value: bytes
    t_send: float
    t_ack: float
    hw_after: int | None  # destination HW read right after the ack; None: could not read
    hw_delay: float  # seconds from the ack to that read


class FaultRun:
    def __init__(self, sg, source, dest, mirror, topic: str, partitions: int, seed: int,
                 ctl, reload, describe_topic, sidecars=None, renumbered: bool = False, kinds=None):
        """renumbered: the mirror does not keep offsets (MirrorMaker 2): an
        ack is judged by where the destination holds its record first (by
        value; every value is unique). kinds: the fault kinds to draw from."""
        self.renumbered = renumbered
        self.kinds = kinds or ["sg_kill_restart", "sg_reload", "mirror_pause", "mirror_kill_restart",
                               "dest_broker_kill", "demote_promote"]
        self.sg, self.source, self.dest, self.mirror = sg, source, dest, mirror
        self.sidecars = sidecars or [sg]
        self.bootstrap = ",".join(s.bootstrap for s in self.sidecars)
        self.topic, self.partitions, self.rng = topic, partitions, random.Random(seed)
        self.ctl, self.reload, self.describe_topic = ctl, reload, describe_topic
        self.acks: list[Ack] = []
        self.errors = collections.Counter()
        self.faults = collections.Counter()
        self.demotions: list[tuple[float, float]] = []  # (--async sent, --sync sent)
        self.sampled: list[tuple[float, str]] = []  # monitor: (time, effective type)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.down_broker: int | None = None
        self.bursts = 0
        self.slow_promotions = 0

    # -- producers -------------------------------------------------------------
    def start_producers(self) -> None:
        for name, idem in (("idem", True), ("plain", False)):
            t = threading.Thread(target=self._produce, args=(name, idem), daemon=True)
            t.start()
            self._threads.append(t)
        t = threading.Thread(target=self._monitor, daemon=True)
        t.start()
        self._threads.append(t)

    def _produce(self, name: str, idem: bool) -> None:
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": idem,
                      "linger.ms": 5, "request.timeout.ms": 5000, "message.timeout.ms": 60000,
                      "retry.backoff.ms": 100, "socket.connection.setup.timeout.ms": 3000,
                      "reconnect.backoff.max.ms": 500})
        hw = Consumer({"bootstrap.servers": self.dest.bootstrap, "group.id": f"faults-{name}",
                       "isolation.level": "read_uncommitted"})
        sent: dict[bytes, float] = {}
        on_delivery = self._on_delivery(name, hw, sent)
        i = 0
        while not self._stop.is_set():
            v = f"{name}-{i}".encode()
            sent[v] = time.monotonic()
            try:
                p.produce(self.topic, value=v, partition=i % self.partitions, on_delivery=on_delivery)
                i += 1
            except BufferError:
                sent.pop(v)
            p.poll(0.01)  # ~100 records/s per producer
        p.flush(90)
        hw.close()

    def _on_delivery(self, name: str, hw, sent: dict):
        """A delivery callback: each ack recorded with the destination HW of
        its partition read right after it."""
        def on_delivery(err, msg):
            t_ack = time.monotonic()
            v = msg.value()
            if err is not None:
                with self._lock:
                    self.errors[f"{name}:{err.name()}"] += 1
                return
            h = None
            for _ in range(3):
                try:
                    h = hw.get_watermark_offsets(TopicPartition(self.topic, msg.partition()), timeout=1,
                                                 cached=False)[1]
                    break
                except Exception:  # noqa: BLE001 - destination leader moving: retry
                    continue
            with self._lock:
                self.acks.append(Ack(name, msg.partition(), msg.offset(), v, sent.pop(v), t_ack, h,
                                     time.monotonic() - t_ack))
        return on_delivery

    def _monitor(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                eff = self.describe_topic()
            except Exception:  # noqa: BLE001 - syncgate restarting: nothing is acked meanwhile
                eff = None
            if eff is not None:
                self.sampled.append((t, eff))
            time.sleep(0.1)

    def stop_producers(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(120)

    # -- faults -----------------------------------------------------------------
    def inject(self, n: int, log=print, ensure=()) -> None:
        """n faults drawn from the seeded schedule; a kind in `ensure` not
        drawn yet when only as many faults are left as such kinds is forced."""
        kinds = self.kinds
        for k in range(n):
            kind = self.rng.choice(kinds)
            missing = [x for x in ensure if not self.faults[x]]
            if missing and n - k <= len(missing) and kind not in missing:
                kind = missing[0]
            if kind == "mirror_kill_restart" and self.down_broker is not None:
                kind = "mirror_pause"  # resume needs a settled destination HW (see testmirror.c)
            t0 = time.monotonic()
            getattr(self, kind)()
            self.faults[kind] += 1
            log(f"fault {k + 1}/{n}: {kind} ({time.monotonic() - t0:.1f}s)")
            time.sleep(self.rng.uniform(0.2, 1.0))
        self.broker_back()

    def _sidecar(self):
        """The sidecar a syncgate fault hits (the only one, or one at random)."""
        return self.sg if len(self.sidecars) == 1 else self.rng.choice(self.sidecars)

    def sg_kill_restart(self) -> None:
        sg = self._sidecar()
        sg.kill()
        time.sleep(self.rng.uniform(0, 0.5))
        sg.start()

    def sg_reload(self) -> None:
        sg = self._sidecar()
        self.reload(sg, sg.config)

    def mirror_pause(self) -> None:
        self.mirror.pause()
        time.sleep(self.rng.uniform(0.3, 3.0))
        self.mirror.resume()

    def mirror_kill_restart(self) -> None:
        self.mirror.kill()
        time.sleep(self.rng.uniform(0, 1.0))
        self.mirror.start()

    def burst(self) -> None:
        """1,000 records at once through the sidecars (librdkafka, idempotent,
        acks=all), each ack checked as the steady producers' are."""
        self.bursts += 1
        name = f"burst{self.bursts}"
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5, "request.timeout.ms": 5000, "message.timeout.ms": 60000})
        hw = Consumer({"bootstrap.servers": self.dest.bootstrap, "group.id": f"faults-{name}",
                       "isolation.level": "read_uncommitted"})
        sent: dict[bytes, float] = {}
        on_delivery = self._on_delivery(name, hw, sent)
        for i in range(1000):
            v = f"{name}-{i}".encode()
            sent[v] = time.monotonic()
            p.produce(self.topic, value=v, partition=i % self.partitions, on_delivery=on_delivery)
        p.flush(90)
        hw.close()

    def dest_broker_kill(self) -> None:
        """SIGKILL one destination broker (the next such fault starts it again):
        at most one down, so min.insync.replicas=2 still holds."""
        if self.down_broker is not None:
            self.broker_back()
            return
        self.down_broker = self.rng.choice(self.dest.broker_ids)
        self.dest.stop_broker(self.down_broker, kill=True)

    def broker_back(self) -> None:
        if self.down_broker is not None:
            self.dest.start_broker(self.down_broker)
            self.down_broker = None

    def _ctl_alter(self, kind: str) -> None:
        """syncgate-ctl --alter; retried while the sidecar answers 503 (state log not read yet)."""
        sg = self._sidecar()
        wait_until(lambda: self.ctl(sg, "--alter", "--mirror", "dr", "--topic", self.topic,
                                    kind)[0] == 0, timeout=30, interval=0.2, what=f"syncgate-ctl --alter {kind}")

    def demote_promote(self) -> None:
        """--alter --async, then --sync; the promotion happens at lag 0 (maybe
        much later while producers keep the destination busy): the demotion
        window lasts until the monitor sees SYNC again."""
        t_async = time.monotonic()
        self._ctl_alter("--async")
        time.sleep(self.rng.uniform(0.2, 1.5))
        t_sync = time.monotonic()
        self._ctl_alter("--sync")
        self.demotions.append((t_async, t_sync))
        try:
            wait_until(lambda: self.describe_topic() == "SYNC", timeout=10, interval=0.05, what="promoted")
        except AssertionError:
            self.slow_promotions += 1

    # -- verdict -------------------------------------------------------------------
    def windows(self) -> list[tuple[float, float]]:
        """Intervals the topic was not (known to be) effectively SYNC: each
        driver demotion until the first SYNC sample after its --sync, and
        every non-SYNC sample (± the sampling interval)."""
        out = []
        for t_async, t_sync in self.demotions:
            end = next((t for t, e in self.sampled if t > t_sync and e == "SYNC"), float("inf"))
            out.append((t_async, end))
        out += [(t - 0.1, t + 0.1) for t, e in self.sampled if e != "SYNC"]
        return out

    def gated(self, a: Ack, windows) -> bool:
        return sync_throughout(a.t_send, a.t_ack, windows)

    def verify(self) -> dict:
        # librdkafka reports some successes without an offset (a retried
        # batch the broker answers DUPLICATE_SEQUENCE_NUMBER): the payload must
        # be on the destination, at whatever offset
        no_offset = [a for a in self.acks if a.offset is None]
        windows = self.windows()
        checked = [a for a in self.acks if a.offset is not None and self.gated(a, windows)]
        # the end state: every ack on the destination, same offset, same payload
        src_hw = {p: self.source.high_watermark(self.topic, p) for p in range(self.partitions)}
        for p in range(self.partitions):
            wait_until(lambda: self.dest.high_watermark(self.topic, p) >= src_hw[p], timeout=120,
                       what=f"destination [{p}] caught up to {src_hw[p]}")
        dst, first = {}, {}  # first: (partition, value) -> the destination offset of its first copy
        for p in range(self.partitions):
            end = self.dest.high_watermark(self.topic, p) if self.renumbered else src_hw[p]
            for r in self.dest.consume(self.topic, p, end=end, timeout=120):
                dst[(p, r.offset)] = r.value
                first.setdefault((p, r.value), r.offset)

        def at(a: Ack) -> float:
            """Where the destination holds a's record (renumbered: its first copy)."""
            return first.get((a.partition, a.value), float("inf")) if self.renumbered else a.offset
        # HW never decreases (KIP-207): a read after the ack still <= offset is a
        # violation however late; a late read past the offset proves less
        violations = [a for a in checked if a.hw_after is not None and a.hw_after <= at(a)]
        unread = [a for a in checked if a.hw_after is None]
        late = [a for a in checked if a.hw_after is not None and a.hw_delay > 0.5]
        if self.renumbered:
            missing = [a for a in self.acks if a.offset is not None and (a.partition, a.value) not in first]
        else:
            missing = [a for a in self.acks if a.offset is not None and dst.get((a.partition, a.offset)) != a.value]
        present = set(dst.values())
        missing += [a for a in no_offset if a.value not in present]
        return {"acks": len(self.acks), "no_offset": len(no_offset), "checked": len(checked), "violations": violations,
                "src_hw": src_hw, "dst": dst,
                "hw_unreadable": len(unread), "hw_late": len(late), "missing_or_different": missing,
                "faults": dict(self.faults), "errors": dict(self.errors), "samples": len(self.sampled),
                "non_sync_samples": sum(e != "SYNC" for _, e in self.sampled),
                "demotions": len(self.demotions), "slow_promotions": self.slow_promotions}
