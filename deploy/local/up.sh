#!/usr/bin/env bash
# deploy/local/up.sh — THE sandbox command (README): on a fresh Debian 12 box,
# install, build, and start a local two-cluster syncgate sandbox:
#
#   source cluster (1 KRaft node) ──test mirror (offset-preserving)──▶ dest cluster (1 node)
#        ▲
#   syncgate (sidecar in front of the source broker; when built)
#        ▲
#   kcat producing to topic "orders" (acks=all) through syncgate
#
# Then a short guided demo (acks, a held produce while the mirror is paused
# failing at its timeout, a consumer through syncgate that does not see the
# unmirrored record, acks after resume, every ack on the destination)
# and how to use the sandbox. Stop with deploy/local/down.sh.
# Everything lives in $SG_RUN_DIR (default /tmp/syncgate-sandbox): cluster data,
# logs (logs/), the generated syncgate config (syncgate.yaml), sandbox.env.
# Running up.sh again restarts the sandbox from scratch.
#
# Env: SG_SKIP_INSTALL=1 (skip apt), SG_SKIP_BUILD=1 (skip meson),
#      SG_SANDBOX_TOPIC (default orders), SG_SYNCGATE_PORT (default 19092 if free),
#      SG_MIRROR=testmirror|mm2 (default testmirror), SG_BUILD_DIR (default build),
#      SG_DEMO=0 (skip the guided demo; default runs it and records its outcome
#      in $SG_RUN_DIR/demo.result, which tests/deploy/sandbox.sh checks)
set -euo pipefail
case "${1:-}" in
  "") ;;
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  *) echo "usage: deploy/local/up.sh   (settings through the environment; --help)" >&2; exit 2 ;;
esac
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
export SG_RUN_DIR="${SG_RUN_DIR:-/tmp/syncgate-sandbox}"
K="$repo/tests/kafka"
TOPIC="${SG_SANDBOX_TOPIC:-orders}"
MIRROR="${SG_MIRROR:-testmirror}"
# shellcheck source=../../tests/kafka/lib.sh
. "$K/lib.sh"
t0=$SECONDS
say() { echo; echo "==> $* (+$((SECONDS - t0))s)"; }

# -- 1. install, fetch, build ------------------------------------------------
if [ "${SG_SKIP_INSTALL:-0}" != 1 ]; then
  say "installing dependencies (deploy/install-deps.sh)"
  bash deploy/install-deps.sh
fi
say "fetching Apache Kafka jars"
SG_KAFKA_NO_STREAMS=1 bash "$K/fetch-jars.sh" >/dev/null   # Kafka Streams: tests only
bash "$K/build-testmirror.sh" >/dev/null
BUILD_DIR="${SG_BUILD_DIR:-build}"
if [ "${SG_SKIP_BUILD:-0}" != 1 ]; then
  say "building syncgate (meson, $BUILD_DIR)"
  if { [ -f "$BUILD_DIR/build.ninja" ] || meson setup "$BUILD_DIR"; } && meson compile -C "$BUILD_DIR"; then :; else
    echo "WARNING: the syncgate build failed; the sandbox starts without syncgate" >&2
  fi
fi

# on any failure from here on: stop what we started (logs stay in the run dir)
on_error() {
  echo "up.sh FAILED (line $1); stopping the sandbox. Logs: $SG_RUN_DIR/logs, $SG_RUN_DIR/clusters/*/node-*/kafka.log" >&2
  bash "$K/cluster.sh" stop-all --fast >/dev/null 2>&1 || true
}

# -- 2. clean slate ------------------------------------------------------------
if [ -d "$SG_RUN_DIR/pids" ]; then
  say "stopping the previous sandbox in $SG_RUN_DIR"
  bash "$K/cluster.sh" stop-all --fast --clean >/dev/null 2>&1 || true
fi
mkdir -p "$SG_RUN_DIR"
trap 'on_error $LINENO' ERR

# -- 3. clusters, topic, mirror -------------------------------------------------
say "starting the source and destination clusters"
bash "$K/cluster.sh" start source & p1=$!
bash "$K/cluster.sh" start dest & p2=$!
rc1=0 rc2=0; wait $p1 || rc1=$?; wait $p2 || rc2=$?
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] || { on_error "cluster start"; exit 1; }
eval "$(bash "$K/cluster.sh" env source)"
eval "$(bash "$K/cluster.sh" env dest)"

