#!/usr/bin/env bash
# testmirror.sh — run the offset-preserving test mirror (testmirror.c) in the background.
#
#   testmirror.sh start NAME [--from CLUSTER | --source BOOTSTRAP] [--to CLUSTER | --dest BOOTSTRAP]
#                            --topic T [--topic T2...] [other testmirror options]   (T: name or ^regex)
#       --from/--to take cluster names started by cluster.sh in the same run dir.
#       Builds the binary if needed (build-testmirror.sh; or set SG_TESTMIRROR).
#       Started again after a stop or kill, it resumes at the destination's high watermarks.
#   testmirror.sh stop NAME        SIGTERM (flushes), SIGKILL after 10 s
#   testmirror.sh kill NAME        SIGKILL at once (what it had in flight is lost or lands later)
#   testmirror.sh pause NAME       SIGSTOP: nothing is copied until resume (creates lag)
#   testmirror.sh resume NAME      SIGCONT
#   testmirror.sh pid NAME         print its pid
# Log: $SG_RUN_DIR/logs/testmirror.NAME.log; pid file: $SG_RUN_DIR/pids/testmirror.NAME.pid
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"


case "${1:-}" in -h|--help|help) sg_usage 0 ;; esac
[ $# -ge 2 ] || sg_usage
cmd="$1" name="$2"; shift 2
sg_run_dir
pf="$SG_RUN_DIR/pids/testmirror.$name.pid"
lf="$SG_RUN_DIR/logs/testmirror.$name.log"
case "$cmd" in
  start)
    sg_alive "$pf" && sg_die "testmirror $name already running"
    args=()
    while [ $# -gt 0 ]; do
      case "$1" in
        --from) args+=(--source "$(sg_bootstrap_of "$2")"); shift 2 ;;
        --to) args+=(--dest "$(sg_bootstrap_of "$2")"); shift 2 ;;
        *) args+=("$1"); shift ;;
      esac
    done
    bin="${SG_TESTMIRROR:-$(bash "$SG_KAFKA_DIR/build-testmirror.sh")}"
    skip=1; [ -f "$lf" ] && skip=$(($(wc -c < "$lf") + 1))   # a restart appends to the same log
    sg_spawn "$pf" "$lf" "testmirror $name" "$bin" "${args[@]}"
    for _ in $(seq 50); do
      tail -c "+$skip" "$lf" 2>/dev/null | grep -q "started:" && break
      sg_alive "$pf" || { cat "$lf" >&2; sg_die "testmirror $name exited"; }
      sleep 0.1
    done
    sg_log "testmirror $name: running (pid $(sg_pid "$pf")), log $lf"
    ;;
  stop) sg_stop_pidfile "$pf" 10; sg_log "testmirror $name: stopped" ;;
  kill) sg_stop_pidfile "$pf" 0; sg_log "testmirror $name: killed" ;;
  pause) sg_alive "$pf" || sg_die "testmirror $name not running"; kill -STOP "$(sg_pid "$pf")"; sg_log "testmirror $name: paused" ;;
  resume) sg_alive "$pf" || sg_die "testmirror $name not running"; kill -CONT "$(sg_pid "$pf")"; sg_log "testmirror $name: resumed" ;;
  pid) sg_alive "$pf" && sg_pid "$pf" ;;
  *) sg_usage ;;
esac
