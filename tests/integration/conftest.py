"""pytest fixtures for syncgate's integration tests against real Apache Kafka.

Run with Debian's interpreter:  /usr/bin/python3 -m pytest -v tests/integration

Fixtures (all cleanup is guaranteed: finalizers, atexit, and a watchdog that
stops the run's processes if pytest itself dies):

  bed            (session)  KafkaBed: the run dir, spawn(), stop_all()
  source, dest   (session)  Cluster: one KRaft node each, named "source" and
                            "dest", started in parallel on first use
  topic_name     (function) a fresh topic name for this test, e.g. "t-test_x-1a2b3c"
  make_cluster   (function) make_cluster(name, brokers=3, props=None, listeners=(),
                            node_props=None) -> Cluster,
                            stopped (SIGKILL) when the test ends
  make_testmirror(function) make_testmirror(topics, name=None, source=None, dest=None,
                            create_topics=False, rf=1, extra=()) -> Mirror
                            (defaults: the session source -> dest); stopped at test end
  make_mm2       (function) make_mm2(topics_regex, name=None, source=None, dest=None,
                            rf=1, props=None) -> Mirror; stopped at test end

Env: SG_KEEP_RUN_DIR=1 keeps the run dir (logs, data) even when all passed;
it is always kept when a test failed, and its path is printed at the end.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from kafkabed import Cluster, KafkaBed, Mirror, wait_until  # noqa: E402,F401

_RUN_DIRS: list[str] = []


def pytest_configure(config):
    config.addinivalue_line("markers", "kafka: needs the real Apache Kafka test bed")


@pytest.fixture(scope="session")
def bed(request) -> KafkaBed:
    b = KafkaBed()
    _RUN_DIRS.append(b.run_dir)

    def fin():
        b.stop_all(fast=True)
        keep = os.environ.get("SG_KEEP_RUN_DIR") or request.session.testsfailed
        if not keep:
            shutil.rmtree(b.run_dir, ignore_errors=True)

    request.addfinalizer(fin)
    return b


@pytest.fixture(scope="session")
def _source_and_dest(bed) -> tuple[Cluster, Cluster]:
    """Start "source" and "dest" side by side (saves a few seconds)."""
    src, dst = bed.start_clusters(["source", "dest"])
    return src, dst


@pytest.fixture(scope="session")
def source(_source_and_dest) -> Cluster:
    return _source_and_dest[0]


@pytest.fixture(scope="session")
def dest(_source_and_dest) -> Cluster:
    return _source_and_dest[1]


@pytest.fixture
def topic_name(request) -> str:
    base = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in request.node.name)[:60]
    return f"t-{base}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def make_cluster(bed):
    made: list[Cluster] = []

    def factory(name: str, brokers: int = 3, props=None, listeners=(), node_props=None, first_id=1,
                kafka_libs=None) -> Cluster:
        c = bed.start_cluster(name, brokers=brokers, props=props, listeners=listeners,
                              node_props=node_props, first_id=first_id, kafka_libs=kafka_libs)
        made.append(c)
        return c

    yield factory
    for c in made:
        c.stop(fast=True)


def _mirror_factory(bed, request, prefix: str, start):
    """A fixture body for a kind of mirror: `start(name, src, dst, *args,
    **kw)` starts one (bed.start_testmirror / bed.start_mm2); every mirror
    it made is stopped when the test ends. `source` / `dest` default to the
    run's shared clusters."""
    made: list[Mirror] = []

    def factory(*args, name=None, source=None, dest=None, **kw) -> Mirror:
        src = source or request.getfixturevalue("source")
        dst = dest or request.getfixturevalue("dest")
        m = start(name or f"{prefix}-{uuid.uuid4().hex[:6]}", src, dst, *args, **kw)
        made.append(m)
        return m

    yield factory
    for m in made:
        try:
            m.stop()
        except Exception as e:  # noqa: BLE001
            print(f"stopping {prefix} {m.name}: {e}", file=sys.stderr)


@pytest.fixture
def make_testmirror(bed, request):
    """make_testmirror(topics, name=, source=, dest=, create_topics=False, rf=1, extra=())"""
    def start(name, src, dst, topics, create_topics=False, rf=1, extra=()):
        return bed.start_testmirror(name, src, dst, [topics] if isinstance(topics, str) else topics,
                                    create_topics=create_topics, rf=rf, extra=extra)
    yield from _mirror_factory(bed, request, "tm", start)


@pytest.fixture
def make_mm2(bed, request):
    """make_mm2(topics_regex, name=, source=, dest=, rf=1, props=None, source_bootstrap=None)"""
    def start(name, src, dst, topics_regex, rf=1, props=None, source_bootstrap=None):
        return bed.start_mm2(name, src, dst, topics_regex, rf=rf, props=props,
                             source_bootstrap=source_bootstrap)
    yield from _mirror_factory(bed, request, "mm2", start)


def pytest_terminal_summary(terminalreporter):
    for d in _RUN_DIRS:
        if os.path.isdir(d):
            terminalreporter.write_line(f"kafka test bed run dir kept: {d} (logs under logs/, clusters/*/node-*/kafka.log)")
