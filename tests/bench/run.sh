#!/usr/bin/env bash
# tests/bench/run.sh — syncgate's benchmark suite against real Apache Kafka
# (the test bed in tests/kafka). Prints figures; never fails on time.
#
#   tests/bench/run.sh [--quick] [--peer HOST:PORT]... [--peer-cmd NAME=COMMAND]...
#                      [--only passthrough,gate,scale] [--scale idle,held,gated] [--rounds N]
#                      [--keep] [--no-diag]
#
#   --quick   a subset (a few minutes); default: the full matrix (longer)
#   --peer    also measure an already running proxy's listen address (pass-through section)
#   --peer-cmd start a peer proxy: {broker} = source broker host:port, {port} = its listen port,
#             e.g. old=tests/bench/peer-syncgate.sh /tmp/old/syncgate {broker} {port}
#   --only    run some sections only
#   --rounds  alternating rounds per comparison (more = steadier medians on a busy machine)
#   --keep    keep the Kafka run dir (logs) under $SG_STATE_HOME
#   --no-diag skip the diagnostic "syncgate+nodelay" targets (same binary, TCP_NODELAY forced
#             through the LD_PRELOAD shim nodelay_shim.c)
#
# Results: tests/bench/results/<stamp>/ (results.md, results.json, latency.png,
# raw probe files), tests/bench/results/latest -> the newest. See docs/benchmarks.md.
# Env: SYNCGATE_BIN (default build/proxy/syncgate), SG_STATE_HOME (default
# /tmp/syncgate-bench), SG_BENCH_NO_BUILD=1 (do not run ninja).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
export SG_STATE_HOME="${SG_STATE_HOME:-/tmp/syncgate-bench}"

# 10,000 client connections = 20,000 descriptors in syncgate (each paired with
# an upstream connection): raise the limit for everything we start.
want=65536
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt $want ]; then
  ulimit -Hn $want 2>/dev/null || echo "run.sh: cannot raise the hard open-files limit ($(ulimit -Hn)); the 10,000-connection figure may fail" >&2
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# gnuplot for the latency plot (Debian: gnuplot-nox), installed when missing.
if ! command -v gnuplot >/dev/null; then
  echo "run.sh: installing gnuplot-nox for the latency plot" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q gnuplot-nox >/dev/null || true
  else sudo apt-get install -y -q gnuplot-nox >/dev/null || true; fi
  command -v gnuplot >/dev/null || echo "run.sh: no gnuplot; results without latency.png" >&2
fi

bash tests/kafka/fetch-jars.sh >/dev/null
bash tests/kafka/build-testmirror.sh >/dev/null
if [ "${SG_BENCH_NO_BUILD:-0}" != 1 ] && [ -z "${SYNCGATE_BIN:-}" ]; then
  [ -f build/build.ninja ] || meson setup build -Dwerror=true >/dev/null
  ninja -C build >/dev/null || echo "run.sh: the build failed; benchmarking the existing build/proxy/syncgate (its build time is in the results)" >&2
fi
exec /usr/bin/python3 tests/bench/bench.py "$@"
