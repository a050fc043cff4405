#!/usr/bin/python3
"""Consumer throughput with the clamp to the mirrored high watermark.

One source and one destination cluster (one broker each), the offset-preserving
test mirror, a topic filled and fully mirrored (so the clamp withholds nothing
and what is measured is its cost: every partition of every consumer Fetch
response of the gated topic is judged — as it streams for v12+ responses
above 64 KiB, buffered whole otherwise), and three targets read in
alternating rounds by Kafka's ConsumerPerformance:

  direct  the broker
  clamp   syncgate, the topic SYNC on the mirror, consumers.clamp: clamp (default)
  pass    syncgate, the same, consumers.clamp: pass
  base    with --base-bin: `clamp` run by another syncgate binary (a build
          before a change), for a before/after comparison on the same data

Then end-to-end latency (--latency-s, 0 skips it): records produced with
acks=all at --rate per second, each stamped with its send time, read back
by a consumer on the same target; per record the ack delay (send → ack:
through syncgate the gate's release is in it) and the visible delay (send →
the consumer has it: through `clamp` the mirrored HW is in it), p50/p99/max,
per target in alternating rounds (`direct` and `clamp`).

Prints medians and ratios; never fails on time. Results go to docs/benchmarks.md
by hand, with the machine load (printed at start and end).

    SG_STATE_HOME=/tmp/syncgate-bench /usr/bin/python3 tests/bench/clamp.py [--mb 200] [--rounds 3]
        [--base-bin /path/to/old/syncgate]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench import SG, consumer_perf, cpu_seconds, log, med, pct, producer_perf, rnd  # noqa: E402
from kafkabed import KafkaBed, wait_until  # noqa: E402


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def e2e_latency(bootstrap: str, topic: str, rate: int, seconds: float) -> dict:
    """Produce (acks=all) and consume `topic` partition 0 through `bootstrap` for
    `seconds`; per record: ack and visible delays, ms."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"e2e-{time.time_ns()}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                  "fetch.error.backoff.ms": 10})
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    c.assign([TopicPartition(topic, 0, hi)])
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                  "enable.idempotence": True})
    sent, acked, seen = {}, {}, {}

    def on_ack(err, msg):
        if err is None:
            acked[msg.value()] = time.monotonic()

    i, t0 = 0, time.monotonic()
    end = t0 + seconds
    while time.monotonic() < end:
        due = t0 + i / rate
        while time.monotonic() < due:
            m = c.poll(0.001)
            if m is not None and not m.error():
                seen.setdefault(m.value(), time.monotonic())
            p.poll(0)
        v = f"e2e-{i}".encode()
        sent[v] = time.monotonic()
        p.produce(topic, v, partition=0, on_delivery=on_ack)
        p.poll(0)
        i += 1
    p.flush(30)
    drain = time.monotonic() + 10
    while len(seen) < len(sent) and time.monotonic() < drain:
        m = c.poll(0.01)
        if m is not None and not m.error():
            seen.setdefault(m.value(), time.monotonic())
    c.close()
    ack = sorted((acked[v] - t) * 1000 for v, t in sent.items() if v in acked)
    vis = sorted((seen[v] - t) * 1000 for v, t in sent.items() if v in seen)
    return {"n": len(sent), "acked": len(ack), "seen": len(vis),
            "ack_p50": pct(ack, 50), "ack_p99": pct(ack, 99),
            "vis_p50": pct(vis, 50), "vis_p99": pct(vis, 99), "vis_max": vis[-1] if vis else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=200, help="topic size in MB of 1 KiB records (default 200)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=int, default=200, help="records/s of the latency phase (default 200)")
    ap.add_argument("--latency-s", type=float, default=15, help="seconds per latency round (0: skip)")
    ap.add_argument("--base-bin", help="another syncgate binary measured as target `base` (clamp)")
    a = ap.parse_args()
    log(f"start: {os.cpu_count()} cores, load average {loadavg()}")
    bed = KafkaBed()
    try:
        src = bed.start_cluster("clamp-src")
        dst = bed.start_cluster("clamp-dst")
        topic, n = "cl", a.mb * 1024
        src.create_topic(topic, partitions=a.partitions)
        dst.create_topic(topic, partitions=a.partitions)
        bed.start_testmirror("tm", src, dst, [topic])
        mirror = {"name": "dr", "bootstrap": dst.bootstrap, "offsets": "preserved", "progress": "poll",
                  "sync_topics": [topic]}
        sgs = {"clamp": SG(bed, "sg-clamp", src, mirrors=[mirror], extra={"consumers": {"clamp": "clamp"}}),
               "pass": SG(bed, "sg-pass", src, mirrors=[mirror], extra={"consumers": {"clamp": "pass"}})}
        if a.base_bin:
            sgs["base"] = SG(bed, "sg-base", src, mirrors=[mirror], binary=a.base_bin,
                             extra={"consumers": {"clamp": "clamp"}})
        for sg in sgs.values():
            sg.wait_sync("dr", topic)
        log(f"filling {topic}: {n} records of 1 KiB, acks=1, direct")
        producer_perf(src.bootstrap, topic, n, 1024, "1", 5)
        want = sum(src.high_watermark(topic, p) for p in range(a.partitions))
        wait_until(lambda: sum(dst.high_watermark(topic, p) for p in range(a.partitions)) >= want,
                   timeout=600, interval=1, what="the mirror has every record")
        time.sleep(3)  # syncgate's background progress round (once a second) sees the end
        targets = {"direct": src.bootstrap, "clamp": sgs["clamp"].bootstrap, "pass": sgs["pass"].bootstrap}
        if a.base_bin:
            targets["base"] = sgs["base"].bootstrap
        runs = {t: [] for t in targets}
        clamped0 = sgs["clamp"].metric("syncgate_consumer_responses_clamped_total")
        withheld0 = sgs["clamp"].metric("syncgate_consumer_records_withheld_total")
        for r in range(a.rounds):
            order = list(targets)[r % len(targets):] + list(targets)[:r % len(targets)]
            for t in order:
                pid = sgs[t].pid if t in sgs else None
                c0 = cpu_seconds(pid) if pid else 0.0
                cp = consumer_perf(targets[t], topic, want)
                cp["cpu_s"] = cpu_seconds(pid) - c0 if pid else 0.0
                runs[t].append(cp)
                log(f"  round {r + 1} {t}: fetch {cp['fetch_mb_s']} MB/s ({cp['msgs']} records)"
                    + (f", syncgate CPU {cp['cpu_s']:.2f} s" if pid else "") + f", load {loadavg()}")
        fetches = sgs["clamp"].metric("syncgate_consumer_fetch_requests_total")
        print(f"\nconsumer throughput, {want} records of 1 KiB ({a.mb} MB), {a.partitions} partitions, "
              f"{a.rounds} alternating rounds, medians:")
        base = med([x["fetch_mb_s"] for x in runs["direct"]])
        for t in targets:
            mb = med([x["fetch_mb_s"] for x in runs[t]])
            cpu = med([x["cpu_s"] / (x["mb"] / 1024) for x in runs[t] if x["mb"]]) if t in sgs else None
            print(f"  {t:7} {mb:8.1f} MB/s  {rnd(mb / base):5} x direct"
                  + (f"  syncgate CPU {cpu:.2f} s/GB" if cpu is not None else "")
                  + f"  rounds {[x['fetch_mb_s'] for x in runs[t]]}")
        print(f"  clamp / pass: {rnd(med([x['fetch_mb_s'] for x in runs['clamp']]) / med([x['fetch_mb_s'] for x in runs['pass']]))}")
        if a.base_bin:
            print(f"  clamp / base: {rnd(med([x['fetch_mb_s'] for x in runs['clamp']]) / med([x['fetch_mb_s'] for x in runs['base']]))}"
                  f"  (base: {a.base_bin})")
        print(f"  clamp syncgate: {fetches:.0f} consumer fetches, "
              f"{sgs['clamp'].metric('syncgate_consumer_fetches_streamed_total'):.0f} clamped as they streamed, "
              f"{sgs['clamp'].metric('syncgate_consumer_responses_clamped_total') - clamped0:.0f} responses changed, "
              f"{sgs['clamp'].metric('syncgate_consumer_records_withheld_total') - withheld0:.0f} records withheld")
        for t in sgs:
            print(f"  {t} syncgate: {sgs[t].metric('syncgate_spliced_bytes_total') / 2**20:.0f} MiB spliced "
                  f"(socket to socket in the kernel)")
        if a.latency_s > 0:
            lat = {"direct": [], "clamp": []}
            for r in range(a.rounds):
                for t in (["direct", "clamp"] if r % 2 == 0 else ["clamp", "direct"]):
                    x = e2e_latency(targets[t], topic, a.rate, a.latency_s)
                    lat[t].append(x)
                    log(f"  latency round {r + 1} {t}: {x}")
            print(f"\nend-to-end latency, {a.rate} records/s acks=all to partition 0 for {a.latency_s:.0f} s, "
                  f"{a.rounds} alternating rounds, medians of the rounds' figures (ms):")
            for t, xs in lat.items():
                f = {k: med([x[k] for x in xs if x[k] is not None]) for k in
                     ("ack_p50", "ack_p99", "vis_p50", "vis_p99", "vis_max")}
                print(f"  {t:7} send→ack p50 {f['ack_p50']:.2f} p99 {f['ack_p99']:.2f}   "
                      f"send→visible p50 {f['vis_p50']:.2f} p99 {f['vis_p99']:.2f} max {f['vis_max']:.1f}"
                      f"   records {[x['seen'] for x in xs]} of {[x['n'] for x in xs]}")
        log(f"end: load average {loadavg()}")
    finally:
        bed.stop_all(clean=True)


if __name__ == "__main__":
    main()
