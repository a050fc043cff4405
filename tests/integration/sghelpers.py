"""sghelpers — the helpers the integration tests share: the admin API and the
lifecycle (describe, wait for a state, call, the state log's records), the
gated topic fixture, syncgate-ctl. Test modules import from here, not from
each other."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import urllib.request
import uuid

from kafkabed import REPO, wait_until
from sgfixture import free_port, mirror_conf

def write_token(bed, token: str = None) -> str:
    token = token or uuid.uuid4().hex
    path = os.path.join(bed.run_dir, f"token-{uuid.uuid4().hex[:6]}")
    with open(path, "w") as f:
        f.write(token + "\n")
    return path


def lifecycle_extra(state_topic: str, token_file: str = None) -> dict:
    """`extra` for make_syncgate: a private state topic and an admin token."""
    admin = {"listen": f"127.0.0.1:{free_port()}"}
    if token_file:
        admin["token_file"] = token_file
    return {"state": {"topic": state_topic, "replication_factor": 1}, "admin": admin}


def start(make_syncgate, source, mirrors, state_topic, token_file, name=None):
    sg = make_syncgate(source, mirrors=mirrors, extra=lifecycle_extra(state_topic, token_file), name=name)
    sg.token_file = token_file
    wait_until(lambda: describe(sg).get("state_ready"), timeout=30, what=f"{sg.name} read the state log")
    return sg


def describe(sg) -> dict:
    status, body = sg.http("/v1/mirrors")
    assert status == 200, body
    return json.loads(body)


def topic_state(sg, mirror: str, topic: str) -> dict:
    for m in describe(sg)["mirrors"]:
        if m["name"] == mirror:
            for t in m["topics"]:
                if t["topic"] == topic:
                    return t
    return {}


def wait_state(sg, mirror, topic, timeout=60, **want):
    def ok():
        t = topic_state(sg, mirror, topic)
        return all(t.get(k) == v for k, v in want.items())
    wait_until(ok, timeout=timeout, what=f"{sg.name} {mirror}/{topic} {want} "
                                         f"(now {topic_state(sg, mirror, topic)})")


def call(sg, path: str, body: dict, token: bool = True) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{sg.admin_port}{path}",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    if token:
        with open(sg.token_file) as f:
            req.add_header("Authorization", "Bearer " + f.read().strip())
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def results(doc: dict) -> dict:
    return {t["topic"]: t["result"] for t in doc.get("topics", [])}


def state_records(source, state_topic: str) -> list[dict]:
    hw = source.high_watermark(state_topic, 0)
    return [json.loads(r.value) for r in source.consume(state_topic, 0, end=hw)] if hw else []


def setup_topic(source, dest, topic, partitions=2):
    source.create_topic(topic, partitions=partitions)
    dest.create_topic(topic, partitions=partitions)


TIMEOUT_CODE, REMOTE_CODE, NOT_ENOUGH_REPLICAS_AFTER_APPEND = 190, 191, 20


def effective(sg, mirror: str, topic: str) -> str:
    _, body = sg.http(f"/v1/mirrors?mirror={mirror}&topic={topic}")
    for m in json.loads(body)["mirrors"]:
        for t in m["topics"]:
            if t["topic"] == topic:
                return t["effective"]
    return "UNKNOWN"


def assert_held(c, seconds: float = 1.0, after: float = 60,
                what: str = "a response arrived while a gating mirror was paused"):
    """No response arrives on RawClient `c` for `seconds` (the produce is
    held; nothing is read from `c`); then `c` waits up to `after` seconds."""
    c.sock.settimeout(seconds)
    try:
        c._read_exact(4)
        raise AssertionError(what)
    except TimeoutError:
        pass
    finally:
        c.sock.settimeout(after)


def wait_sync(sg, mirror: str, topic: str, timeout: float = 60):
    wait_until(lambda: effective(sg, mirror, topic) == "SYNC", timeout=timeout,
               what=f"{mirror}/{topic} promoted to effective SYNC")


def gated_topic(source, dest, make_syncgate, make_testmirror, topic, partitions=1, mirrors=None, **sgkw):
    """The usual gated topic: `topic` on both clusters, the test mirror
    copying it, a sidecar with mirror dr (or `mirrors`) desiring it SYNC,
    promoted. `sgkw` goes to make_syncgate (gate=, extra=, ...). (sg, mirror)."""
    source.create_topic(topic, partitions=partitions)
    dest.create_topic(topic, partitions=partitions)
    mirror = make_testmirror([topic], source=source, dest=dest)
    sg = make_syncgate(source, mirrors=mirrors or [mirror_conf("dr", dest, [topic])], **sgkw)
    wait_sync(sg, "dr", topic)
    return sg, mirror


def gated_setup(bed_source, dest, make_syncgate, make_testmirror, topic, partitions=2, **gate):
    """gated_topic with two partitions and `gate` settings."""
    return gated_topic(bed_source, dest, make_syncgate, make_testmirror, topic, partitions=partitions, gate=gate)


CTL = os.environ.get("SYNCGATE_CTL", os.path.join(REPO, "build", "proxy", "syncgate-ctl"))


def ctl_json(sg, *args, timeout=120):
    """syncgate-ctl --output json ARGS: (rc, document, stderr)."""
    rc, out, err = ctl(sg, "--output", "json", *args, timeout=timeout)
    assert out.strip(), (rc, err)
    return rc, json.loads(out), err


def ctl(sg, *args, token=True, timeout=60):
    argv = [CTL, "--admin", f"127.0.0.1:{sg.admin_port}"]
    if token and getattr(sg, "token_file", None):
        argv += ["--token-file", sg.token_file]
    env = {k: v for k, v in os.environ.items() if k != "SYNCGATE_TOKEN_FILE"}
    p = subprocess.run(argv + list(args), capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


class LineDriven:
    """A child process driven line by line: commands on its stdin, answers
    from its stdout (lines whose first word is in `keep`, every line when
    None; the others go to the log), stderr to the log at `log_path`."""

    def __init__(self, argv: list[str], log_path: str, keep: tuple[str, ...] | None = None):
        self.log = open(log_path, "w")
        self.keep = keep
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if self.keep is None or line.strip().split(" ", 1)[0] in self.keep:
                self.lines.put(line.strip())
            else:
                self.log.write(line)

    def tell(self, cmd: str) -> None:
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float) -> str:
        return self.lines.get(timeout=timeout)

    def ask(self, cmd: str, timeout: float = 90) -> str:
        self.tell(cmd)
        return self.answer(timeout)

    def close(self):
        try:
            self.tell("quit")
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - killed below
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
