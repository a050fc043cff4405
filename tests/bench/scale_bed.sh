#!/usr/bin/env bash
# tests/bench/scale_bed.sh — the stand-in scale bed (tests/bench/scale_bed.c):
# syncgate in front of librdkafka mock clusters, so that syncgate, not the
# brokers, is what is measured. Runs every PARTITIONS × MIRRORS combination
# once (idle window, then a paced load), one at a time, each bounded
# (scale_bed --max-s, default 115 s), and prints two markdown tables.
# Prints figures; never fails on time (exit 1 only if the bed cannot build).
#
#   tests/bench/scale_bed.sh [--partitions "10000 100000"] [--mirrors "1 2"]
#                            [--rate MSG_S] [--load-s S] [--idle-s S] [-- SCALE_BED_ARGS...]
#
# Env: SYNCGATE_BIN (default build/proxy/syncgate), SG_BENCH_NO_BUILD=1,
# SG_SCALE_DIR (default /tmp/sg-scale-bed: configs, syncgate logs, raw output).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
parts="10000 100000" mirrors="1 2" rate=5000 load=15 idle=10 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --partitions) parts="$2"; shift 2 ;;
    --mirrors) mirrors="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --load-s) load="$2"; shift 2 ;;
    --idle-s) idle="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 [--partitions LIST] [--mirrors LIST] [--rate N] [--load-s S] [--idle-s S] [-- ARGS]" >&2; exit 1 ;;
  esac
done
if [ "${SG_BENCH_NO_BUILD:-0}" != 1 ]; then
  [ -f build/build.ninja ] || meson setup build -Dwerror=true >/dev/null
  ninja -C build proxy/syncgate tests/bench/scale_bed >/dev/null
fi
bin="${SYNCGATE_BIN:-build/proxy/syncgate}"
out="${SG_SCALE_DIR:-/tmp/sg-scale-bed}"
mkdir -p "$out"
idle_rows="" load_rows=""
for p in $parts; do
  for m in $mirrors; do
    dir="$out/p$p-m$m"
    mkdir -p "$dir"
    echo "==> $p partitions x $m mirror(s) ($(date -u +%H:%M:%S) UTC)" >&2
    rc=0
    timeout 125 build/tests/bench/scale_bed --partitions "$p" --mirrors "$m" --rate "$rate" --load-s "$load" \
      --idle-s "$idle" --syncgate "$bin" --dir "$dir" --md ${extra[@]+"${extra[@]}"} > "$dir/out.txt" 2>&1 || rc=$?
    grep -v '^|' "$dir/out.txt" >&2 || true
    [ "$rc" = 0 ] || echo "    (scale_bed exit $rc)" >&2
    idle_rows+="$(grep '^| idle' "$dir/out.txt" | sed 's/^| idle //' || true)"$'\n'
    load_rows+="$(grep '^| load' "$dir/out.txt" | sed 's/^| load //' || true)"$'\n'
  done
done
echo
echo "Idle (the topic gated, nothing produced; per second; requests/s per destination = syncgate_mirror_progress_requests_total):"
echo
echo "| partitions | mirrors | effective SYNC after s | RSS MiB | B per gated partition | B per (mirror, partition) | syncgate CPU s/s | requests/s per destination demand / background | source confirmations/s |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s' "$idle_rows" | grep -v '^$' || true
echo
echo "Load ($rate msg/s of 100 B, acks=all, round-robin, $load s measured; latencies ms):"
echo
echo "| partitions | mirrors | msg/s | acks/s | syncgate CPU s/s | CPU s/s per 1,000 acks/s | direct ack p50 / p99 | ack p50 / p99 | on every destination p50 / p99 | ack after copies sent p50 / p99 | ack after last copy answered p50 / p99 | release delay hist p50 / p99 ≤ | requests/s per destination demand / background | source confirmations/s | failed / unanswered / offset or early-ack errors | bed CPU s/s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s' "$load_rows" | grep -v '^$' || true
