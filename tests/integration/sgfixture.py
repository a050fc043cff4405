"""syncgate under test: a pytest fixture that writes a config, starts the real
binary in front of a real source broker, and always stops it.

    def test_x(make_syncgate, source, dest):
        sg = make_syncgate(source, mirrors=[mirror_conf("dr", dest, ["orders"])])
        sg.bootstrap          # "127.0.0.1:PORT" for clients
        sg.metrics()          # {series: value} from /metrics
        sg.log()              # its stderr so far

Import the fixture into a test module:  from sgfixture import make_syncgate
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
import uuid
from typing import Optional

import pytest
import yaml

from kafkabed import PINNED_KAFKA, REPO, Cluster, wait_until

SYNCGATE_BIN = os.environ.get("SYNCGATE_BIN", os.path.join(REPO, "build", "proxy", "syncgate"))


KAFKA_LIBS = os.path.join(REPO, ".cache", f"kafka-{PINNED_KAFKA}", "libs")
# Kafka Streams and the jars it needs beyond KAFKA_LIBS (fetch-jars.sh): a
# Streams program runs with both folders on its class path.
KAFKA_STREAMS_LIBS = os.path.join(os.path.dirname(KAFKA_LIBS), "streams")


def compile_java(out_dir: str, filename: str, source: str, classpath: tuple = ()) -> str:
    """Write `source` as out_dir/filename and compile it against the Kafka
    client jars (and the folders/jars of `classpath`, e.g. KAFKA_STREAMS_LIBS
    + "/*") into out_dir; returns out_dir (the class path to run it)."""
    src = os.path.join(out_dir, filename)
    with open(src, "w") as f:
        f.write(source)
    cp = os.pathsep.join([os.path.join(KAFKA_LIBS, "*"), *classpath])
    p = subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", out_dir, src],
                       capture_output=True, text=True, timeout=180)
    if p.returncode != 0:
        raise AssertionError(f"javac {filename} failed:\n{p.stdout}\n{p.stderr}")
    return out_dir


def java_tool(cls: str, *args: str, timeout: float = 300) -> str:
    """Run a Kafka Java tool class (kafka-clients inside) with exactly `args`;
    returns stdout+stderr, raises on a non-zero exit."""
    import subprocess
    p = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                        "-Dlog4j2.level=WARN", "-cp", os.path.join(KAFKA_LIBS, "*"), cls, *args],
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{cls} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout + p.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mirror_conf(name: str, dest: Cluster, sync_topics: list[str], offsets: str = "preserved",
                progress: str = "poll", **extra) -> dict:
    """One `mirrors:` entry: destination `dest`, topics (regexes) desired SYNC."""
    m = {"name": name, "bootstrap": dest.bootstrap, "offsets": offsets, "progress": progress,
         "poll_interval_ms": 5, "sync_topics": sync_topics}
    m.update(extra)
    return m


class Syncgate:
    """A running syncgate process."""

    def __init__(self, bed, name: str, config: dict):
        self.bed, self.name, self.config = bed, name, config
        self.port = int(config["listen"]["kafka"].rsplit(":", 1)[1])
        self.admin_port = int(config["admin"]["listen"].rsplit(":", 1)[1])
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.path = os.path.join(bed.run_dir, f"{name}.yaml")
        with open(self.path, "w") as f:
            yaml.safe_dump(config, f, sort_keys=False)
        self.proc = bed.spawn(name, [SYNCGATE_BIN, "--config", self.path])
        wait_until(self._up, timeout=30, what=f"{name} listening on {self.bootstrap}")

    def _up(self) -> bool:
        if not self.proc.alive():
            raise AssertionError(f"{self.name} exited early:\n{self.log()}")
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def log(self) -> str:
        return self.proc.log()

    def http(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.admin_port}{path}",
                                        timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self) -> dict:
        """Every sample of /metrics as {'name{labels}': value}."""
        _, text = self.http("/metrics")
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                out[k] = float(v)
        return out

    def metric(self, prefix: str) -> float:
        """Sum of the samples whose 'name{labels}' starts with `prefix`."""
        return sum(v for k, v in self.metrics().items() if k.startswith(prefix))

    def stop(self, timeout: float = 15) -> Optional[int]:
        return self.proc.stop(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL: no graceful stop, held responses are lost (a crash)."""
        if self.proc.alive():
            self.proc.popen.kill()
        self.proc.popen.wait()

    def start(self, wait: bool = True) -> None:
        """Start again (after kill/stop) with the same config file and ports,
        appending to the same log; wait: until the Kafka port accepts."""
        assert not self.proc.alive(), f"{self.name} still running"
        self.proc = self.bed.spawn(self.name, [SYNCGATE_BIN, "--config", self.path])
        if wait:
            wait_until(self._up, timeout=30, what=f"{self.name} listening on {self.bootstrap}")


@pytest.fixture
def make_syncgate(bed):
    made: list[Syncgate] = []

    def factory(source: Cluster, mirrors: Optional[list] = None, broker_id: Optional[int] = None,
                gate: Optional[dict] = None, advertise: Optional[dict] = None,
                limits: Optional[dict] = None, extra: Optional[dict] = None,
                name: Optional[str] = None, listen_tls: Optional[dict] = None) -> Syncgate:
        bid = broker_id if broker_id is not None else source.broker_ids[0]
        port, admin_port = free_port(), free_port()
        cfg = {
            "mode": "sidecar",
            "listen": {"kafka": f"127.0.0.1:{port}"},
            "upstream": {"broker": source.brokers[bid], "connect_timeout_ms": 5000},
            "advertise": advertise or {"nodes": {bid: f"127.0.0.1:{port}"}},
            "gate": {"max_hold_ms": 30000, **(gate or {})},
            "mirrors": mirrors or [],
            "state": {"topic": "__syncgate_state", "replication_factor": 1},
            "admin": {"listen": f"127.0.0.1:{admin_port}"},
            "log": {"level": "debug"},
        }
        if listen_tls:
            cfg["listen"]["tls"] = listen_tls
        if limits:
            cfg["limits"] = limits
        for k, v in (extra or {}).items():
            cfg[k] = v
        sg = Syncgate(bed, name or f"syncgate-{uuid.uuid4().hex[:6]}", cfg)
        made.append(sg)
        return sg

    yield factory
    for sg in made:
        sg.stop()
    # an ASan/UBSan build (SYNCGATE_BIN=build-asan/proxy/syncgate, tests/run.sh)
    # reports to its log: any report fails the test that ran it
    reports = [f"{sg.name}: {line}" for sg in made for line in sg.log().splitlines()
               if "AddressSanitizer" in line or "LeakSanitizer" in line or "runtime error:" in line]
    assert not reports, "sanitizer reports:\n" + "\n".join(reports[:20])
