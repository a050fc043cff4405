"""Least privilege against real Kafka: a source and a destination
with the KRaft StandardAuthorizer, where syncgate's principal (User:syncgate,
SASL PLAIN over TLS) has exactly the ACLs of docs/operating.md "Securing
syncgate" — the kafka-acls.sh lines are read from the doc and run as written
(AclCommand) — and nothing more (it is no super user). The state log is
created, read and written, the topic promoted, a held ack released by the
mirror, another released by --release-sync, and the topic altered through
syncgate-ctl; syncgate logs no authorization failure.

The test harness, the test mirror and the brokers themselves use the
PLAINTEXT listeners (User:ANONYMOUS, a super user there); Kafka clients
through syncgate authenticate as User:alice (a super user: their rights are
not syncgate's business).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
import uuid

import pytest

from kafkabed import REPO, wait_until
from sgfixture import make_syncgate, mirror_conf  # noqa: F401 - fixture
from sghelpers import describe, lifecycle_extra, topic_state, write_token
from test_proxy_security import kcat
from test_security import _ctl, _secret_file, pki  # noqa: F401 - fixture

SG_USER, SG_PASSWORD = "syncgate", "sg-" + uuid.uuid4().hex
CLIENT_USER, CLIENT_PASSWORD = "alice", "alice-" + uuid.uuid4().hex
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def doc_acl_commands(progress: str = "poll") -> list[tuple[str, list[str]]]:
    """The kafka-acls.sh lines of docs/operating.md's "Least privilege"
    paragraph as (cluster variable, argv after it): "S" source, "D" destination.
    $P (the principal) is expanded as the doc defines it. A line whose comment
    says "progress: tail only" is kept only for `progress`: tail, one for
    "offsets: mm2 only" never (these runs use preserved offsets)."""
    with open(os.path.join(REPO, "docs", "operating.md")) as f:
        doc = f.read()
    start = doc.index("**Least privilege.**")
    end = doc.index("\n## ", start)
    cmds = []
    env = {}
    for block in re.findall(r"```sh\n(.*?)```", doc[start:end], re.S):
        text = re.sub(r"\\\n", " ", block)
        for line in text.splitlines():
            line, _, comment = line.partition("#")
            line = line.strip()
            if not line:
                continue
            if ("progress: tail only" in comment and progress != "tail") or \
                    "offsets: mm2 only" in comment:
                continue
            if line.startswith("P="):  # P=User:syncgate; S="..."
                for part in line.split(";"):
                    k, _, v = part.strip().partition("=")
                    env[k] = shlex.split(v)[0] if v else ""
                continue
            argv = shlex.split(line)
            assert argv[0] == "kafka-acls.sh", line
            where = argv[1].lstrip("$")
            assert where in ("S", "D"), line
            cmds.append((where, [env.get(a[1:], a) if a.startswith("$") else a
                                 for a in argv[2:]]))
    assert env.get("P") == f"User:{SG_USER}", env
    assert {w for w, _ in cmds} == {"S", "D"}, cmds
    return cmds


def _acl_cluster(bed, made, name, pki, users):
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required " +
            " ".join(f'user_{u}="{p}"' for u, p in users.items()) + ";")
    supers = "User:ANONYMOUS" + (f";User:{CLIENT_USER}" if CLIENT_USER in users else "")
    c = bed.start_cluster(name, listeners=["SASLSSL:SASL_SSL"], props={
        "listener.name.saslssl.ssl.keystore.type": "PEM",
        "listener.name.saslssl.ssl.keystore.location": os.path.join(os.path.dirname(pki["ca"]),
                                                                    "broker.pem"),
        "listener.name.saslssl.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.saslssl.plain.sasl.jaas.config": jaas,
        "authorizer.class.name": AUTHORIZER,
        "super.users": supers,
        "allow.everyone.if.no.acl.found": "false",
    })
    made.append(c)
    return c


@pytest.mark.parametrize("progress", ["poll", "tail"])
def test_documented_acls_are_enough(bed, make_syncgate, make_testmirror, pki, progress):
    """The documented grants, and only those, carry the whole lifecycle."""
    made: list = []
    errors: list = []

    def start(name, users):
        try:
            _acl_cluster(bed, made, name, pki, users)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=start, args=("acl17src", {SG_USER: SG_PASSWORD,
                                                                 CLIENT_USER: CLIENT_PASSWORD})),
               threading.Thread(target=start, args=("acl17dst", {SG_USER: SG_PASSWORD}))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        if errors:
            raise errors[0]
        src = next(c for c in made if c.name == "acl17src")
        dst = next(c for c in made if c.name == "acl17dst")
        _run(bed, make_syncgate, make_testmirror, pki, src, dst, progress)
    finally:
        for c in made:
            c.stop(fast=True)


def _run(bed, make_syncgate, make_testmirror, pki, src, dst, progress):
    topic = f"orders.{uuid.uuid4().hex[:8]}"  # the doc's gated-topic prefix
    src.create_topic(topic)
    dst.create_topic(topic)

    # exactly the documented ACLs, nothing else for User:syncgate
    for where, args in doc_acl_commands(progress):
        (src if where == "S" else dst).run_tool("org.apache.kafka.tools.AclCommand", *args)
    listed = {}
    for c in (src, dst):
        listed[c.name] = c.run_tool("org.apache.kafka.tools.AclCommand", "--list",
                                    "--principal", f"User:{SG_USER}")
    print("\nACLs of User:syncgate:\n" + "\n".join(f"{k}:\n{v}" for k, v in listed.items()))
    assert "__syncgate_state" in listed["acl17src"] and "DESCRIBE_CONFIGS" in listed["acl17dst"]
    assert ("operation=READ" in listed["acl17dst"].split("GROUP")[0]) == (progress == "tail")
    # the authorizer is on and User:syncgate is no super user: what the doc
    # does not grant (Write on a gated topic) is refused
    own = {"security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "sasl.username": SG_USER,
           "sasl.password": SG_PASSWORD, "ssl.ca.location": pki["ca"]}
    denied = kcat(src.listener(1, "SASLSSL"), "-P", "-t", topic, "-p", "0", input_="x\n",
                  props={**own, "message.timeout.ms": "10000"}, check=False)
    assert "authoriz" in (denied.stdout + denied.stderr).lower(), denied

    token = uuid.uuid4().hex
    token_file = write_token(bed, token)
    password_file = _secret_file(bed, SG_PASSWORD)
    sasl = {"security.protocol": "sasl_ssl", "sasl.mechanisms": "PLAIN",
            "sasl.username": SG_USER, "sasl.password": "${file:%s}" % password_file}
    extra = lifecycle_extra("__syncgate_state", token_file)  # the doc's state topic
    extra["upstream"] = {"broker": src.listener(1, "SASLSSL"), "tls": {"ca": pki["ca"]}}
    extra["source"] = {"properties": sasl}
    mirror = mirror_conf("dr", dst, [topic], progress=progress,
                         properties={**sasl, "ssl.ca.location": pki["ca"]})
    mirror["bootstrap"] = dst.listener(1, "SASLSSL")
    sg = make_syncgate(src, mirrors=[mirror], extra=extra)
    sg.token_file = token_file

    def ctl(*args):
        rc, out, err = _ctl(sg, *args)
        assert rc == 0, (args, out, err)
        return out

    def sg_problems():
        """Authorization failures anywhere; state-log warnings after the first
        catch-up (before it, the just-created topic may not be known yet)."""
        log = sg.log()
        caught_up = log.find("mirror_state_log_caught_up")
        return [ln for ln in log.splitlines()
                if re.search(r"authoriz|not authorized|\bACL", ln, re.I)] + \
               [ln for ln in log[max(caught_up, 0):].splitlines()
                if " mirror_state_" in ln and (" WARN " in ln or " ERROR " in ln)]

    def effective():
        return topic_state(sg, "dr", topic).get("effective")

    try:
        # state log created, read; the decider promotes the topic (lag 0)
        wait_until(lambda: describe(sg).get("state_ready"), timeout=60,
                   what="state log read with the documented ACLs")
        tm = make_testmirror([topic], source=src, dest=dst)
        wait_until(lambda: effective() == "SYNC", timeout=60, what="topic promoted")

        # a held ack, released by the mirror's progress (destination DescribeConfigs,
        # high watermarks) — the client (alice) speaks its own SASL through syncgate
        client = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                  "sasl.username": CLIENT_USER, "sasl.password": CLIENT_PASSWORD}
        kcat(sg.bootstrap, "-P", "-t", topic, "-p", "0", input_="".join(f"r{i}\n" for i in range(5)),
             props={"acks": "all", "message.timeout.ms": "30000", **client})
        assert dst.high_watermark(topic, 0) == 5

        # a held ack, released by --release-sync (a state-log write)
        tm.pause()
        try:
            p = subprocess.Popen(["kcat", "-b", sg.bootstrap, "-P", "-t", topic, "-p", "0",
                                  *sum((["-X", f"{k}={v}"] for k, v in
                                        {"acks": "all", "message.timeout.ms": "60000",
                                         **client}.items()), [])],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            p.stdin.write("held\n")
            p.stdin.close()
            wait_until(lambda: sg.metric("syncgate_held_responses") >= 1, timeout=30,
                       what="a response held")
            out = ctl("--release-sync", "--mirror", "dr")
            assert out.split()[1] == "RELEASED", out
            p.wait(timeout=60)
            err = p.stderr.read()
            assert p.returncode == 0 and "fail" not in err.lower(), err
            assert src.high_watermark(topic, 0) == 6
            assert sg.metric("syncgate_held_responses") == 0
        finally:
            tm.resume()

        # alter through syncgate-ctl: recovery promotion, then demotion
        out = ctl("--alter", "--mirror", "dr", "--topic", topic, "--sync")
        # desired stays SYNC after a release: the recovery promotion may have come first
        assert out.split()[1] in ("PROMOTED", "PENDING_LAG", "UNCHANGED"), out
        wait_until(lambda: effective() == "SYNC" and not topic_state(sg, "dr", topic)["released"],
                   timeout=60, what="recovery promotion")
        out = ctl("--alter", "--mirror", "dr", "--topic", topic, "--async")
        assert out.split()[1] == "DEMOTED", out
        assert describe(sg).get("decider") is True
        assert SG_PASSWORD not in sg.log() and CLIENT_PASSWORD not in sg.log()
        problems = sg_problems()
        assert not problems, "authorization trouble with the documented ACLs:\n" + \
            "\n".join(problems[:20])
    finally:
        sg.stop()
