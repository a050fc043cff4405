#!/usr/bin/env bash
# tests/deploy/sandbox.sh — CI check of the README's main command: runs
# deploy/local/up.sh (clusters, test mirror, syncgate, guided demo), asserts
# the demo's outcome from $SG_RUN_DIR/demo.result, runs deploy/local/down.sh
# and asserts that nothing of the sandbox is left running. Exit 0 = passed.
#
# It uses its own run dir (default /tmp/syncgate-sandbox-ci.<pid>), so a
# sandbox a developer has running in /tmp/syncgate-sandbox is left alone.
# Env: SG_SKIP_INSTALL=1, SG_SKIP_BUILD=1, SG_BUILD_DIR — passed to up.sh.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
export SG_RUN_DIR="${SG_RUN_DIR:-/tmp/syncgate-sandbox-ci.$$}"
failures=()
fail() { failures+=("$*"); echo "FAIL: $*" >&2; }

downed=0
down() {
  [ $downed -eq 1 ] && return 0
  downed=1
  echo "==> deploy/local/down.sh"
  bash deploy/local/down.sh || fail "down.sh exited non-zero"
}
trap 'down >/dev/null 2>&1' EXIT

echo "==> deploy/local/up.sh (run dir $SG_RUN_DIR)"
bash deploy/local/up.sh
up_rc=$?
[ $up_rc -eq 0 ] || fail "up.sh exited $up_rc"

# -- the demo's outcome ----------------------------------------------------------
R="$SG_RUN_DIR/demo.result"
get() { sed -n "s/^$1=//p" "$R" 2>/dev/null | tail -1; }
if [ ! -s "$R" ]; then
  fail "no demo result ($R)"
else
  echo "==> demo result:"; sed 's/^/    /' "$R"
  [ "$(get demo)" = passed ] || fail "demo=$(get demo) (expected passed)"
  # 1: acks flow, and at ack time the destination has everything the source has
  [ "$(get step1_rc)" = 0 ] || fail "first produce was not acknowledged"
  [ -n "$(get step1_dest_hw)" ] && [ "$(get step1_dest_hw)" -ge "$(get step1_source_hw)" ] \
    || fail "acked before the destination had it: dest hw $(get step1_dest_hw) < source hw $(get step1_source_hw)"
  # 2: mirror paused: held, then failed with NOT_ENOUGH_REPLICAS_AFTER_APPEND at the timeout
  [ "$(get held_seen)" -ge 1 ] 2>/dev/null || fail "no held response seen while the mirror was paused"
  [ "$(get held_rc)" != 0 ] || fail "the produce was acknowledged while the mirror was paused (false ack)"
  [ "$(get held_error)" = NOT_ENOUGH_REPLICAS_AFTER_APPEND ] || fail "held produce error: $(get held_error)"
  [ "$(get held_ms)" -ge 3000 ] 2>/dev/null || fail "held produce failed after $(get held_ms) ms, before its timeout"
  # 3: resumed: acks flow again, still zero RPO
  [ "$(get step3_rc)" = 0 ] || fail "produce after resume was not acknowledged"
  [ -n "$(get step3_dest_hw)" ] && [ "$(get step3_dest_hw)" -ge "$(get step3_source_hw)" ] \
    || fail "acked before the destination had it (after resume)"
  # 2b: a consumer through syncgate stops at the mirrored HW (4), directly at 5
  [ "$(get consumer_last_via_syncgate)" = 4 ] && [ "$(get consumer_last_direct)" = 5 ] \
    || fail "consumer through syncgate ended at $(get consumer_last_via_syncgate) (want 4; direct $(get consumer_last_direct))"
  [ "$(get step3_consumer_last_via_syncgate)" = "$(( $(get step3_source_hw) - 1 ))" ] \
    || fail "after resume the consumer through syncgate ended at $(get step3_consumer_last_via_syncgate)"
  # 4: same records at the same offsets on both sides; nothing left held
  [ "$(get records_identical)" = 1 ] || fail "source and destination records differ"
  [ "$(get held_responses_end)" = 0 ] || fail "syncgate still holds $(get held_responses_end) responses"
fi

# -- down leaves nothing ------------------------------------------------------------
sg_pid=""
[ -f "$SG_RUN_DIR/pids/syncgate.pid" ] && sg_pid="$(cut -d' ' -f1 "$SG_RUN_DIR/pids/syncgate.pid")"
mirror_pid=""
[ -f "$SG_RUN_DIR/pids/testmirror.mirror.pid" ] && mirror_pid="$(cut -d' ' -f1 "$SG_RUN_DIR/pids/testmirror.mirror.pid")"
down
left="$(pgrep -af -- "-Dsyncgate.testbed=$SG_RUN_DIR( |$)|$SG_RUN_DIR/syncgate.yaml" || true)"
[ -z "$left" ] || fail "processes left after down.sh: $left"
for p in $sg_pid $mirror_pid; do
  # a zombie (exited, not yet reaped by PID 1) is stopped
  st="$(ps -o stat= -p "$p" 2>/dev/null || true)"
  [ -n "$st" ] && [ "${st#Z}" = "$st" ] && fail "process $p ($(tr '\0' ' ' < /proc/"$p"/cmdline 2>/dev/null)) still running"
done
[ ! -d "$SG_RUN_DIR" ] || fail "run dir $SG_RUN_DIR not removed"

echo
if [ ${#failures[@]} -eq 0 ]; then
  echo "tests/deploy/sandbox.sh: PASSED (up, demo, down)"
  exit 0
fi
echo "tests/deploy/sandbox.sh: FAILED (${#failures[@]}):"; printf '  %s\n' "${failures[@]}"
exit 1
