#!/usr/bin/env bash
# tests/run.sh — THE test command (README; .ci/run calls it).
#
# On a fresh Debian 12 machine: installs dependencies, fetches the Apache
# Kafka jars, builds syncgate (meson, warnings as errors), runs the unit tests
# (meson test), then the integration suite against real Kafka
# (/usr/bin/python3 -m pytest -v tests/integration), then the unit tests
# again under ASan+UBSan and the restart/lifecycle integration tests with the
# sanitized binary, each fuzz target briefly, the deployment checks and
# the sandbox (up, demo, down), and prints one summary
# line "N passed, N failed" for both. Exits non-zero on any failure; a step
# that fails before its tests run counts as one failure (a failed install
# stops there; a failed build skips the unit tests, the Kafka suite still runs).
#
# Usage: tests/run.sh [--unit-only | --integration-only] [-- PYTEST_ARGS...]
#   e.g. tests/run.sh --integration-only -- -k smoke -x
# Env:   SG_SKIP_INSTALL=1   skip deploy/install-deps.sh (already installed)
#        BUILD_DIR           meson build dir (default: build)
#        SG_KEEP_RUN_DIR=1   keep the Kafka run dir (logs) even when all pass
#        SG_TEST_TIMEOUT     per-test limit in seconds (default 600, pytest-timeout)
#        SG_TEST_WORKERS     integration test files run side by side (default 3,
#                            pytest-xdist; 1 = one after another)
#        SG_ASAN_BESIDE=0    run the ASan+UBSan steps after the integration
#                            tests instead of beside them
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
BUILD_DIR="${BUILD_DIR:-build}"
PY=/usr/bin/python3   # Debian's python: it sees python3-confluent-kafka / python3-pytest

unit=1 integ=1 pytest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --unit-only) integ=0; shift ;;
    --integration-only) unit=0; shift ;;
    --) shift; pytest_args=("$@"); break ;;
    *) echo "usage: tests/run.sh [--unit-only | --integration-only] [-- PYTEST_ARGS...]" >&2; exit 2 ;;
  esac
done