say "creating topic '$TOPIC' (3 partitions) on both clusters"
bash "$K/cluster.sh" create-topic source "$TOPIC" --partitions 3 --rf 1
bash "$K/cluster.sh" create-topic dest "$TOPIC" --partitions 3 --rf 1

if [ "$MIRROR" = mm2 ]; then
  MIRROR_CTL="mm2.sh pause mm2"
  say "starting MirrorMaker 2 source -> dest for '$TOPIC'"
  bash "$K/mm2.sh" start mm2 --from source --to dest --topics "$TOPIC"
else
  MIRROR_CTL="testmirror.sh pause mirror"
  say "starting the offset-preserving test mirror source -> dest for '$TOPIC'"
  bash "$K/testmirror.sh" start mirror --from source --to dest --topic "$TOPIC"
fi

# -- 4. syncgate ------------------------------------------------------------------
SYNCGATE_BIN=""
for b in "$BUILD_DIR/proxy/syncgate" "$BUILD_DIR/syncgate"; do
  [ -x "$b" ] && { SYNCGATE_BIN="$(cd "$(dirname "$b")" && pwd)/$(basename "$b")"; break; }
done
SG_BOOTSTRAP=""   # set by start_syncgate when syncgate runs

# start_syncgate: write $SG_RUN_DIR/syncgate.yaml (the shape of
# deploy/systemd/syncgate.yaml, reference: docs/configuration.md) and
# start syncgate in front of the source broker: mirror "dr" = the dest
# cluster, topic $TOPIC desired SYNC. Waits until syncgate listens and the
# topic is effectively SYNC (promoted at lag 0). Sets SG_BOOTSTRAP, SG_ADMIN.
start_syncgate() {
  local port admin_port
  port="${SG_SYNCGATE_PORT:-19092}"
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && port="$(sg_free_ports 1)"
  admin_port="$(sg_free_ports 1)"
  # the bearer token of mutating admin calls (syncgate-ctl --alter, --release-sync)
  [ -s "$SG_RUN_DIR/admin.token" ] || { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; echo; } > "$SG_RUN_DIR/admin.token"
  chmod 600 "$SG_RUN_DIR/admin.token"
  cat > "$SG_RUN_DIR/syncgate.yaml" <<EOF
# generated by deploy/local/up.sh — reference: docs/configuration.md
mode: sidecar
listen:
  kafka: 127.0.0.1:$port
upstream:
  broker: $SG_SOURCE_BROKER_1
  connect_timeout_ms: 5000
advertise:
  nodes: {1: "127.0.0.1:$port"}
gate:
  max_hold_ms: 30000              # cap on a Produce request's TimeoutMs
  acks1: pass
mirrors:
  - name: dr                      # the dest cluster, fed by the $MIRROR
    bootstrap: $SG_DEST_BOOTSTRAP
    offsets: $([ "$MIRROR" = mm2 ] && echo mm2 || echo preserved)
    progress: poll
    poll_interval_ms: 5
    mm2_offset_syncs_topic: mm2-offset-syncs.dest.internal   # used with offsets: mm2 (MM2 target alias "dest")
    sync_topics: ["$TOPIC"]
state:
  topic: __syncgate_state
  replication_factor: 1
admin:
  listen: 127.0.0.1:$admin_port
  token_file: $SG_RUN_DIR/admin.token
log:
  level: info
EOF
  "$SYNCGATE_BIN" --check-config "$SG_RUN_DIR/syncgate.yaml" >/dev/null
  sg_spawn "$SG_RUN_DIR/pids/syncgate.pid" "$SG_RUN_DIR/logs/syncgate.log" "syncgate" \
    "$SYNCGATE_BIN" --config "$SG_RUN_DIR/syncgate.yaml"
  if ! sg_wait_port "127.0.0.1:$port" 20 "$SG_RUN_DIR/pids/syncgate.pid"; then
    echo "WARNING: syncgate did not come up; its log:" >&2
    tail -20 "$SG_RUN_DIR/logs/syncgate.log" >&2 || true
    return 1
  fi
  SG_BOOTSTRAP="127.0.0.1:$port"
  SG_ADMIN="127.0.0.1:$admin_port"
  local i eff=""
  for i in $(seq 300); do
    eff="$(sg_effective dr "$TOPIC")"
    [ "$eff" = SYNC ] && break
    sleep 0.2
  done
  echo "    syncgate $SG_BOOTSTRAP (admin http://$SG_ADMIN), mirror dr / $TOPIC: effective ${eff:-unknown}"
  [ "$eff" = SYNC ]
}

