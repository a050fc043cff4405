#!/usr/bin/python3
"""syncgate benchmark suite (run through tests/bench/run.sh; see docs/benchmarks.md).

Prints figures; never passes or fails on time. Every comparison runs its
configurations in the same run, alternating (A B A B ..., the order rotated
each round), and reports medians over rounds and ratios of medians.

Sections (--only to pick some):
  passthrough  ProducerPerformance / ConsumerPerformance direct vs syncgate
               (no mirrors) [vs --peer], SgProbe µs latency, syncgate CPU/GB, RSS
  gate         source append / mirror replication / release delay split for
               poll, tail and mm2; gated vs ungated throughput (max.in.flight 1, 5)
  scale        10,000 idle connections; 10,000 held responses; 1,000 gated
               partitions across two mirrors (destination request/CPU cost)

Results: tests/bench/results/<stamp>/{results.json,results.md,latency.png,...}
and tests/bench/results/latest -> <stamp>.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import yaml  # noqa: E402

from kafkabed import KafkaBed, wait_until  # noqa: E402
from confluent_kafka.admin import NewPartitions  # noqa: E402

KAFKA_LIBS = os.path.join(REPO, ".cache", "kafka-4.3.1", "libs")
SYNCGATE_BIN = os.environ.get("SYNCGATE_BIN", os.path.join(REPO, "build", "proxy", "syncgate"))
CLK_TCK = os.sysconf("SC_CLK_TCK")
JAVA_OPTS = ["-Xmx512m", "-XX:+UseSerialGC", "-Dlog4j2.level=WARN",
             f"-Dlog4j2.configurationFile={os.path.join(REPO, 'tests', 'kafka', 'log4j2.properties')}"]

GOALS = {
    "passthrough_throughput_ratio_min": 0.95,
    "passthrough_added_p99_ms_max": 0.3,
    "release_delay_p50_ms_max_tail_and_poll": 0.5,
    "release_delay_p99_ms_max_tail_and_poll": 2.0,
    "mm2_after_offset_sync_p50_ms_max": 1.0,
    "scale_10k_partitions_2_mirrors_5k_msg_s_syncgate_share_p99_ms_max": 5,
    "scale_10k_partitions_2_mirrors_5k_msg_s_syncgate_cpu_max": 0.2,
    "idle_destination_cpu_per_mirror_max": 0.05,
    "held_response_overhead_bytes_max": 512,  # streaming and bounded memory (was 1 KiB)
    "idle_10k_connections_rss_mib_max": 200,
}


def log(*a):
    print(f"[bench {time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


# -- process figures ---------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (its threads included), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def pct(xs: list, p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def rnd(x, n=3):
    return None if x is None else round(x, n)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- syncgate -------------------------------------------------------------------------

class SG:
    """One syncgate process started by the bench (info logging, own config)."""

    def __init__(self, bed: KafkaBed, name: str, source, mirrors=None, state_topic=None,
                 gate=None, limits=None, env=None, binary=None, extra=None):
        bid = source.broker_ids[0]
        self.port, self.admin_port = free_port(), free_port()
        self.name = name
        cfg = {
            "mode": "sidecar",
            "listen": {"kafka": f"127.0.0.1:{self.port}"},
            "upstream": {"broker": source.brokers[bid], "connect_timeout_ms": 5000},
            "advertise": {"nodes": {bid: f"127.0.0.1:{self.port}"}},
            "gate": {"max_hold_ms": 180000, **(gate or {})},
            "mirrors": mirrors or [],
            "state": {"topic": state_topic or f"__sgbench_state_{name}", "replication_factor": 1},
            "admin": {"listen": f"127.0.0.1:{self.admin_port}"},
            "log": {"level": "info"},
        }
        if limits:
            cfg["limits"] = limits
        cfg.update(extra or {})  # further top-level sections (e.g. consumers)
        self.bootstrap = f"127.0.0.1:{self.port}"
        path = os.path.join(bed.run_dir, f"{name}.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f, sort_keys=False)
        self.proc = bed.spawn(name, [binary or SYNCGATE_BIN, "--config", path], env=env)
        self.pid = self.proc.pid
        wait_until(self._up, timeout=30, what=f"{name} listening")

    def _up(self):
        if not self.proc.alive():
            raise RuntimeError(f"{self.name} exited:\n{self.proc.log()[-3000:]}")
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def http(self, path: str) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.admin_port}{path}", timeout=5) as r:
            return r.read().decode()

    def metrics_text(self) -> str:
        return self.http("/metrics")

    def metric(self, name: str) -> float:
        tot = 0.0
        for line in self.metrics_text().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                tot += float(line.rsplit(" ", 1)[1])
        return tot

    def effective(self, mirror: str, topic: str) -> str:
        d = json.loads(self.http(f"/v1/mirrors?mirror={mirror}&topic={topic}"))
        for m in d.get("mirrors", []):
            for t in m.get("topics", []):
                if t.get("topic") == topic:
                    return t.get("effective", "")
        return ""

    def wait_sync(self, mirror: str, topic: str, timeout=90):
        wait_until(lambda: self.effective(mirror, topic) == "SYNC", timeout=timeout,
                   interval=0.2, what=f"{self.name}: {mirror}/{topic} effective SYNC")

    def histogram(self, name: str, scale: float = 1.0) -> dict:
        """{le: cumulative count} summed over label sets, plus sum/count;
        bounds and sum multiplied by `scale` (1000: seconds to ms)."""
        buckets, s, c = {}, 0.0, 0.0
        for line in self.metrics_text().splitlines():
            if line.startswith(name + "_bucket"):
                m = re.search(r'le="([^"]+)"', line)
                le = float("inf") if m.group(1) == "+Inf" else float(m.group(1)) * scale
                buckets[le] = buckets.get(le, 0) + float(line.rsplit(" ", 1)[1])
            elif line.startswith(name + "_sum"):
                s += float(line.rsplit(" ", 1)[1]) * scale
            elif line.startswith(name + "_count"):
                c += float(line.rsplit(" ", 1)[1])
        return {"buckets": sorted(buckets.items()), "sum": s, "count": c}

    def stop(self):
        self.proc.stop(timeout=15)


def hist_quantile(h: dict, q: float):
    """Upper bucket bound holding quantile q of a cumulative histogram (None if empty)."""
    if not h["count"]:
        return None
    want = q * h["count"]
    for le, c in h["buckets"]:
        if c >= want:
            return le
    return None


def hist_delta(a: dict, b: dict) -> dict:
    ad = dict(a["buckets"])
    return {"buckets": [(le, c - ad.get(le, 0)) for le, c in b["buckets"]],
            "sum": b["sum"] - a["sum"], "count": b["count"] - a["count"]}


# -- Java tools --------------------------------------------------------------------------

def java(cls: str, args: list, cp_extra: str = "", timeout: float = 900) -> str:
    cp = os.path.join(KAFKA_LIBS, "*") + (":" + cp_extra if cp_extra else "")
    p = subprocess.run(["java", *JAVA_OPTS, "-cp", cp, cls, *map(str, args)],
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{cls} exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    return p.stdout + "\n" + p.stderr


PP_RE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                   r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


def producer_perf(bootstrap, topic, n, size, acks, inflight, extra_props=()) -> dict:
    props = [f"bootstrap.servers={bootstrap}", f"acks={acks}",
             f"max.in.flight.requests.per.connection={inflight}",
             f"enable.idempotence={'true' if acks == 'all' else 'false'}", *extra_props]
    out = java("org.apache.kafka.tools.ProducerPerformance",
               ["--topic", topic, "--num-records", n, "--record-size", size, "--throughput", -1,
                "--producer-props", *props])
    m = None
    for m in PP_RE.finditer(out):
        pass
    if not m:
        raise RuntimeError(f"no ProducerPerformance summary:\n{out[-2000:]}")
    g = m.groups()
    return {"records": int(g[0]), "rec_s": float(g[1]), "mb_s": float(g[2]), "avg_ms": float(g[3]),
            "max_ms": float(g[4]), "p50_ms": int(g[5]), "p95_ms": int(g[6]), "p99_ms": int(g[7]),
            "p999_ms": int(g[8])}


def consumer_perf(bootstrap, topic, n) -> dict:
    out = java("org.apache.kafka.tools.ConsumerPerformance",
               ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", n,
                "--timeout", 60000, "--group", f"sgbench-{time.time_ns()}"])
    lines = [ln for ln in out.splitlines() if ln.count(",") >= 9 and not ln.startswith("start.time")]
    if not lines:
        raise RuntimeError(f"no ConsumerPerformance summary:\n{out[-2000:]}")
    f = [x.strip() for x in lines[-1].split(",")]
    # start, end, MB, MB/s, nMsg, nMsg/s, rebalance ms, fetch ms, fetch MB/s, fetch nMsg/s
    return {"mb": float(f[2]), "mb_s": float(f[3]), "msgs": int(f[4]), "fetch_mb_s": float(f[8]),
            "fetch_msg_s": float(f[9])}


class Probe:
    """tests/bench/SgProbe.java, compiled once into the results dir."""

    def __init__(self, outdir: str):
        self.classes = os.path.join(outdir, ".classes")
        os.makedirs(self.classes, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-d", self.classes, "-cp", os.path.join(KAFKA_LIBS, "*"),
                        os.path.join(HERE, "SgProbe.java")], check=True)
        self.n = 0
        self.outdir = outdir

    def run(self, targets: dict, topic: str, size=100, acks="all", inflight=5, rate=500,
            count=1000, rounds=3, partitions=1, warmup=300, src_tail=None, dst_tail=None,
            sync_tail=None, tag="probe") -> list:
        """Returns [(target, round, partition, offset, send_ns, ack_ns, src_ns, dst_ns)];
        with sync_tail ("BOOTSTRAP,OFFSET_SYNCS_TOPIC") self.sync_seen[(target, round, offset)]
        = when the first MM2 offset-sync covering the record was read (partition 0)."""
        self.n += 1
        out = os.path.join(self.outdir, f"{tag}-{self.n}.txt")
        args = []
        for name, tb in targets.items():
            args += ["--target", f"{name}={tb}"]
        args += ["--topic", topic, "--partitions", partitions, "--size", size, "--acks", acks,
                 "--inflight", inflight, "--rate", rate, "--count", count, "--rounds", rounds,
                 "--warmup", warmup, "--out", out]
        if src_tail:
            args += ["--src-tail", src_tail]
        if dst_tail:
            args += ["--dst-tail", dst_tail]
        if sync_tail:
            args += ["--sync-tail", sync_tail]
        res = java("SgProbe", args, cp_extra=self.classes)
        m = re.search(r"records (\d+) errors (\d+)", res)
        if m and int(m.group(2)):
            log(f"SgProbe {tag}: {m.group(2)} errors")
        rows = []
        self.sync_seen = {}
        with open(out) as f:
            for line in f:
                t, r, p, o, s, a, ss, ds, ys = line.split()
                rows.append((t, int(r), int(p), int(o), int(s), int(a), int(ss), int(ds)))
                if int(ys) > 0:
                    self.sync_seen[(t, int(r), int(o))] = int(ys)
        return rows


def ss_counters(pid: int, ports: set) -> tuple:
    """(data segments sent, bytes sent, bytes received) summed over the TCP
    connections of process `pid` to any of `ports` (from `ss -tinp`)."""
    p = subprocess.run(["ss", "-tinpH", "state", "established"], capture_output=True, text=True)
    segs = bs = br = 0
    lines = p.stdout.splitlines()
    for i, line in enumerate(lines):
        if f"pid={pid}," not in line:
            continue
        f = line.split()
        peer = f[3] if len(f) > 3 else ""
        if peer.rsplit(":", 1)[-1] not in ports:
            continue
        info = lines[i + 1] if i + 1 < len(lines) else ""
        m = re.search(r"data_segs_out:(\d+)", info)
        segs += int(m.group(1)) if m else 0
        m = re.search(r"bytes_sent:(\d+)", info)
        bs += int(m.group(1)) if m else 0
        m = re.search(r"bytes_received:(\d+)", info)
        br += int(m.group(1)) if m else 0
    return segs, bs, br


def split_summary(rows, target) -> dict:
    """Ack latency of `target` split by the tails' timestamps (partition 0 records
    seen by both tails): source = send -> source HW shows it; replication =
    source HW -> destination HW shows it; release = destination HW -> ack
    (for a gated target: syncgate noticing the progress and releasing; for
    direct it is negative: the ack does not wait). ms, median over rounds of
    per-round percentiles; 'pooled' = over all rounds."""
    parts = {"total": {}, "source": {}, "replication": {}, "release": {}}
    for t, r, p, o, s, a, ss, ds in rows:
        if t != target or a <= 0 or o < 0:
            continue
        parts["total"].setdefault(r, []).append((a - s) / 1e6)
        if ss > 0 and ds > 0:
            parts["source"].setdefault(r, []).append((ss - s) / 1e6)
            parts["replication"].setdefault(r, []).append((ds - ss) / 1e6)
            parts["release"].setdefault(r, []).append((a - ds) / 1e6)
    out = {}
    for k, per in parts.items():
        pooled = [x for v in per.values() for x in v]
        out[k] = {"n": len(pooled)}
        for name, q in (("p50", 50), ("p99", 99), ("p999", 99.9)):
            out[k][name + "_ms"] = rnd(med([pct(v, q) for v in per.values()]))
            out[k][name + "_ms_pooled"] = rnd(pct(pooled, q)) if pooled else None
    return out


def latency_summary(rows, target) -> dict:
    """Median over rounds of per-round p50/p99/p99.9 ack latency (ms), plus pooled."""
    per_round = {}
    for t, r, _p, o, s, a, _ss, _ds in rows:
        if t == target and a > 0 and o >= 0:
            per_round.setdefault(r, []).append((a - s) / 1e6)
    pooled = [x for v in per_round.values() for x in v]
    out = {"n": len(pooled)}
    for name, q in (("p50", 50), ("p99", 99), ("p999", 99.9)):
        out[name + "_ms"] = rnd(med([pct(v, q) for v in per_round.values()]))
        out[name + "_ms_pooled"] = rnd(pct(pooled, q)) if pooled else None
    return out


# -- sections -----------------------------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.a = args
        self.quick = args.quick
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.outdir = os.path.join(HERE, "results", stamp)
        os.makedirs(self.outdir, exist_ok=True)
        self.res = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
                    "mode": "quick" if self.quick else "full", "machine": machine(),
                    "git": git_rev(), "goals": GOALS, "sections": {}}
        # a private copy: others may rebuild build/ while we run
        global SYNCGATE_BIN
        os.makedirs(os.path.join(self.outdir, ".bin"), exist_ok=True)
        shutil.copy2(SYNCGATE_BIN, os.path.join(self.outdir, ".bin", "syncgate"))
        self.res["syncgate_bin"] = SYNCGATE_BIN
        import hashlib
        with open(SYNCGATE_BIN, "rb") as f:
            self.res["syncgate_sha256"] = hashlib.sha256(f.read()).hexdigest()[:16]
        self.res["syncgate_mtime"] = datetime.datetime.fromtimestamp(
            os.path.getmtime(SYNCGATE_BIN)).isoformat(timespec="seconds")
        SYNCGATE_BIN = os.path.join(self.outdir, ".bin", "syncgate")
        self.base_bin = None
        if args.base_bin:  # another build measured beside it (gate section)
            self.base_bin = os.path.join(self.outdir, ".bin", "syncgate-base")
            shutil.copy2(args.base_bin, self.base_bin)
            self.res["syncgate_base_bin"] = args.base_bin
        self.shim = None
        if not args.no_diag:
            so = os.path.join(self.outdir, ".bin", "nodelay.so")
            if subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", so, os.path.join(HERE, "nodelay_shim.c"),
                               "-ldl"]).returncode == 0:
                self.shim = so
        self.bed = KafkaBed()
        self.probe = Probe(self.outdir)
        self.samples = {}  # plot: name -> [latency ms]
        self.peers = []

    def clusters(self, names):
        out, threads = {}, []

        def start(n):
            try:
                out[n] = self.bed.start_cluster(n)
            except BaseException as e:  # noqa: BLE001
                out[n] = e
        for n in names:
            th = threading.Thread(target=start, args=(n,))
            th.start()
            threads.append(th)
        for th in threads:
            th.join()
        for n in names:
            if isinstance(out[n], BaseException):
                raise out[n]
        return [out[n] for n in names]

    # ---- 1. pass-through ----
    def passthrough(self, src):
        log("pass-through: topics, syncgate (no mirrors)")
        for t, p in (("pt-1", 1), ("pt-16", 16)):
            src.create_topic(t, partitions=p)
        sg = SG(self.bed, "sg-plain", src)
        targets = {"direct": src.bootstrap, "syncgate": sg.bootstrap}
        pids = {"syncgate": sg.pid}
        sgn = None
        if self.shim:  # diagnostic: the same binary with TCP_NODELAY forced on its sockets
            sgn = SG(self.bed, "sg-nodelay", src, env={"LD_PRELOAD": self.shim})
            targets["syncgate+nodelay"] = sgn.bootstrap
            pids["syncgate+nodelay"] = sgn.pid
        for i, peer in enumerate(self.a.peer or []):
            targets[f"peer{i + 1}" if len(self.a.peer) > 1 else "peer"] = peer
        for spec in self.a.peer_cmd or []:
            name, _, cmd = spec.partition("=")
            port = free_port()
            cmd = cmd.replace("{broker}", src.brokers[src.broker_ids[0]]).replace("{port}", str(port))
            proc = self.bed.spawn(f"peer-{name}", ["bash", "-c", "exec " + cmd])
            self.peers.append(proc)

            def up(port=port, proc=proc, name=name):
                if not proc.alive():
                    raise RuntimeError(f"peer {name} exited:\n{proc.log()[-2000:]}")
                with socket.socket() as so:
                    so.settimeout(0.5)
                    return so.connect_ex(("127.0.0.1", port)) == 0
            wait_until(up, timeout=30, what=f"peer {name} listening on {port}")
            targets[name] = f"127.0.0.1:{port}"
            pids[name] = proc.pid  # CPU/RSS of the process the command exec'd
        q = self.quick
        sizes, acks_l, parts, infl = [100, 1024], ["1", "all"], [1, 16], [1, 5]
        if q:
            configs = [(1024, "all", 16, 5), (100, "all", 1, 5), (100, "1", 1, 1), (1024, "1", 16, 1)]
        else:
            configs = [(s, a, p, m) for s in sizes for a in acks_l for p in parts for m in infl]
        rounds = self.a.rounds or (2 if q else 3)
        total_bytes = 48 << 20 if q else 200 << 20
        sec = {"targets": {k: v for k, v in targets.items()}, "rounds": rounds, "producer": [],
               "consumer": [], "latency_probe": []}
        for size, acks, p, m in configs:
            n = total_bytes // size
            runs = {t: [] for t in targets}
            for r in range(rounds):
                order = list(targets)[r % len(targets):] + list(targets)[:r % len(targets)]
                for t in order:
                    pid = pids.get(t, sg.pid)
                    c0, t0 = cpu_seconds(pid), time.monotonic()
                    pp = producer_perf(targets[t], f"pt-{p}", n, size, acks, m)
                    pp["syncgate_cpu_s"] = cpu_seconds(pid) - c0
                    pp["wall_s"] = time.monotonic() - t0
                    pp["syncgate_rss_kib"] = rss_kib(pid)
                    runs[t].append(pp)
                    log(f"  producer {size}B acks={acks} p={p} inflight={m} {t}: {pp['mb_s']} MB/s "
                        f"p99 {pp['p99_ms']} ms sgcpu {pp['syncgate_cpu_s']:.2f}s")
            row = {"size": size, "acks": acks, "partitions": p, "inflight": m, "records": n}
            for t in targets:
                row[t] = {k: med([x[k] for x in runs[t]]) for k in
                          ("mb_s", "rec_s", "p50_ms", "p99_ms", "p999_ms", "max_ms")}
                row[t]["mb_s_rounds"] = [x["mb_s"] for x in runs[t]]
                if t in pids:
                    gb = n * size / 1e9
                    row[t]["cpu_s_per_gb"] = rnd(med([x["syncgate_cpu_s"] / gb for x in runs[t]]))
                    row[t]["rss_mib"] = rnd(max(x["syncgate_rss_kib"] for x in runs[t]) / 1024, 1)
                if t != "direct":
                    row[t]["throughput_ratio"] = rnd(med([x["mb_s"] for x in runs[t]]) /
                                                     med([x["mb_s"] for x in runs["direct"]]))
            sec["producer"].append(row)
        # consumer: the topics now hold the producer runs' records
        for p in ([16] if q else [1, 16]):
            n = 400000 if q else 1000000
            have = sum(src.high_watermark(f"pt-{p}", i) for i in range(p))
            n = min(n, have)  # what the producer runs left there
            runs = {t: [] for t in targets}
            for r in range(rounds):
                order = list(targets)[r % len(targets):] + list(targets)[:r % len(targets)]
                for t in order:
                    pid = pids.get(t, sg.pid)
                    c0 = cpu_seconds(pid)
                    cp = consumer_perf(targets[t], f"pt-{p}", n)
                    cp["syncgate_cpu_s"] = cpu_seconds(pid) - c0
                    runs[t].append(cp)
                    log(f"  consumer p={p} {t}: fetch {cp['fetch_mb_s']} MB/s")
            row = {"partitions": p, "records": n}
            for t in targets:
                row[t] = {"fetch_mb_s": med([x["fetch_mb_s"] for x in runs[t]]),
                          "mb_s": med([x["mb_s"] for x in runs[t]])}
                if t in pids:
                    row[t]["cpu_s_per_gb"] = rnd(med([x["syncgate_cpu_s"] / (x["mb"] * 1.048576e-3)
                                                      for x in runs[t] if x["mb"]]))
                if t != "direct":
                    row[t]["throughput_ratio"] = rnd(row[t]["fetch_mb_s"] / row["direct"]["fetch_mb_s"])
            sec["consumer"].append(row)
        # µs latency at moderate load (SgProbe, all targets in one JVM, alternating)
        lconfs = [(100, "1", 5, 1000), (1024, "all", 5, 1000)] if q else \
            [(100, "1", 1, 1000), (100, "all", 5, 1000), (1024, "all", 5, 2000), (1024, "1", 5, 5000)]
        for size, acks, m, rate in lconfs:
            rows = self.probe.run(targets, "pt-1", size=size, acks=acks, inflight=m, rate=rate,
                                  count=2000 if q else 5000, rounds=max(3, rounds) if q else 5,
                                  tag="pt")
            row = {"size": size, "acks": acks, "inflight": m, "rate_msg_s": rate}
            for t in targets:
                row[t] = latency_summary(rows, t)
                if t != "direct":
                    row[t]["added_p50_ms"] = rnd(row[t]["p50_ms"] - row["direct"]["p50_ms"])
                    row[t]["added_p99_ms"] = rnd(row[t]["p99_ms"] - row["direct"]["p99_ms"])
            log(f"  probe {size}B acks={acks}: " + ", ".join(
                f"{t} p50 {row[t]['p50_ms']} p99 {row[t]['p99_ms']}" for t in targets))
            sec["latency_probe"].append(row)
            if acks == "all" and "direct" not in self.samples:
                for t in targets:
                    self.samples[f"{t} (pass-through, {size} B acks=all)"] = [
                        (a - s) / 1e6 for (tt, _r, _p, o, s, a, _x, _y) in rows if tt == t and a > 0]
        sec["syncgate_rss_mib_end"] = rnd(rss_kib(sg.pid) / 1024, 1)
        self.res["sections"]["passthrough"] = sec
        sg.stop()
        if sgn:
            sgn.stop()
        for proc in self.peers:
            proc.stop()

    def gate(self, src, dst):
        q = self.quick
        log("gate: topics, test mirror, MirrorMaker 2, three syncgates (poll, tail, mm2)")
        for t in ("g-1", "g-mm"):
            src.create_topic(t, partitions=1)
            dst.create_topic(t, partitions=1)
        src.create_topic("u-1", partitions=1)
        tm = self.bed.start_testmirror("tm", src, dst, ["g-1"])
        mm = self.bed.start_mm2("mm", src, dst, "g-mm")
        def mconf(progress=None, offsets="preserved", topics=("g-1",)):
            m = {"name": "dr", "bootstrap": dst.bootstrap, "offsets": offsets,
                 "sync_topics": list(topics)}
            if offsets == "mm2":
                m["mm2_offset_syncs_topic"] = "mm2-offset-syncs.dest.internal"
            else:
                m["progress"] = progress
                m["poll_interval_ms"] = 5
            return m
        sgs = {"poll": SG(self.bed, "sg-poll", src, [mconf("poll")]),
               "tail": SG(self.bed, "sg-tail", src, [mconf("tail")]),
               "mm2": SG(self.bed, "sg-mm2", src, [mconf(offsets="mm2", topics=("g-mm",))])}
        if self.shim:  # diagnostic: tail mode with TCP_NODELAY forced
            sgs["tail+nodelay"] = SG(self.bed, "sg-tail-nd", src, [mconf("tail")],
                                     env={"LD_PRELOAD": self.shim})
        base = self.base_bin
        if base:  # the same targets from another build, measured in the same JVM, alternating
            sgs["poll@base"] = SG(self.bed, "sg-poll-base", src, [mconf("poll")], binary=base)
            sgs["tail@base"] = SG(self.bed, "sg-tail-base", src, [mconf("tail")], binary=base)
            sgs["mm2@base"] = SG(self.bed, "sg-mm2-base", src, [mconf(offsets="mm2", topics=("g-mm",))],
                                 binary=base)
        src.produce("g-1", 1)
        src.produce("g-mm", 1)
        for k, sg in sgs.items():
            sg.wait_sync("dr", "g-mm" if k.startswith("mm2") else "g-1")
        log("gate: all three effective SYNC")
        sec = {"config": {"poll_interval_ms": 5, "mirror_preserved": "tests/kafka/testmirror",
                          "mirror_mm2": "MirrorMaker 2 (offset.lag.max=0)"},
               "split": [], "throughput": []}
        rate, count, rounds = 200, (600 if q else 2000), max(self.a.rounds or 0, 3 if q else 5)
        for label, topic, targets in (
                ("preserved", "g-1", {"direct": src.bootstrap, "poll": sgs["poll"].bootstrap,
                                      "tail": sgs["tail"].bootstrap,
                                      **({"tail+nodelay": sgs["tail+nodelay"].bootstrap}
                                         if "tail+nodelay" in sgs else {}),
                                      **({k: sgs[k].bootstrap for k in ("poll@base", "tail@base")}
                                         if base else {})}),
                ("mm2", "g-mm", {"direct": src.bootstrap, "mm2": sgs["mm2"].bootstrap,
                                 **({"mm2@base": sgs["mm2@base"].bootstrap} if base else {})})):
            h0 = {k: sgs[k].histogram("syncgate_mirror_sync_replication_latency_seconds", scale=1000)
                  for k in targets if k in sgs}
            rows = self.probe.run(targets, topic, size=100, acks="all", inflight=5, rate=rate,
                                  count=count, rounds=rounds, warmup=100, src_tail=src.bootstrap,
                                  dst_tail=dst.bootstrap, tag=f"gate-{label}",
                                  sync_tail=(f"{src.bootstrap},mm2-offset-syncs.dest.internal"
                                             if label == "mm2" else None))
            # how late the tail consumers see a record: source-seen minus ack of direct acks=all
            # (on a 1-broker source the HW passes the record when the ack is sent)
            obs = [(ss - a) / 1e6 for (tt, _r, p, o, s, a, ss, _d) in rows
                   if tt == "direct" and p == 0 and ss > 0 and a > 0]
            sec.setdefault("observer_delay_ms", {})[label] = {
                "p50": rnd(pct(obs, 50)) if obs else None, "p99": rnd(pct(obs, 99)) if obs else None}
            for t in targets:
                row = {"target": t, "topic": topic, "size": 100, "rate_msg_s": rate, "inflight": 5}
                row.update(split_summary(rows, t))
                if label == "mm2" and t in sgs:
                    # offset-sync readable on the source (sync tail) -> ack
                    per = {}
                    for (tt, r_, p_, o, s, a, _x, _y) in rows:
                        y = self.probe.sync_seen.get((tt, r_, o))
                        if tt == t and p_ == 0 and a > 0 and y:
                            per.setdefault(r_, []).append((a - y) / 1e6)
                    if per:
                        row["after_sync"] = {"n": sum(len(v) for v in per.values()),
                                             **{k + "_ms": rnd(med([pct(v, q) for v in per.values()]))
                                                for k, q in (("p50", 50), ("p99", 99), ("p999", 99.9))}}
                if t in sgs:
                    h = hist_delta(h0[t], sgs[t].histogram("syncgate_mirror_sync_replication_latency_seconds", scale=1000))
                    row["sg_replication_latency_hist"] = {
                        "count": h["count"], "mean_ms": rnd(h["sum"] / h["count"]) if h["count"] else None,
                        "p50_le_ms": hist_quantile(h, 0.5), "p99_le_ms": hist_quantile(h, 0.99)}
                sec["split"].append(row)
                self.samples[f"{'gated ' + t if t != 'direct' else 'direct'} ({label}, 100 B acks=all, "
                             f"{rate}/s)"] = [(a - s) / 1e6 for (tt, _r, _p, o, s, a, _x, _y) in rows
                                                if tt == t and a > 0 and o >= 0]
                log(f"  split {label} {t}: total p50 {row['total']['p50_ms']} p99 {row['total']['p99_ms']}"
                    f" release p50 {row['release']['p50_ms']} p99 {row['release']['p99_ms']}")
        # gated vs ungated throughput, through the same syncgate
        n = (16 << 20) // 1024 if q else (64 << 20) // 1024
        tconf = {"ungated (u-1 via sg-poll)": (sgs["poll"].bootstrap, "u-1"),
                 "gated poll": (sgs["poll"].bootstrap, "g-1"),
                 "gated tail": (sgs["tail"].bootstrap, "g-1")}
        if not q:
            tconf["gated mm2"] = (sgs["mm2"].bootstrap, "g-mm")
        for m in (1, 5):
            runs = {k: [] for k in tconf}
            for r in range(self.a.rounds or (2 if q else 3)):
                ks = list(tconf)
                for k in ks[r % len(ks):] + ks[:r % len(ks)]:
                    pp = producer_perf(tconf[k][0], tconf[k][1], n, 1024, "all", m)
                    runs[k].append(pp)
                    log(f"  throughput in-flight {m} {k}: {pp['mb_s']} MB/s p99 {pp['p99_ms']} ms")
            row = {"inflight": m, "size": 1024, "records": n}
            base = med([x["mb_s"] for x in runs["ungated (u-1 via sg-poll)"]])
            for k in tconf:
                v = med([x["mb_s"] for x in runs[k]])
                row[k] = {"mb_s": v, "ratio": rnd(v / base) if base else None,
                          "p50_ms": med([x["p50_ms"] for x in runs[k]]),
                          "p99_ms": med([x["p99_ms"] for x in runs[k]])}
            sec["throughput"].append(row)
        self.res["sections"]["gate"] = sec
        for sg in sgs.values():
            sg.stop()
        tm.stop()
        mm.stop()

    def scale(self, src, dst, dst2):
        sec = {}
        self.res["sections"]["scale"] = sec
        parts = [int(x) for x in (self.a.scale_partitions or "1000").split(",")]
        todo = [] if self.a.scale_gated_only else [("idle_connections", lambda: self.scale_idle(src)),
                                                   ("held_responses", lambda: self.scale_held(src, dst))]
        for P in parts:
            todo.append(("gated_partitions" if P == 1000 else f"gated_partitions_{P}",
                         lambda P=P: self.scale_partitions(src, dst, dst2, P)))
        for name, fn in todo:
            if self.a.scale and name.split("_")[0] not in self.a.scale.split(","):
                continue
            try:
                sec[name] = fn()
            except Exception as e:  # noqa: BLE001
                log(f"scale {name} FAILED: {e!r}")
                sec[name] = {"error": repr(e)[:2000]}
            self.write()

    def scale_idle(self, src) -> dict:
        want = 10000
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        # syncgate holds 2 descriptors per client connection (client + upstream)
        n = min(want, (soft - 400) // 2)
        log(f"scale: {n} idle connections (open-files limit {soft})")
        sg = SG(self.bed, "sg-idle", src)
        time.sleep(1)
        out = {"connections": n, "open_files_limit": soft}
        rss0, cpu0 = rss_kib(sg.pid), cpu_seconds(sg.pid)
        socks = []
        t0 = time.monotonic()
        try:
            for k in range(n):
                try:
                    socks.append(socket.create_connection(("127.0.0.1", sg.port), timeout=10))
                except OSError as e:
                    out["connect_error"] = f"after {k} connections: {e}"
                    break
            try:
                wait_until(lambda: sg.metric("syncgate_client_connections") >= len(socks), timeout=60,
                           interval=0.5, what=f"{len(socks)} client connections")
            except AssertionError:
                pass
            out["client_connections_metric"] = sg.metric("syncgate_client_connections")
            n = out["connections"] = len(socks)
            out["connect_s"] = rnd(time.monotonic() - t0, 2)
            time.sleep(2)
            rss1 = rss_kib(sg.pid)
            out["upstream_up"] = sg.metric("syncgate_upstream_up")
            # then each sends one ApiVersions (v3) and reads its answer: "used, then idle"
            import rawkafka
            body = rawkafka.string("sgbench", True) + rawkafka.string("1.0", True) + rawkafka.TAGS0
            frame = rawkafka.request_header(18, 3, 1) + body
            frame = rawkafka.i32(len(frame)) + frame
            for s in socks:
                s.setblocking(True)
                s.settimeout(30)
                s.sendall(frame)
            got = 0
            for s in socks:
                try:
                    hdr = b""
                    while len(hdr) < 4:
                        chunk = s.recv(4 - len(hdr))
                        if not chunk:
                            raise ConnectionError("closed")
                        hdr += chunk
                    left = int.from_bytes(hdr, "big", signed=True)
                    while left > 0:
                        chunk = s.recv(min(left, 65536))
                        if not chunk:
                            raise ConnectionError("closed")
                        left -= len(chunk)
                    got += 1
                except OSError:
                    pass
            time.sleep(2)
            rss2 = rss_kib(sg.pid)
            out.update({"rss_before_mib": rnd(rss0 / 1024, 1), "rss_idle_mib": rnd(rss1 / 1024, 1),
                        "rss_after_apiversions_mib": rnd(rss2 / 1024, 1), "apiversions_answered": got,
                        "kib_per_connection_idle": rnd((rss1 - rss0) / n, 2),
                        "kib_per_connection_used": rnd((rss2 - rss0) / n, 2),
                        "rss_at_10000_mib_extrapolated": rnd((rss0 + (rss2 - rss0) * want / n) / 1024, 1),
                        "cpu_s": rnd(cpu_seconds(sg.pid) - cpu0, 2)})
        finally:
            for s in socks:
                s.close()
        try:
            wait_until(lambda: sg.metric("syncgate_client_connections") == 0, timeout=60, interval=0.5,
                       what="connections closed")
            time.sleep(1)
            out["rss_after_close_mib"] = rnd(rss_kib(sg.pid) / 1024, 1)
        except AssertionError as e:
            out["close_error"] = str(e)
        sg.stop()
        log(f"  idle: {out}")
        return out

    def scale_held(self, src, dst) -> dict:
        import rawkafka
        total, nconn = 10000, 10
        per = total // nconn
        log(f"scale: {total} held responses over {nconn} connections")
        src.create_topic("h-1", partitions=1)
        dst.create_topic("h-1", partitions=1)
        tm = self.bed.start_testmirror("tmh", src, dst, ["h-1"])
        sg = SG(self.bed, "sg-held", src, [{"name": "dr", "bootstrap": dst.bootstrap, "offsets": "preserved",
                                           "progress": "poll", "poll_interval_ms": 5,
                                           "sync_topics": ["h-1"]}])
        src.produce("h-1", 1)
        sg.wait_sync("dr", "h-1")
        clients = [rawkafka.RawClient("127.0.0.1", sg.port, timeout=300) for _ in range(nconn)]
        for c in clients:
            r = c.produce("h-1", 0, [b"warm"], version=9)
            assert r.topics["h-1"][0].error_code == 0, r
        body = rawkafka.produce_body(9, -1, 170000, {"h-1": {0: rawkafka.record_batch([b"x" * 100])}})
        time.sleep(1)
        out = {"responses": total, "connections": nconn, "record_bytes": 100,
               "request_frame_bytes": len(body) + 30}
        tm.pause()
        rss0, cpu0 = rss_kib(sg.pid), cpu_seconds(sg.pid)
        t0 = time.monotonic()
        for c in clients:
            for _ in range(per):
                c.send(0, 9, body)
        held = wait_until(lambda: (lambda h: h if h >= total else 0)(sg.metric("syncgate_held_responses")),
                          timeout=120, interval=0.2, what=f"{total} held responses")
        out["hold_all_s"] = rnd(time.monotonic() - t0, 2)
        time.sleep(2)
        rss1, cpu1 = rss_kib(sg.pid), cpu_seconds(sg.pid)
        held_bytes = sg.metric("syncgate_held_bytes")
        hw_target = src.high_watermark("h-1", 0)
        out.update({"held_metric": held, "held_bytes_metric": held_bytes,
                    "rss_before_mib": rnd(rss0 / 1024, 1), "rss_held_mib": rnd(rss1 / 1024, 1),
                    "rss_bytes_per_held": rnd((rss1 - rss0) * 1024 / total, 0),
                    "held_bytes_per_response": rnd(held_bytes / total, 1),
                    "overhead_bytes_per_held": rnd(((rss1 - rss0) * 1024 - held_bytes) / total, 0),
                    "cpu_s_while_holding": rnd(cpu1 - cpu0, 3)})
        # resume: time until the destination caught up, and until every response arrived
        done = {}

        def reader(i, c):
            errs = 0
            for _ in range(per):
                _, b = c.recv()
                out["response_frame_bytes"] = len(b) + 8
                r = rawkafka.parse_produce_response(b, 9)
                errs += sum(1 for p in r.topics["h-1"] if p.error_code)
            done[i] = (time.monotonic(), errs)
        ths = [threading.Thread(target=reader, args=(i, c)) for i, c in enumerate(clients)]
        tm.resume()
        t_res = time.monotonic()
        for th in ths:
            th.start()
        t_dst = None
        while any(th.is_alive() for th in ths) or t_dst is None:
            if t_dst is None and dst.high_watermark("h-1", 0) >= hw_target:
                t_dst = time.monotonic()
            if time.monotonic() - t_res > 200:
                break
            time.sleep(0.002)
        for th in ths:
            th.join(timeout=60)
        t_all = max(v[0] for v in done.values()) if len(done) == nconn else None
        cpu2 = cpu_seconds(sg.pid)
        out.update({"resume_to_dest_caught_up_s": rnd(t_dst - t_res, 3) if t_dst else None,
                    "resume_to_all_released_s": rnd(t_all - t_res, 3) if t_all else None,
                    "dest_caught_up_to_all_released_ms": rnd((t_all - t_dst) * 1000, 1)
                    if t_all and t_dst else None,
                    "errors": sum(v[1] for v in done.values()), "connections_done": len(done),
                    "overhead_bytes_per_held_vs_response_frame":
                        rnd((rss1 - rss0) * 1024 / total - out.get("response_frame_bytes", 0), 0),
                    "cpu_s_releasing": rnd(cpu2 - cpu1, 3),
                    "rss_after_release_mib": rnd(rss_kib(sg.pid) / 1024, 1)})
        for c in clients:
            c.close()
        sg.stop()
        tm.stop()
        log(f"  held: {out}")
        return out

    def scale_partitions(self, src, dst, dst2, P=1000) -> dict:
        q = self.quick
        M = self.a.scale_mirrors or 2
        dsts = [("A", dst), ("B", dst2)][:M]
        topic = "sc" if P == 1000 else f"sc{P}"
        log(f"scale: {P} partitions gated by {M} mirror(s)")
        for c in [src] + [c for _n, c in dsts]:
            # KRaft refuses > max.records.per.user.op (10,000) records in one request
            c.create_topic(topic, partitions=min(P, 5000), timeout=600)
            for n in range(10000, P + 5000, 5000):
                c.admin().create_partitions([NewPartitions(topic, min(n, P))])[topic].result(timeout=600)
            if P > 5000:
                wait_until(lambda c=c: len(c.partitions(topic)) == P, timeout=600,
                           what=f"{topic}: {P} partitions")
        tms = [self.bed.start_testmirror(f"tm{n}{P}", src, c, [topic]) for n, c in dsts]
        dpids = [p for _n, c in dsts for p in c.pids.values() if p]
        dports = {b.rsplit(":", 1)[1] for _n, c in dsts for b in c.brokers.values()}
        out = {"partitions": P, "mirrors": M, "what": f"one topic of {P:,} partitions gated by {M} mirror(s) "
               f"({P * M:,} mirror-partition pairs)", "modes": {}}
        W = 8 if q else 20
        rate = self.a.scale_rate or 1000
        for mode in ("poll", "tail"):
            mirrors = [{"name": n, "bootstrap": c.bootstrap, "offsets": "preserved", "progress": mode,
                        "poll_interval_ms": 5, "sync_topics": [topic]} for n, c in dsts]
            sg = SG(self.bed, f"sg-scale-{mode}-{P}", src, mirrors)
            for n, _c in dsts:
                sg.wait_sync(n, topic, timeout=600)
            time.sleep(2)

            def requests(kind):
                n = 0.0
                for line in sg.metrics_text().splitlines():
                    if line.startswith("syncgate_mirror_progress_requests_total{") and f'kind="{kind}"' in line:
                        n += float(line.rsplit(" ", 1)[1])
                return n

            def snap():
                segs, bsent, brecv = ss_counters(sg.pid, dports)
                return {"t": time.monotonic(), "sg_cpu": cpu_seconds(sg.pid),
                        "dst_cpu": sum(cpu_seconds(p) for p in dpids), "segs": segs, "bsent": bsent,
                        "brecv": brecv, "req_demand": requests("demand"), "req_bg": requests("background"),
                        "rss": rss_kib(sg.pid)}

            def delta(a, b):
                dt = b["t"] - a["t"]
                return {"seconds": rnd(dt, 2), "syncgate_cpu_s_per_s": rnd((b["sg_cpu"] - a["sg_cpu"]) / dt),
                        "progress_requests_demand_per_s": rnd((b["req_demand"] - a["req_demand"]) / dt, 1),
                        "progress_requests_background_per_s": rnd((b["req_bg"] - a["req_bg"]) / dt, 1),
                        "syncgate_rss_mib": rnd(b["rss"] / 1024, 1),
                        "dest_brokers_cpu_s_per_s": rnd((b["dst_cpu"] - a["dst_cpu"]) / dt),
                        "syncgate_segments_to_dest_per_s": rnd((b["segs"] - a["segs"]) / dt, 1),
                        "syncgate_bytes_to_dest_per_s": rnd((b["bsent"] - a["bsent"]) / dt, 0),
                        "syncgate_bytes_from_dest_per_s": rnd((b["brecv"] - a["brecv"]) / dt, 0)}
            a = snap()
            time.sleep(W)
            res = {"idle": delta(a, snap())}
            runs = {"direct": [], "syncgate": []}
            for r in range(2):
                for t in (["direct", "syncgate"] if r % 2 == 0 else ["syncgate", "direct"]):
                    a = snap()
                    h0 = sg.histogram("syncgate_mirror_sync_replication_latency_seconds", scale=1000)
                    r0 = sg.histogram("syncgate_mirror_release_delay_seconds", scale=1000)
                    rows = self.probe.run({t: src.bootstrap if t == "direct" else sg.bootstrap}, topic,
                                          size=100, acks="all", inflight=5, rate=rate, count=rate * W,
                                          rounds=1, partitions=P, warmup=P, tag=f"scale-{mode}-{t}")
                    d = delta(a, snap())
                    d.update(latency_summary(rows, t))
                    if t == "syncgate":
                        h = hist_delta(h0, sg.histogram("syncgate_mirror_sync_replication_latency_seconds", scale=1000))
                        d["sg_hist_p50_le_ms"] = hist_quantile(h, 0.5)
                        d["sg_hist_p99_le_ms"] = hist_quantile(h, 0.99)
                        rh = hist_delta(r0, sg.histogram("syncgate_mirror_release_delay_seconds", scale=1000))
                        d["sg_release_p50_le_ms"] = hist_quantile(rh, 0.5)
                        d["sg_release_p99_le_ms"] = hist_quantile(rh, 0.99)
                        d["sg_release_mean_ms"] = rnd(rh["sum"] / rh["count"], 4) if rh["count"] else None
                    runs[t].append(d)
                    log(f"  {mode} {t}: {d}")
            for t, v in runs.items():
                res[t] = {k: med([x[k] for x in v]) for k in v[0] if isinstance(v[0][k], (int, float))}
            out["modes"][mode] = res
            sg.stop()
            time.sleep(1)
        out["load"] = f"SgProbe {rate} msg/s of 100 B, acks=all, round-robin over the {P:,} partitions, " \
                      f"{W} s per run (JVM start-up included in the per-second figures)"
        for t in tms:
            t.stop()
        return out

    def write(self):
        with open(os.path.join(self.outdir, "results.json"), "w") as f:
            json.dump(self.res, f, indent=1)
        md = render_markdown(self.res)
        with open(os.path.join(self.outdir, "results.md"), "w") as f:
            f.write(md)
        plot(self.samples, self.outdir)
        latest = os.path.join(HERE, "results", "latest")
        if os.path.islink(latest) or os.path.exists(latest):
            os.remove(latest)
        os.symlink(os.path.basename(self.outdir), latest)
        return md

    def main(self):
        only = set(self.a.only.split(",")) if self.a.only else {"passthrough", "gate", "scale"}
        try:
            names = ["source", "dest"] + (["dest2"] if "scale" in only else [])
            log(f"starting clusters {names} (run dir {self.bed.run_dir})")
            cl = self.clusters(names)
            src, dst = cl[0], cl[1]
            dst2 = cl[2] if len(cl) > 2 else None
            for name, fn in (("passthrough", lambda: self.passthrough(src)),
                             ("gate", lambda: self.gate(src, dst)),
                             ("scale", lambda: self.scale(src, dst, dst2))):
                if name in only:
                    t0 = time.monotonic()
                    try:
                        fn()
                    except Exception as e:  # noqa: BLE001 - report and go on
                        log(f"section {name} FAILED: {e!r}")
                        self.res["sections"].setdefault(name, {})["error"] = repr(e)[:2000]
                    self.res["sections"].setdefault(name, {})["seconds"] = round(time.monotonic() - t0)
                    self.write()
        finally:
            for c in list(self.bed.clusters.values()):
                try:
                    c._close_clients()  # before the brokers go: no reconnect noise on stderr
                except Exception:  # noqa: BLE001
                    pass
            self.bed.stop_all()
            if not self.a.keep:
                shutil.rmtree(self.bed.run_dir, ignore_errors=True)
            else:
                log(f"run dir kept: {self.bed.run_dir}")
        md = self.write()
        print(md)
        log(f"results: {self.outdir}")


# -- output ------------------------------------------------------------------------------

def machine() -> dict:
    m = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    m["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/loadavg") as f:
            m["loadavg_at_start"] = f.read().split()[:3]
        m["mem_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except OSError:
        pass
    return m


def git_rev() -> str:
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""


def fmt(x, n=2):
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{n}f}"
    return str(x)


def render_markdown(res: dict) -> str:
    L = [f"# syncgate benchmarks — {res['date']} ({res['mode']})", "",
         f"Machine: {res['machine'].get('cpus')} CPUs ({res['machine'].get('cpu', '?')}), "
         f"load at start {' '.join(res['machine'].get('loadavg_at_start', []))}; git {res['git']} "
         f"(syncgate binary built {res.get('syncgate_mtime', '?')}, sha256 {res.get('syncgate_sha256', '?')}). "
         "Shared, noisy machine: compare ratios within a run, not absolute figures.", ""]
    s = res["sections"]
    pt = s.get("passthrough")
    if pt and "producer" in pt:
        others = [t for t in pt["targets"] if t != "direct"]
        L += ["## Pass-through (no mirrors): ProducerPerformance, medians of "
              f"{pt['rounds']} alternating rounds", "",
              "Goal: ≥ 0.95× direct throughput, ≤ 0.3 ms added p99 (see the µs probe below; "
              "ProducerPerformance reports whole ms).", ""]
        hdr = "| size | acks | parts | in-flight | direct MB/s | " + " | ".join(
            f"{t} MB/s | {t} ratio" for t in others) + \
            " | direct p50/p99/p99.9 ms | " + " | ".join(f"{t} p50/p99/p99.9 ms" for t in others) + \
            " | CPU s/GB (" + " / ".join(t for t in others if "cpu_s_per_gb" in pt["producer"][0][t]) + \
            ") | RSS MiB |"
        L += [hdr, "|" + "---|" * (hdr.count("|") - 1)]
        for r in pt["producer"]:
            d = r["direct"]
            cells = [str(r["size"]), r["acks"], str(r["partitions"]), str(r["inflight"]), fmt(d["mb_s"])]
            for t in others:
                cells += [fmt(r[t]["mb_s"]), fmt(r[t].get("throughput_ratio"))]
            cells.append(f"{fmt(d['p50_ms'], 0)}/{fmt(d['p99_ms'], 0)}/{fmt(d['p999_ms'], 0)}")
            for t in others:
                cells.append(f"{fmt(r[t]['p50_ms'], 0)}/{fmt(r[t]['p99_ms'], 0)}/{fmt(r[t]['p999_ms'], 0)}")
            cells += [" / ".join(fmt(r[t].get("cpu_s_per_gb")) for t in others if "cpu_s_per_gb" in r[t]),
                      " / ".join(fmt(r[t].get("rss_mib"), 1) for t in others if "rss_mib" in r[t])]
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
        if pt.get("consumer"):
            L += ["ConsumerPerformance (fetch MB/s, excluding group join):", "",
                  "| parts | direct | " + " | ".join(f"{t} | {t} ratio" for t in others) +
                  " | CPU s/GB (" + " / ".join(t for t in others if "cpu_s_per_gb" in pt["consumer"][0][t]) + ") |",
                  "|---|---|" + "---|---|" * len(others) + "---|"]
            for r in pt["consumer"]:
                cells = [str(r["partitions"]), fmt(r["direct"]["fetch_mb_s"])]
                for t in others:
                    cells += [fmt(r[t]["fetch_mb_s"]), fmt(r[t].get("throughput_ratio"))]
                cells.append(" / ".join(fmt(r[t].get("cpu_s_per_gb")) for t in others if "cpu_s_per_gb" in r[t]))
                L.append("| " + " | ".join(cells) + " |")
            L.append("")
        if pt.get("latency_probe"):
            L += ["µs latency probe (SgProbe: Java producer, paced, 1 partition; per-round percentiles, "
                  "median over rounds), ms:", "",
                  "| size | acks | in-flight | rate msg/s | direct p50 / p99 / p99.9 | " +
                  " | ".join(f"{t} p50 / p99 / p99.9 | {t} added p50 / p99" for t in others) + " |",
                  "|---|---|---|---|---|" + "---|---|" * len(others)]
            for r in pt["latency_probe"]:
                d = r["direct"]
                cells = [str(r["size"]), r["acks"], str(r["inflight"]), str(r["rate_msg_s"]),
                         f"{fmt(d['p50_ms'], 3)} / {fmt(d['p99_ms'], 3)} / {fmt(d['p999_ms'], 3)}"]
                for t in others:
                    x = r[t]
                    cells += [f"{fmt(x['p50_ms'], 3)} / {fmt(x['p99_ms'], 3)} / {fmt(x['p999_ms'], 3)}",
                              f"{fmt(x.get('added_p50_ms'), 3)} / {fmt(x.get('added_p99_ms'), 3)}"]
                L.append("| " + " | ".join(cells) + " |")
            L.append("")
    for name in ("passthrough", "gate", "scale"):
        if name in s and "error" in s[name]:
            L += [f"**{name}: failed** — `{s[name]['error'][:300]}`", ""]
    g = s.get("gate")
    if g:
        L += render_gate(g)
    sc = s.get("scale")
    if sc:
        L += render_scale(sc)
    return "\n".join(L) + "\n"


def render_gate(g) -> list:
    L = []
    if g.get("split"):
        L += ["## Sync gate: where an acks=all ack's time goes", "",
              "SgProbe (100 B, acks=all, paced) with a consumer tailing partition 0 on the source and "
              "on the destination: *source* = send → source HW shows the record (≈ direct acks=all); "
              "*replication* = source HW → destination HW shows it (the mirror); *release* = "
              "destination HW shows it → ack reaches the client (syncgate's release delay, plus the "
              "tail consumer's own delivery delay subtracted: it can be slightly negative). "
              "Median over rounds of per-round percentiles, ms. syncgate histogram = its own "
              "`syncgate_mirror_sync_replication_latency_seconds` (1 ms-resolution buckets, upper bound, shown in ms).", "",
              "Goals: release p50 ≤ 0.5 ms, p99 ≤ 2 ms (tail, demand-driven poll); mm2 p50 ≤ 1 ms "
              "after the offset-sync is written. Targets `…@base`: another build (`--base-bin`), same probe.", "",
              "| mirror | target | total p50 / p99 / p99.9 | source p50 / p99 | replication p50 / p99 | "
              "release p50 / p99 / p99.9 | syncgate histogram p50 / p99 ≤ |",
              "|---|---|---|---|---|---|---|"]
        for r in g["split"]:
            mir = "MirrorMaker 2" if r["topic"] == "g-mm" else "test mirror"
            T, S, R, RL = r["total"], r["source"], r["replication"], r["release"]
            h = r.get("sg_replication_latency_hist") or {}
            L.append(f"| {mir} | {r['target']} | {fmt(T['p50_ms'], 3)} / {fmt(T['p99_ms'], 3)} / "
                     f"{fmt(T['p999_ms'], 3)} | {fmt(S['p50_ms'], 3)} / {fmt(S['p99_ms'], 3)} | "
                     f"{fmt(R['p50_ms'], 3)} / {fmt(R['p99_ms'], 3)} | "
                     f"{fmt(RL['p50_ms'], 3) if r['target'] != 'direct' else '(not gated)'}"
                     f"{' / ' + fmt(RL['p99_ms'], 3) + ' / ' + fmt(RL['p999_ms'], 3) if r['target'] != 'direct' else ''}"
                     f" | {fmt(h.get('p50_le_ms'))} / {fmt(h.get('p99_le_ms'))} |")
        L.append("")
        for r in g["split"]:
            a = r.get("after_sync")
            if a:
                L += [f"MirrorMaker 2, {r['target']}: offset-sync read on the source (a tail of the offset-syncs "
                      f"topic) → ack: p50 {fmt(a['p50_ms'], 3)} / p99 {fmt(a['p99_ms'], 3)} / p99.9 "
                      f"{fmt(a['p999_ms'], 3)} ms ({a['n']} records; the sync tail is a source consumer, so "
                      "add the mm2 run's observer delay below). Goal: p50 ≤ 1 ms.", ""]
        ob = g.get("observer_delay_ms") or {}
        if ob:
            L += ["Observer delay: the tail consumers see a record " + ", ".join(
                f"{fmt(v['p50'], 3)} ms (p50) / {fmt(v['p99'], 3)} ms (p99) after a direct ack ({k} run)"
                for k, v in ob.items()) + "; the *release* column understates syncgate's release delay by "
                "about the p50 of this (the destination tail is the same kind of consumer).", ""]
    if g.get("throughput"):
        ks = [k for k in g["throughput"][0] if isinstance(g["throughput"][0][k], dict)]
        L += ["Gated vs ungated throughput (ProducerPerformance, 1 KiB, acks=all, through syncgate; "
              "MB/s, ratio to ungated, p99 ms):", "",
              "| in-flight | " + " | ".join(ks) + " |", "|---|" + "---|" * len(ks)]
        for r in g["throughput"]:
            L.append(f"| {r['inflight']} | " + " | ".join(
                f"{fmt(r[k]['mb_s'])} ({fmt(r[k]['ratio'])}×, p99 {fmt(r[k]['p99_ms'], 0)})" for k in ks) + " |")
        L.append("")
    return L


def render_scale(sc) -> list:
    L = ["## Scale", ""]
    i = sc.get("idle_connections") or {}
    if "error" in i:
        L += [f"Idle connections: failed — `{i['error'][:300]}`", ""]
    elif i:
        L += [f"**Idle client connections** (goal: 10,000 within 200 MiB RSS): {i['connections']} "
              f"connections (open-files limit {i['open_files_limit']}; syncgate needs 2 descriptors each) "
              f"connected in {fmt(i.get('connect_s'))} s. RSS {fmt(i['rss_before_mib'], 1)} MiB before, "
              f"{fmt(i['rss_idle_mib'], 1)} MiB connected and idle ({fmt(i['kib_per_connection_idle'])} KiB each), "
              f"{fmt(i['rss_after_apiversions_mib'], 1)} MiB after one ApiVersions each "
              f"({fmt(i['kib_per_connection_used'])} KiB each) → **{fmt(i['rss_at_10000_mib_extrapolated'], 1)} "
              f"MiB at 10,000** (linear); {fmt(i.get('rss_after_close_mib'), 1)} MiB after closing all.", ""]
    h = sc.get("held_responses") or {}
    if "error" in h:
        L += [f"Held responses: failed — `{h['error'][:300]}`", ""]
    elif h:
        L += [f"**Held responses** (goal ≤ 512 B each besides its bytes): {h['responses']} acks=all Produce "
              f"requests (1 record of {h['record_bytes']} B) pipelined over {h['connections']} raw connections "
              f"with the mirror paused; all held after {fmt(h['hold_all_s'])} s "
              f"(syncgate_held_responses {fmt(h['held_metric'], 0)}). RSS {fmt(h['rss_before_mib'], 1)} → "
              f"{fmt(h['rss_held_mib'], 1)} MiB = {fmt(h['rss_bytes_per_held'], 0)} B per held response, "
              f"**{fmt(h.get('overhead_bytes_per_held_vs_response_frame'), 0)} B besides the "
              f"{fmt(h.get('response_frame_bytes'), 0)} B response frame** (the goal's measure); of the RSS, "
              f"{fmt(h['held_bytes_per_response'], 1)} B are the held bytes (syncgate_held_bytes) → "
              f"{fmt(h['overhead_bytes_per_held'], 0)} B beyond that counter. CPU while holding "
              f"{fmt(h['cpu_s_while_holding'], 3)} s. Resume → destination caught up "
              f"{fmt(h.get('resume_to_dest_caught_up_s'), 3)} s, every response received "
              f"{fmt(h.get('resume_to_all_released_s'), 3)} s (**{fmt(h.get('dest_caught_up_to_all_released_ms'), 1)} "
              f"ms after the destination HW had them all**), {h.get('errors')} errors, CPU releasing "
              f"{fmt(h.get('cpu_s_releasing'), 3)} s.", ""]
    for key in [k for k in sc if k.startswith("gated_partitions")]:
        L += render_gated(sc[key])
    return L


def render_gated(g) -> list:
    L = []
    if "error" in g:
        L += [f"Gated partitions: failed — `{g['error'][:300]}`", ""]
    elif g:
        L += [f"**{g['partitions']:,} gated partitions, {g.get('mirrors', 2)} mirror(s)** ({g['what']}); load: {g['load']}. "
              "Cost of gathering progress, measured as: syncgate CPU, both destination brokers' CPU "
              "(utime+stime), and syncgate's TCP traffic to the destination brokers (`ss -tinp`: data "
              "segments ≈ requests, bytes). Per second, medians of 2 alternating runs; *direct* = the same "
              "load straight to the source (the mirrors' own cost on the destinations). *Own share* = "
              "`syncgate_mirror_release_delay_seconds`: a worker read the progress value → the held part "
              "released on the loop (bridge, loop, heap; the poll round trip is not in it).", "",
              "| mode | run | syncgate CPU s/s | dest brokers CPU s/s | syncgate → dest segments/s | "
              "→ dest B/s | ← dest B/s | progress requests/s demand / background | syncgate RSS MiB | "
              "ack p50 / p99 ms | syncgate histogram p50 / p99 ≤ ms | own share p50 / p99 ≤ ms (mean) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for mode, res in g.get("modes", {}).items():
            for run in ("idle", "direct", "syncgate"):
                x = res.get(run) or {}
                lat = f"{fmt(x.get('p50_ms'), 3)} / {fmt(x.get('p99_ms'), 3)}" if run != "idle" else "–"
                L.append(f"| {mode} | {run} | {fmt(x.get('syncgate_cpu_s_per_s'), 3)} | "
                         f"{fmt(x.get('dest_brokers_cpu_s_per_s'), 3)} | "
                         f"{fmt(x.get('syncgate_segments_to_dest_per_s'), 1)} | "
                         f"{fmt(x.get('syncgate_bytes_to_dest_per_s'), 0)} | "
                         f"{fmt(x.get('syncgate_bytes_from_dest_per_s'), 0)} | "
                         f"{fmt(x.get('progress_requests_demand_per_s'), 1)} / "
                         f"{fmt(x.get('progress_requests_background_per_s'), 1)} | "
                         f"{fmt(x.get('syncgate_rss_mib'), 1)} | {lat} | "
                         f"{fmt(x.get('sg_hist_p50_le_ms'), 0)} / {fmt(x.get('sg_hist_p99_le_ms'), 0)} | "
                         f"{fmt(x.get('sg_release_p50_le_ms'), 2)} / {fmt(x.get('sg_release_p99_le_ms'), 2)} "
                         f"({fmt(x.get('sg_release_mean_ms'), 3)}) |")
        L.append("")
    return L


def plot(samples: dict, outdir: str):
    """latency.png: CDF (percentile vs ms, log x) of each sample set, via gnuplot."""
    if not samples or not shutil.which("gnuplot"):
        if samples:
            log("gnuplot missing: no plot")
        return
    files = []
    for i, (name, xs) in enumerate(samples.items()):
        if not xs:
            continue
        xs = sorted(xs)
        fn = os.path.join(outdir, f"cdf-{i}.dat")
        with open(fn, "w") as f:
            step = max(1, len(xs) // 2000)
            for k in range(0, len(xs), step):
                f.write(f"{xs[k]:.4f} {100.0 * (k + 1) / len(xs):.3f}\n")
            f.write(f"{xs[-1]:.4f} 100\n")
        files.append((fn, name))
    term = "pngcairo" if _has_cairo() else "png"
    script = [f"set terminal {term} size 1500,650", f"set output '{os.path.join(outdir, 'latency.png')}'",
              "set multiplot layout 1,2 title 'syncgate: produce ack latency CDFs (SgProbe, same run, alternating)'",
              "set xlabel 'ack latency, ms (log)'", "set ylabel 'percentile'", "set logscale x",
              "set key below font ',9'", "set grid", "set yrange [0:100]"]
    colors = ["#000000", "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"]
    for title, pick in (("pass-through (no mirrors)", lambda n: "pass-through" in n),
                        ("sync gate (mirror in effective SYNC)", lambda n: "pass-through" not in n)):
        fs = [(fn, name) for fn, name in files if pick(name)]
        script.append(f"set title '{title}'")
        if fs:
            script.append("plot " + ", ".join(
                f"'{fn}' using 1:2 with lines lw 2 lc rgb '{colors[k % len(colors)]}' title '{name}'"
                for k, (fn, name) in enumerate(fs)))
        else:
            script.append("plot 1/0 notitle")
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=False)


def _has_cairo() -> bool:
    p = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" in (p.stdout + p.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a subset, a few minutes in total")
    ap.add_argument("--peer", action="append", metavar="HOST:PORT",
                    help="also measure another proxy's listen address in the pass-through section "
                         "(it must front the bench's source broker or a cluster with topics pt-1/pt-16)")
    ap.add_argument("--peer-cmd", action="append", metavar="NAME=COMMAND",
                    help="start a peer proxy for the pass-through section: COMMAND (bash) with {broker} = the "
                         "source broker host:port and {port} = the port to listen on; it must stay in the "
                         "foreground. Example: old=tests/bench/peer-syncgate.sh /tmp/old/syncgate {broker} {port}")
    ap.add_argument("--only", help="comma-separated sections: passthrough,gate,scale")
    ap.add_argument("--scale", help="comma-separated parts of the scale section: idle,held,gated "
                    "(default: all)")
    ap.add_argument("--rounds", type=int, help="alternating rounds per comparison (default: quick 2-3, full 3-5)")
    ap.add_argument("--keep", action="store_true", help="keep the Kafka run dir (logs)")
    ap.add_argument("--base-bin", metavar="PATH",
                    help="gate section: also run poll/tail/mm2 syncgates from this other build (targets "
                         "poll@base, tail@base, mm2@base), alternating with this build's in the same probe")
    ap.add_argument("--scale-partitions", help="scale section: gated partition counts, e.g. 1000,10000 "
                                               "(default 1000)")
    ap.add_argument("--scale-mirrors", type=int, choices=(1, 2), help="scale section: mirrors (default 2)")
    ap.add_argument("--scale-rate", type=int, help="scale section: SgProbe msg/s (default 1000)")
    ap.add_argument("--scale-gated-only", action="store_true",
                    help="scale section: only the gated-partitions runs (no idle connections, held responses)")
    ap.add_argument("--no-diag", action="store_true",
                    help="skip the diagnostic syncgate+nodelay targets (LD_PRELOAD TCP_NODELAY shim)")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 30000:
        log(f"warning: open files limit {soft}: the 10,000-connection benchmark needs ~25,000 "
            "(run through tests/bench/run.sh, which raises it)")
    Bench(a).main()


if __name__ == "__main__":
    main()
