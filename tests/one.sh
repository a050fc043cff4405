#!/usr/bin/env bash
# tests/one.sh — run one unit test or one integration test on a built tree,
# in seconds: no install, no Kafka jar download, nothing rebuilt that is
# current (ninja rebuilds only what changed).
#
# Usage:
#   tests/one.sh unit SUITE [FILTER]     meson test SUITE (e.g. proxy_stream,
#                                        mirror_gate, fetch_clamp, conf/load);
#                                        FILTER: a Criterion --filter glob
#                                        (e.g. 'fetch_clamp/*', suite/test) runs only those
#   tests/one.sh it FILE[::TEST] [PYTEST_ARGS...]
#                                        one integration test file, or one test
#                                        (e.g. test_consumer_clamp.py::test_x,
#                                        or FILE -k PATTERN)
#   tests/one.sh list                    the unit suites meson knows
# Needs once: tests/run.sh (or deploy/install-deps.sh, meson setup, and
# tests/kafka/fetch-jars.sh) — this script says which step is missing.
# Env: BUILD_DIR (default build), SG_KEEP_RUN_DIR=1 keeps the test bed's logs.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
BUILD_DIR="${BUILD_DIR:-build}"
PY=/usr/bin/python3

usage() { sed -n '5,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
need_build() {
  [ -f "$BUILD_DIR/build.ninja" ] || { echo "one.sh: no $BUILD_DIR yet: run 'meson setup $BUILD_DIR -Dwerror=true' (or tests/run.sh) once" >&2; exit 2; }
  ninja -C "$BUILD_DIR" >/dev/null || { ninja -C "$BUILD_DIR"; exit 1; }
}

[ $# -ge 1 ] || usage
what="$1"; shift
case "$what" in
  list)
    need_build
    meson test -C "$BUILD_DIR" --list ;;
  unit)
    [ $# -ge 1 ] || usage
    need_build
    suite="$1"; shift
    if [ $# -ge 1 ]; then
      # one Criterion filter: run the test binary directly (meson test names the binary)
      exe="$(meson introspect "$BUILD_DIR" --tests | "$PY" -c '
import json, sys
name = sys.argv[1]
for t in json.load(sys.stdin):
    if t["name"] == name:
        print(t["cmd"][0]); break' "$suite")"
      [ -n "$exe" ] || { echo "one.sh: no unit suite '$suite' (tests/one.sh list)" >&2; exit 2; }
      exec "$exe" --filter "$1" --verbose
    fi
    exec meson test -C "$BUILD_DIR" --print-errorlogs "$suite" ;;
  it)
    [ $# -ge 1 ] || usage
    need_build
    libs="$(ls -d .cache/kafka-*/libs 2>/dev/null | head -n1)"
    [ -n "$libs" ] && [ -f "$libs/.complete" ] || { echo "one.sh: no Kafka jars: run tests/kafka/fetch-jars.sh once" >&2; exit 2; }
    bash tests/kafka/build-testmirror.sh >/dev/null || exit 1
    target="$1"; shift
    case "$target" in tests/integration/*) ;; *) target="tests/integration/$target" ;; esac
    export SG_STATE_HOME="${SG_STATE_HOME:-/tmp/syncgate-testbed/one.$$}"
    tmo=(); "$PY" -c "import pytest_timeout" 2>/dev/null && tmo=(--timeout "${SG_TEST_TIMEOUT:-600}")
    "$PY" -m pytest -v -p no:cacheprovider "${tmo[@]+"${tmo[@]}"}" "$target" "$@"
    rc=$?
    rmdir "$SG_STATE_HOME" 2>/dev/null
    exit $rc ;;
  -h|--help) usage ;;
  *) usage ;;
esac