# sg_effective MIRROR TOPIC: the topic's effective type from /v1/mirrors.
sg_effective() {
  curl -fsS --max-time 2 "http://$SG_ADMIN/v1/mirrors?mirror=$1&topic=$2" 2>/dev/null | "$SG_PY" -c '
import json, sys
for m in json.load(sys.stdin).get("mirrors", []):
    for t in m.get("topics", []):
        if t.get("topic") == sys.argv[1]:
            print(t.get("effective", "")); sys.exit()' "$2" 2>/dev/null || true
}

# sg_metric NAME: a metric value from syncgate's /metrics (summed over labels).
sg_metric() {
  { curl -fsS --max-time 2 "http://$SG_ADMIN/metrics" 2>/dev/null || true; } \
    | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2 } END { print s + 0 }'
}

SG_RUNNING=0
if [ -n "$SYNCGATE_BIN" ]; then
  say "starting syncgate ($SYNCGATE_BIN) in front of the source broker"
  if start_syncgate; then SG_RUNNING=1; else
    echo "WARNING: syncgate is not gating $TOPIC (see $SG_RUN_DIR/logs/syncgate.log)" >&2
  fi
else
  say "no syncgate binary (build/proxy/syncgate) — producing straight to the source"
fi

# -- 5. the guided demo ------------------------------------------------------------
# Results go to $SG_RUN_DIR/demo.result (key=value; demo=passed|failed).
R="$SG_RUN_DIR/demo.result"
: > "$R"
result() { echo "$1=$2" >> "$R"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# hw CLUSTER_BOOTSTRAP: high watermark of $TOPIC[0]
hw() { { kcat -Q -b "$1" -t "$TOPIC:0:-1" 2>/dev/null || true; } | sed -n 's/.*\[0\] offset \([0-9-]*\).*/\1/p'; }
# produce N FIRST [kcat -X options...]: N records to $TOPIC[0] via syncgate,
# acks=all; prints kcat's delivery reports/errors; returns kcat's status.
produce() {
  local n="$1" first="$2" i; shift 2
  for ((i = first; i < first + n; i++)); do echo "order-$i:{\"id\":$i,\"item\":\"widget\"}"; done \
    | kcat -P -b "$produce_to" -t "$TOPIC" -p 0 -K: -X acks=all "$@" 2>&1 | sed 's/^/      kcat: /'
  return "${PIPESTATUS[1]}"
}

produce_to="${SG_BOOTSTRAP:-$SG_SOURCE_BOOTSTRAP}"
demo_ok=1
if [ "${SG_DEMO:-1}" = 0 ]; then
  result demo skipped
elif [ "$SG_RUNNING" != 1 ]; then
  say "syncgate is not running: producing 5 records straight to the source (no gate, no demo)"
  produce 5 1 -X message.timeout.ms=30000 || true
  result demo failed; result reason no_syncgate; demo_ok=0
else
  # step 1: acks flow while the mirror keeps up
  say "demo 1/4: produce 5 records through syncgate (kcat, acks=all) while the $MIRROR runs"
  t=$(date +%s%N)
  if produce 5 1 -X message.timeout.ms=30000; then rc=0; else rc=$?; fi
  ack_ms=$(ms_since "$t"); s_hw=$(hw "$SG_SOURCE_BOOTSTRAP"); d_hw=$(hw "$SG_DEST_BOOTSTRAP")
  echo "    kcat exit $rc: 5 records acknowledged in ${ack_ms} ms"
  echo "    right after the acks: source high watermark $s_hw, destination high watermark $d_hw"
  result step1_rc "$rc"; result step1_source_hw "$s_hw"; result step1_dest_hw "$d_hw"
  [ "$rc" = 0 ] && [ -n "$d_hw" ] && [ "$d_hw" -ge "$s_hw" ] || demo_ok=0

  # step 2: mirror paused -> the ack is held, then fails at the request's timeout
  say "demo 2/4: pause the $MIRROR (tests/kafka/$MIRROR_CTL) and produce 1 record (request.timeout.ms=5000, no retries)"
  bash "$K/${MIRROR_CTL%% *}" ${MIRROR_CTL#* }
  t=$(date +%s%N)
  out="$SG_RUN_DIR/logs/demo-held.kcat.log"
  produce 1 6 -X request.timeout.ms=5000 -X message.timeout.ms=15000 -X retries=0 > "$out" 2>&1 &
  kpid=$!
  held=0
  for _ in $(seq 20); do
    held=$(sg_metric syncgate_held_responses); [ "$held" -ge 1 ] 2>/dev/null && break; sleep 0.1
  done
  echo "    after $(ms_since "$t") ms: syncgate_held_responses = $held (the broker appended the record; syncgate holds its ack)"
  sleep 1
  echo "    after $(ms_since "$t") ms: still held = $(sg_metric syncgate_held_responses), kcat still waiting"
  if wait "$kpid"; then rc=0; else rc=$?; fi
  held_ms=$(ms_since "$t")
  cat "$out"
  # librdkafka's text for error 20 NOT_ENOUGH_REPLICAS_AFTER_APPEND
  err_line="$(grep -i -m1 'insufficient number of in-sync replicas\|enough in-sync replicas after append' "$out" || true)"
  echo "    kcat exit $rc after ${held_ms} ms: ${err_line:+error 20 NOT_ENOUGH_REPLICAS_AFTER_APPEND — kcat (librdkafka) negotiates Produce < v14, so syncgate down-maps MIRROR_SYNC_REPLICATION_TIMEOUT to it}"
  echo "    syncgate log: $(grep -m1 'produce_partition_failed' "$SG_RUN_DIR/logs/syncgate.log" | cut -d' ' -f3- || true)"
  echo "    gate outcomes so far: timeout=$({ curl -fsS "http://$SG_ADMIN/metrics" || true; } | awk '/^syncgate_gate_partition_outcomes_total\{outcome="timeout"\}/ {print $2}')"
  # consumers through syncgate see only mirrored records (the KIP's unified HW)
  last() { kcat -C -b "$1" -t "$TOPIC" -p 0 -o beginning -e -q -f '%o\n' 2>/dev/null | tail -1; }
  via_sg="$(last "$produce_to")"; direct="$(last "$SG_SOURCE_BOOTSTRAP")"
  echo "    a consumer reading $TOPIC[0] through syncgate ends at offset ${via_sg:-none}; straight from the source broker at ${direct:-none}"
  echo "    (offset 5 is on the source but not on the destination: syncgate clamps Fetch to the mirrored high watermark)"
  result consumer_last_via_syncgate "${via_sg:--1}"; result consumer_last_direct "${direct:--1}"
  { [ "${via_sg:--1}" = 4 ] && [ "${direct:--1}" = 5 ]; } || demo_ok=0
  result held_seen "$held"; result held_rc "$rc"; result held_ms "$held_ms"
  result held_error "$([ -n "$err_line" ] && echo NOT_ENOUGH_REPLICAS_AFTER_APPEND || echo none)"
  { [ "$held" -ge 1 ] && [ "$rc" != 0 ] && [ -n "$err_line" ] && [ "$held_ms" -ge 3000 ]; } || demo_ok=0

  # step 3: resume -> acks flow again
  say "demo 3/4: resume the $MIRROR and produce 5 more records"
  bash "$K/${MIRROR_CTL%% *}" resume ${MIRROR_CTL##* }
  t=$(date +%s%N)
  if produce 5 7 -X message.timeout.ms=30000; then rc=0; else rc=$?; fi
  ack_ms=$(ms_since "$t"); s_hw=$(hw "$SG_SOURCE_BOOTSTRAP"); d_hw=$(hw "$SG_DEST_BOOTSTRAP")
  echo "    kcat exit $rc: 5 records acknowledged in ${ack_ms} ms"
  echo "    right after the acks: source high watermark $s_hw, destination high watermark $d_hw"
  via_sg="$(last "$produce_to")"
  echo "    the consumer through syncgate now ends at offset ${via_sg:-none} (everything is on the destination)"
  result step3_rc "$rc"; result step3_source_hw "$s_hw"; result step3_dest_hw "$d_hw"
  result step3_consumer_last_via_syncgate "${via_sg:--1}"
  [ "${via_sg:--1}" = $((s_hw - 1)) ] || demo_ok=0
  [ "$rc" = 0 ] && [ -n "$d_hw" ] && [ "$d_hw" -ge "$s_hw" ] || demo_ok=0

  # step 4: every acknowledged record is on the destination, at the same offset
  say "demo 4/4: compare $TOPIC[0] on the source and the destination"
  dump() { kcat -C -b "$1" -t "$TOPIC" -p 0 -o beginning -c "$s_hw" -e -q -f '%o %k %s\n' 2>/dev/null; }
  dump "$SG_SOURCE_BOOTSTRAP" > "$SG_RUN_DIR/logs/demo-source.txt"
  dump "$SG_DEST_BOOTSTRAP" > "$SG_RUN_DIR/logs/demo-dest.txt"
  echo "    source (offset key value)                      | destination"
  paste -d'|' "$SG_RUN_DIR/logs/demo-source.txt" "$SG_RUN_DIR/logs/demo-dest.txt" \
    | awk -F'|' '{ printf "      %-44s | %s\n", $1, $2 }'
  if cmp -s "$SG_RUN_DIR/logs/demo-source.txt" "$SG_RUN_DIR/logs/demo-dest.txt"; then same=1; else same=0; fi
  echo "    identical: $([ $same = 1 ] && echo yes || echo NO) — offset 5 (order-6) was appended on the source but never acknowledged; the mirror copied it after resume"
  result records_identical "$same"; result held_responses_end "$(sg_metric syncgate_held_responses)"
  [ "$same" = 1 ] || demo_ok=0
  result demo "$([ $demo_ok = 1 ] && echo passed || echo failed)"
  say "demo $([ $demo_ok = 1 ] && echo PASSED || echo FAILED) (details: $R)"
fi

trap - ERR

# -- 6. tell the user -----------------------------------------------------------------
{
  echo "SG_RUN_DIR=$SG_RUN_DIR"
  echo "SOURCE_BOOTSTRAP=$SG_SOURCE_BOOTSTRAP"
  echo "DEST_BOOTSTRAP=$SG_DEST_BOOTSTRAP"
  echo "SYNCGATE_BOOTSTRAP=${SG_BOOTSTRAP:-}"
  echo "SYNCGATE_ADMIN=${SG_ADMIN:-}"
  echo "TOPIC=$TOPIC"
} > "$SG_RUN_DIR/sandbox.env"
cat <<EOF

==> sandbox up in $((SECONDS - t0))s
    source cluster   $SG_SOURCE_BOOTSTRAP
    dest cluster     $SG_DEST_BOOTSTRAP
    mirror           $MIRROR (source -> dest, topic $TOPIC)
    syncgate         ${SG_BOOTSTRAP:-not running}${SG_ADMIN:+   (admin http://$SG_ADMIN/metrics, /v1/mirrors)}
    config           $SG_RUN_DIR/syncgate.yaml (mirror dr, sync_topics ["$TOPIC"])
    produce:  echo k:v | kcat -P -b ${SG_BOOTSTRAP:-$SG_SOURCE_BOOTSTRAP} -t $TOPIC -K: -X acks=all
    consume:  kcat -C -b $SG_DEST_BOOTSTRAP -t $TOPIC -e
    operate:  ${SYNCGATE_BIN%/syncgate}/syncgate-ctl${SG_ADMIN:+ --admin $SG_ADMIN} --token-file $SG_RUN_DIR/admin.token --describe
              (also --alter --mirror dr --topic $TOPIC --async|--sync, --release-sync --mirror dr)
    pause the mirror (lag on demand):  SG_RUN_DIR=$SG_RUN_DIR tests/kafka/$MIRROR_CTL   (then: resume)
    status:   SG_RUN_DIR=$SG_RUN_DIR tests/kafka/cluster.sh status
    logs:     $SG_RUN_DIR/logs/, $SG_RUN_DIR/clusters/*/node-*/kafka.log
    addresses: $SG_RUN_DIR/sandbox.env
    stop:     $([ "$SG_RUN_DIR" = /tmp/syncgate-sandbox ] || echo "SG_RUN_DIR=$SG_RUN_DIR ")deploy/local/down.sh
EOF
[ "${SG_DEMO:-1}" = 0 ] || [ $demo_ok = 1 ] || { echo "up.sh: the demo FAILED (see above and $R)" >&2; exit 1; }
