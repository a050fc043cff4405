"""The syncgate command line and its configuration file: --check-config on the
example and on a bad file (every `file:line:col:` error, exit 2), --config of
a bad file, usage errors, and the generated reference. No Kafka needed."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from kafkabed import REPO
from sgfixture import SYNCGATE_BIN

# tests/conf/syncgate.yaml is a full example configuration (every section)
# with its file paths replaced by @DIR@.
EXAMPLE = os.path.join(REPO, "tests", "conf", "syncgate.yaml")
EXAMPLE_FILES = ("server.crt", "server.key", "clients-ca.crt", "ca.crt", "admin.token")

BAD = """\
mode: sidecar
listen:
  kafka: 0.0.0.0:99999
upstream:
  broker: 127.0.0.1:9092
  connect_timeout_ms: "5000"
gate:
  max_hold_ms: 0
  acks1: sometimes
  bogus: 1
mirrors:
  - name: dr
    bootstrap: a:9092
    sync_topics: ["("]
  - name: dr
    bootstrap: b:9092
    properties:
      sasl.password: ${file:/nonexistent/secret}
admin:
  token_file: /nonexistent/token
log:
  level: loud
"""

# Every error of BAD, in order, as `line:col: message` (the path is prefixed).
BAD_ERRORS = [
    "3:10: listen.kafka: invalid address '0.0.0.0:99999': port out of range (1..65535)",
    "6:23: upstream.connect_timeout_ms: expected an integer, got a quoted string",
    "8:16: gate.max_hold_ms: 0 is out of range (1..3600000)",
    "9:10: gate.acks1: unknown value 'sometimes' (expected pass or gate)",
    "10:3: unknown key 'gate.bogus'",
    "14:19: mirrors[0].sync_topics[0]: invalid regular expression '(': Unmatched ( or \\(",
    "15:11: mirrors[1].name: duplicate mirror name 'dr' (first at line 12)",
    "18:22: mirrors[1].properties.sasl.password: cannot read secret file "
    "'/nonexistent/secret': No such file or directory",
    "20:15: admin.token_file: cannot read '/nonexistent/token': No such file or directory",
    "22:10: log.level: unknown value 'loud' (expected error, warn, info or debug)",
]


def syncgate(*args: str, timeout: float = 10) -> subprocess.CompletedProcess:
    return subprocess.run([SYNCGATE_BIN, *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def example(tmp_path) -> str:
    """The example configuration with every file it names present; the
    mirror's SASL password comes from a secret file."""
    for name in EXAMPLE_FILES:
        (tmp_path / name).write_text(f"{name}\n")
    (tmp_path / "dr-east.password").write_text("s3cret-value\n")
    with open(EXAMPLE) as f:
        text = f.read().replace("@DIR@", str(tmp_path))
    path = tmp_path / "syncgate.yaml"
    path.write_text(text)
    return str(path)


@pytest.fixture
def bad(tmp_path) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    return str(path)


def test_check_config_accepts_the_example(example):
    p = syncgate("--check-config", example)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"{example}: OK (1 mirrors)\n"
    assert "s3cret" not in p.stdout + p.stderr


def test_check_config_prints_every_error_and_exits_2(bad):
    p = syncgate("--check-config", bad)
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.splitlines() == [f"{bad}:{e}" for e in BAD_ERRORS]


def test_check_config_notes_a_setting_without_effect(tmp_path):
    """`progress: tail` does nothing with `offsets: mm2`: valid, but said."""
    path = tmp_path / "mm2.yaml"
    path.write_text("listen:\n  kafka: 127.0.0.1:19092\nupstream:\n  broker: 127.0.0.1:9092\n"
                    "mirrors:\n  - name: dr\n    bootstrap: 127.0.0.1:9093\n    offsets: mm2\n"
                    "    progress: tail\n")
    p = syncgate("--check-config", str(path))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        f"{path}: OK (1 mirrors)",
        f"{path}: note: mirrors[0] (dr): 'progress: tail' has no effect with 'offsets: mm2' "
        "(progress comes from the offset-syncs topic and the record match)"], p.stdout


def test_check_config_of_a_missing_file(tmp_path):
    path = str(tmp_path / "nope.yaml")
    p = syncgate("--check-config", path)
    assert p.returncode == 2
    assert p.stderr == f"{path}: cannot read configuration: No such file or directory\n"


def test_config_of_a_bad_file_exits_2_without_starting(bad):
    p = syncgate("--config", bad)
    assert p.returncode == 2
    assert p.stderr.splitlines() == [f"{bad}:{e}" for e in BAD_ERRORS]


@pytest.mark.parametrize("args", [
    ["--bogus"],
    [],
    ["--check-config"],
    ["--config", "a.yaml", "extra"],
    ["--check-config", "a.yaml", "--config", "a.yaml"],
    ["-x"],
], ids=["unknown-flag", "no-action", "missing-file-argument", "extra-operand",
        "two-actions", "unknown-short-flag"])
def test_usage_errors_exit_2(args):
    p = syncgate(*args)
    assert p.returncode == 2
    assert "usage: syncgate --config FILE" in p.stderr
    assert p.stdout == ""


def test_print_config_reference_matches_the_docs():
    p = syncgate("--print-config-reference")
    assert p.returncode == 0, p.stderr
    with open(os.path.join(REPO, "docs", "configuration.md")) as f:
        assert p.stdout == f.read()


def test_version_and_help():
    """--version prints meson.build's project version (the one place it is
    set) and the git commit built (proxy/cmd/meson.build's vcs_tag; "unknown"
    from a tarball)."""
    with open(os.path.join(REPO, "meson.build")) as f:
        version = re.search(r"version : '([^']+)'", f.read()).group(1)
    commit = "unknown"
    if os.path.exists(os.path.join(REPO, ".git")):
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    p = syncgate("--version")
    assert p.returncode == 0
    assert p.stdout == f"syncgate {version} (commit {commit})\n"
    p = syncgate("--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: syncgate --config FILE")