passed=0 failed=0 notes=()
t_start=$SECONDS
step() { echo; echo "==> $* ($(date +%H:%M:%S), +$((SECONDS - t_start))s)"; }
summary() {
  echo
  [ ${#notes[@]} -gt 0 ] && printf '  %s\n' "${notes[@]}"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] || exit 1
  exit 0
}
fail_step() { failed=$((failed + 1)); notes+=("FAILED: $*"); summary; }

if [ "${SG_SKIP_INSTALL:-0}" != 1 ]; then
  step "install dependencies (deploy/install-deps.sh)"
  bash deploy/install-deps.sh || fail_step "deploy/install-deps.sh"
fi

if [ $unit -eq 1 ] || [ $integ -eq 1 ]; then
  step "build (meson, $BUILD_DIR)"
  built=1
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    meson setup "$BUILD_DIR" -Dwerror=true || built=0
  fi
  [ $built -eq 1 ] && { meson compile -C "$BUILD_DIR" || built=0; }
  if [ $built -eq 0 ]; then
    # counted as one failure; unit tests cannot run, the Kafka suite still does
    failed=$((failed + 1)); notes+=("FAILED: build (meson setup/compile); unit tests not run")
    unit=0
  fi
fi

if [ $unit -eq 1 ]; then
  step "unit tests (meson test)"
  rm -f "$BUILD_DIR/meson-logs/testlog.json"
  meson test -C "$BUILD_DIR" --print-errorlogs
  rc=$?
  read -r up uf < <("$PY" - "$BUILD_DIR/meson-logs/testlog.json" <<'EOF'
import json, sys
ok = bad = 0
try:
    for line in open(sys.argv[1]):
        r = json.loads(line).get("result", "")
        if r in ("OK", "EXPECTEDFAIL"): ok += 1
        elif r != "SKIP": bad += 1
except FileNotFoundError:
    pass
print(ok, bad)
EOF
)
  passed=$((passed + up)); failed=$((failed + uf))
  notes+=("unit tests: $up passed, $uf failed")
  if [ $rc -ne 0 ] && [ "$uf" -eq 0 ]; then failed=$((failed + 1)); notes+=("FAILED: meson test exited $rc"); fi
fi

# one-shot checks, each counted as one test: check NAME cmd...
# A failed check's last lines go into the summary, so the end of the output
# (all a CI report may keep) says why.
account() {  # account NAME RC OUTPUT-FILE
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); notes+=("$1: passed")
  else
    failed=$((failed + 1)); notes+=("FAILED: $1")
    while IFS= read -r line; do notes+=("    | $line"); done < <(grep -v '^\s*$' "$3" | tail -n 12)
  fi
}
check() {
  local name="$1"; shift
  step "$name"
  local out rc; out="$(mktemp)"
  "$@" 2>&1 | tee "$out"; rc=${PIPESTATUS[0]}
  account "$name" "$rc" "$out"
  rm -f "$out"
}

# bg_chain NAME FN [NAME FN]...: the FNs one after another in the background
# (beside the integration tests, which mostly wait on brokers and mirrors),
# each one's output and exit code kept; bg_report prints and counts them.
bg_dir="" bg_pid=""
bg_chain() {
  bg_dir="$(mktemp -d /tmp/syncgate-bg.XXXXXX)"
  (
    n=0
    while [ $# -ge 2 ]; do
      echo "$1" > "$bg_dir/$n.name"
      "$2" > "$bg_dir/$n.out" 2>&1; echo $? > "$bg_dir/$n.rc"; n=$((n + 1)); shift 2
    done
  ) &
  bg_pid=$!
}
bg_report() {
  [ -n "$bg_dir" ] || return 0
  wait "$bg_pid"
  local n=0 rc
  while [ -f "$bg_dir/$n.name" ]; do
    step "$(cat "$bg_dir/$n.name") (ran beside the integration tests)"
    cat "$bg_dir/$n.out" 2>/dev/null
    rc="$(cat "$bg_dir/$n.rc" 2>/dev/null || echo 1)"
    account "$(cat "$bg_dir/$n.name")" "$rc" "$bg_dir/$n.out"
    n=$((n + 1))
  done
  rm -rf "$bg_dir"; bg_dir=""
}

# a hung test fails after SG_TEST_TIMEOUT seconds instead of eating CI's budget
tmo=(); "$PY" -c "import pytest_timeout" 2>/dev/null && tmo=(--timeout "${SG_TEST_TIMEOUT:-600}")
# ASan + UBSan build of the unit tests (halts on the first report); beside
# the integration tests it builds and runs at a lower priority (asan_nice)
asan_nice=()
asan_tests() {
  [ -f build-asan/build.ninja ] || "${asan_nice[@]+"${asan_nice[@]}"}" meson setup build-asan -Dwerror=true \
    -Db_sanitize=address,undefined -Db_lundef=false >/dev/null || return 1
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    LSAN_OPTIONS="suppressions=$repo/tests/lsan.supp" \
    "${asan_nice[@]+"${asan_nice[@]}"}" meson test -C build-asan --print-errorlogs
}
# the restart and lifecycle paths (state log replay, reload, SIGKILL) on
# real Kafka with the sanitized binary; a report in its log fails the test
asan_restarts() {
  # meson test builds only what the unit tests need: the binary too
  "${asan_nice[@]+"${asan_nice[@]}"}" meson compile -C build-asan >/dev/null || return 1
  SG_STATE_HOME="/tmp/syncgate-testbed/pytest-asan.$$" SYNCGATE_BIN="$repo/build-asan/proxy/syncgate" \
    UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    "$PY" -m pytest -q -p no:cacheprovider "${tmo[@]+"${tmo[@]}"}" tests/integration \
    -k "restart_history or test_lifecycle or replays_the_switch"
  local rc=$?
  rmdir "/tmp/syncgate-testbed/pytest-asan.$$" 2>/dev/null
  [ $rc -eq 0 ]
}
# the fuzz targets built (clang, build-fuzz) ahead of their run
fuzz_build() { "${asan_nice[@]+"${asan_nice[@]}"}" sh tests/fuzz/run.sh --build-only; }
ASAN_UNIT="unit tests under ASan+UBSan (build-asan)"
ASAN_RESTARTS="restart and lifecycle integration tests under ASan+UBSan (build-asan)"

if [ $integ -eq 1 ]; then
  step "Kafka jars (tests/kafka/fetch-jars.sh) and test mirror"
  bash tests/kafka/fetch-jars.sh >/dev/null || fail_step "tests/kafka/fetch-jars.sh"
  # the broker matrix's other versions (test_broker_matrix.py; the newest
  # also for test_proxy.py's ApiVersions v5), broker jars only; the list is
  # kafkabed.BROKER_MATRIX
  for v in $(cd tests/integration && "$PY" -c 'import kafkabed; print(*kafkabed.BROKER_MATRIX)'); do
    SG_KAFKA_VERSION="$v" SG_KAFKA_BROKER_ONLY=1 bash tests/kafka/fetch-jars.sh >/dev/null \
      || fail_step "tests/kafka/fetch-jars.sh (Kafka $v)"
  done
  bash tests/kafka/build-testmirror.sh >/dev/null || fail_step "tests/kafka/build-testmirror.sh"
  # the client matrix's clients (Go, npm, PyPI, Maven Central; cached under .cache/clients);
  # a part that fails to install fails its own tests, the rest still run
  step "client matrix clients (tests/clients/install.sh)"
  bash tests/clients/install.sh >/dev/null || { failed=$((failed + 1)); notes+=("FAILED: tests/clients/install.sh"); }
  # the ASan steps run beside the suite (SG_ASAN_BESIDE=0: after it)
  if [ $unit -eq 1 ] && [ "${SG_ASAN_BESIDE:-1}" = 1 ]; then
    asan_nice=(nice -n 10)
    bg_chain "$ASAN_UNIT" asan_tests "$ASAN_RESTARTS" asan_restarts "fuzz targets built (build-fuzz)" fuzz_build
  fi
  step "integration tests (real Apache Kafka)"
  junit="$(mktemp /tmp/syncgate-pytest.XXXXXX.xml)"
  # a state home of our own, so the leftover check below ignores e.g. a running sandbox
  export SG_STATE_HOME="/tmp/syncgate-testbed/pytest.$$"
  # test files side by side (pytest-xdist), each worker with a test bed of its
  # own (its own source and dest clusters); a file stays on one worker, so its
  # module fixtures are made once. Most of a test's time is waiting (brokers
  # starting, mirrors copying, timeouts: one worker keeps a core under half
  # busy), so three workers fit the two cores.
  par=(); workers="${SG_TEST_WORKERS:-3}"
  if [ "$workers" -gt 1 ] && "$PY" -c "import xdist" 2>/dev/null; then
    par=(-n "$workers" --dist loadfile)
  fi
  echo "pytest workers: ${par[*]:-1, serial}"
  "$PY" -m pytest -v -p no:cacheprovider --durations=25 --junitxml="$junit" "${tmo[@]+"${tmo[@]}"}" \
    "${par[@]+"${par[@]}"}" tests/integration \
    "${pytest_args[@]+"${pytest_args[@]}"}"
  rc=$?
  read -r ip if_ < <("$PY" - "$junit" <<'EOF'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print(0, 0); sys.exit()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
sk = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - sk, f)
EOF
)
  # where the suite's time goes, per test file (the slowest tests are above)
  "$PY" - "$junit" <<'EOF' || true
import collections, sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    sys.exit()
per = collections.Counter()
for tc in root.iter("testcase"):
    per[tc.get("classname", "?").rsplit(".", 1)[-1]] += float(tc.get("time", 0))
print("time per test file (s):", ", ".join(f"{f} {t:.0f}" for f, t in per.most_common()))
EOF
  rm -f "$junit"
  passed=$((passed + ip)); failed=$((failed + if_))
  notes+=("integration tests: $ip passed, $if_ failed")
  # rc 5 = nothing collected (deselected by -k): not a failure in itself
  if [ $rc -ne 0 ] && [ $rc -ne 5 ] && [ "$if_" -eq 0 ]; then failed=$((failed + 1)); notes+=("FAILED: pytest exited $rc"); fi
  # nothing may outlive the suite
  left="$(pgrep -f -- "-Dsyncgate.testbed=$SG_STATE_HOME" || true)"
  rmdir "$SG_STATE_HOME" 2>/dev/null
  if [ -n "$left" ]; then
    failed=$((failed + 1)); notes+=("FAILED: test-bed processes left running: $left")
  fi
fi
bg_report

if [ $unit -eq 1 ]; then
  # when they did not run beside the integration tests
  if [ $integ -eq 0 ] || [ "${SG_ASAN_BESIDE:-1}" != 1 ]; then
    check "$ASAN_UNIT" asan_tests
    [ $integ -eq 0 ] || check "$ASAN_RESTARTS" asan_restarts
  fi
  # every libFuzzer target briefly, seeded with the golden frames
  check "fuzz targets, ${SG_FUZZ_SECONDS:-10}s each (tests/fuzz/run.sh)" \
    sh tests/fuzz/run.sh "${SG_FUZZ_SECONDS:-10}"
  check "deployment artefacts (tests/deploy/check.sh)" env BUILD_DIR="$BUILD_DIR" bash tests/deploy/check.sh
fi
if [ $integ -eq 1 ]; then
  check "sandbox up, demo, down (tests/deploy/sandbox.sh)" \
    env SG_SKIP_INSTALL=1 SG_SKIP_BUILD=1 SG_BUILD_DIR="$BUILD_DIR" bash tests/deploy/sandbox.sh
fi

notes+=("total time $((SECONDS - t_start))s")
summary
