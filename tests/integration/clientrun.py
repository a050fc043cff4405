"""Real client programs under test: their TCP peers (`ss -tnp`, sampled
while they run) and the tests/clients line protocol (tests/clients/README.md).

    peers = PeerSampler(proc.pid)          # .peers: remote ports seen so far
    c = LineClient(argv, env=None)         # a tests/clients program
    c.send(0, "a1"); c.flush(timeout=30)   # -> outcomes so far
    c.close()                              # EOF, waits for DONE
    c.acks  [(partition, offset, value)]   c.errs [(partition, value, description)]
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import threading
import time
from typing import Optional

from kafkabed import REPO

CLIENTS_DIR = os.path.join(REPO, "tests", "clients")
CLIENTS_CACHE = os.environ.get("SG_CLIENTS_CACHE", os.path.join(REPO, ".cache", "clients"))


class PeerSampler:
    """Remote TCP ports of process `pid` (and its threads), sampled with
    `ss -tnpH` every 100 ms until stop() or the process ends."""

    def __init__(self, pid: int, alive=None):
        self.pid = pid
        self.alive = alive or (lambda: os.path.exists(f"/proc/{pid}"))
        self.peers: set[int] = set()
        self._stop = threading.Event()
        self._pat = re.compile(rf"\S+\s+\d+\s+\d+\s+\S+\s+\S+:(\d+)\s.*pid={pid},")
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set() and self.alive():
            out = subprocess.run(["ss", "-tnpH"], capture_output=True, text=True).stdout
            for line in out.splitlines():
                m = self._pat.match(line)
                if m:
                    self.peers.add(int(m.group(1)))
            self._stop.wait(0.1)

    def stop(self) -> set[int]:
        self._stop.set()
        self._t.join()
        return self.peers


def install(part: str) -> None:
    """tests/clients/install.sh PART (cached: quick when already built)."""
    p = subprocess.run(["bash", os.path.join(CLIENTS_DIR, "install.sh"), part],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise AssertionError(f"tests/clients/install.sh {part} failed:\n{p.stdout}\n{p.stderr[-4000:]}")


class LineClient:
    """A tests/clients program: stdin commands, stdout outcome lines."""

    def __init__(self, argv: list[str], env: Optional[dict] = None, cwd: Optional[str] = None):
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1,
                                     env={**os.environ, **(env or {})}, cwd=cwd)
        self.sampler = PeerSampler(self.proc.pid, alive=lambda: self.proc.poll() is None)
        self.lines: "queue.Queue[str]" = queue.Queue()
        self.acks: list[tuple[int, int, str]] = []
        self.errs: list[tuple[int, str, str]] = []
        self.other: list[str] = []
        self.stderr = ""
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()
        self._te = threading.Thread(target=self._read_err, daemon=True)
        self._te.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put("")  # EOF

    def _read_err(self):
        for line in self.proc.stderr:
            self.stderr += line

    def _take(self, until: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.argv[0]}: no {until} after {timeout}s; "
                                     f"acks {self.acks[-3:]} errs {self.errs[-3:]}\n{self.stderr[-3000:]}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line == "" and self.proc.poll() is not None:
                raise AssertionError(f"{self.argv[0]} exited {self.proc.returncode} before {until}:\n"
                                     f"{self.stderr[-3000:]}")
            f = line.split(" ", 3)
            if f[0] == "ACK":
                self.acks.append((int(f[1]), int(f[2]), f[3]))
            elif f[0] == "ERR":
                self.errs.append((int(f[1]), f[2], f[3] if len(f) > 3 else ""))
            elif line == until:
                return
            elif line:
                self.other.append(line)

    def _write(self, line: str) -> None:
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.proc.wait(timeout=10)
            self._te.join(timeout=5)
            raise AssertionError(f"{self.argv[0]} exited {self.proc.returncode}:\n"
                                 f"{self.stderr[-3000:]}") from None

    def send(self, partition: int, value: str) -> None:
        self._write(f"send {partition} {value}\n")

    def flush(self, timeout: float = 60) -> None:
        """Wait until every record sent so far has its outcome."""
        self._write("flush\n")
        self._take("FLUSHED", timeout)

    def close(self, timeout: float = 120) -> set[int]:
        """EOF on stdin, wait for DONE and the exit; returns the peers seen."""
        try:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            self._take("DONE", timeout)
            self.proc.wait(timeout=30)
        finally:
            self.kill()
        return self.sampler.stop()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.sampler.stop()
