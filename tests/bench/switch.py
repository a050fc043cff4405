#!/usr/bin/python3
"""The switch's cost to a producer: `syncgate-ctl failover --switch` repeated.

One source and one destination cluster (one broker each), the
offset-preserving test mirror. Each round: a new topic (--partitions),
mirror and sidecar (switch.* configured, its own state topic); a librdkafka
idempotent producer sends acks=all through the sidecar every millisecond
(--rate) for --lead-s, then `syncgate-ctl failover --mirror dr --switch`
runs while it keeps sending, for --tail-s more. Per round:

  to first destination ack  the call's start (the fence) → the first
                            acknowledgement of a record the destination
                            appended (offset at or past the source's end:
                            with preserved offsets the destination continues
                            the source's offsets)
  unavailability            the longest gap between two acknowledgements
                            around the switch (the producer sends without
                            pause)
  call                      how long the command took (fence, drain, verify,
                            offsets, release, switch)

Prints every round and p50/p99 over the rounds; never fails on time.

    SG_STATE_HOME=/tmp/syncgate-bench /usr/bin/python3 tests/bench/switch.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
import uuid

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

from bench import log, pct  # noqa: E402
from kafkabed import KafkaBed, wait_until  # noqa: E402

SYNCGATE_BIN = os.environ.get("SYNCGATE_BIN", os.path.join(REPO, "build", "proxy", "syncgate"))
CTL_BIN = os.path.join(os.path.dirname(SYNCGATE_BIN), "syncgate-ctl")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sidecar(bed, name, src, dst, topic):
    port, admin, base = free_port(), free_port(), free_port() - max(dst.broker_ids)
    token = os.path.join(bed.run_dir, f"{name}.token")
    with open(token, "w") as f:
        f.write(uuid.uuid4().hex + "\n")
    bid = src.broker_ids[0]
    cfg = {
        "mode": "sidecar",
        "listen": {"kafka": f"127.0.0.1:{port}"},
        "upstream": {"broker": src.brokers[bid]},
        "advertise": {"nodes": {bid: f"127.0.0.1:{port}"}},
        "mirrors": [{"name": "dr", "bootstrap": dst.bootstrap, "offsets": "preserved", "progress": "poll",
                     "sync_topics": [topic]}],
        "state": {"topic": f"__sgbench_switch_{name}", "replication_factor": 1},
        "admin": {"listen": f"127.0.0.1:{admin}", "token_file": token},
        "switch": {"base_port": base, "host": "127.0.0.1"},
        "log": {"level": "info"},
    }
    path = os.path.join(bed.run_dir, f"{name}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    proc = bed.spawn(name, [SYNCGATE_BIN, "--config", path])

    def effective_sync():
        if not proc.alive():
            raise RuntimeError(proc.log()[-3000:])
        out = subprocess.run([CTL_BIN, "--admin", f"127.0.0.1:{admin}", "--output", "json", "--describe",
                              "--mirror", "dr"], capture_output=True, text=True).stdout
        return '"effective":"SYNC"' in out
    wait_until(effective_sync, timeout=120, what=f"{name}: {topic} effective SYNC")
    return proc, port, admin, token


def one_round(bed, src, dst, r, a):
    topic = f"sw{r}-{uuid.uuid4().hex[:6]}"
    src.create_topic(topic, partitions=a.partitions)
    dst.create_topic(topic, partitions=a.partitions)
    mirror = bed.start_testmirror(f"tm{r}", src, dst, [topic])
    proc, port, admin, token = start_sidecar(bed, f"sg-sw{r}", src, dst, topic)
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "enable.idempotence": True, "acks": "all",
                  "linger.ms": 0, "request.timeout.ms": 2000, "message.timeout.ms": 30000})
    acks, halt = [], threading.Event()

    def run():
        i, t0 = 0, time.monotonic()
        while not halt.is_set():
            while time.monotonic() < t0 + i / a.rate:
                p.poll(0.0005)
            p.produce(topic, value=str(i).encode(),
                      on_delivery=lambda err, m: err is None and acks.append((time.monotonic(), m.partition(),
                                                                               m.offset())))
            i += 1
        p.flush(30)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        time.sleep(a.lead_s)
        t_fence = time.monotonic()
        cp = subprocess.run([CTL_BIN, "--admin", f"127.0.0.1:{admin}", "--token-file", token, "failover",
                             "--mirror", "dr", "--timeout-ms", "20000", "--switch"], capture_output=True, text=True)
        t_done = time.monotonic()
        time.sleep(a.tail_s)
    finally:
        halt.set()
        t.join(60)
        mirror.stop()
        proc.stop()
    if cp.returncode != 0:
        raise RuntimeError(f"round {r}: failover --switch exit {cp.returncode}: {cp.stdout}{cp.stderr}")
    ends = [src.high_watermark(topic, q) for q in range(a.partitions)]
    dest_acks = sorted(x[0] for x in acks if x[2] >= ends[x[1]])
    times = sorted(x[0] for x in acks)
    gaps = [b - c for b, c in zip(times[1:], times[:-1]) if c >= t_fence - 1]
    return {"first_ms": (dest_acks[0] - t_fence) * 1000 if dest_acks else None,
            "gap_ms": max(gaps) * 1000 if gaps else None, "call_ms": (t_done - t_fence) * 1000,
            "acks": len(acks), "dest_acks": len(dest_acks)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--rate", type=int, default=1000, help="records/s the producer sends (default 1000)")
    ap.add_argument("--lead-s", type=float, default=3.0)
    ap.add_argument("--tail-s", type=float, default=4.0)
    a = ap.parse_args()
    with open("/proc/loadavg") as f:
        log(f"start: {os.cpu_count()} cores, load average {' '.join(f.read().split()[:3])}")
    bed = KafkaBed()
    try:
        src = bed.start_cluster("sw-src")
        dst = bed.start_cluster("sw-dst")
        rows = []
        for r in range(a.rounds):
            x = one_round(bed, src, dst, r, a)
            rows.append(x)
            log(f"  round {r + 1}: to first destination ack {x['first_ms']:.0f} ms, longest ack gap "
                f"{x['gap_ms']:.0f} ms, call {x['call_ms']:.0f} ms, acks {x['acks']} ({x['dest_acks']} "
                f"by the destination)")
        print(f"\nswitch, {a.rounds} rounds, {a.partitions} partitions, {a.rate} records/s acks=all idempotent "
              f"(librdkafka) through one sidecar; ms:")
        for k, label in (("first_ms", "fence → first destination ack"), ("gap_ms", "longest ack gap"),
                         ("call_ms", "failover --switch call")):
            v = sorted(x[k] for x in rows if x[k] is not None)
            print(f"  {label:32} p50 {pct(v, 50):7.0f}  p99 {pct(v, 99):7.0f}  max {v[-1]:7.0f}")
        with open("/proc/loadavg") as f:
            log(f"end: load average {' '.join(f.read().split()[:3])}")
    finally:
        bed.stop_all(clean=True)


if __name__ == "__main__":
    main()
