#!/usr/bin/env bash
# deploy/local/down.sh — stop the local sandbox started by deploy/local/up.sh:
# syncgate, the mirror, both clusters — every process recorded in the run dir
# (SIGTERM, SIGKILL after 10 s) — then check that none is left (no JVM with
# the run's marker, no syncgate with its config) and remove the run dir.
# --keep keeps the run dir (logs, data) for a look afterwards.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export SG_RUN_DIR="${SG_RUN_DIR:-/tmp/syncgate-sandbox}"
keep=0
case "${1:-}" in
  "") ;;
  --keep) keep=1 ;;
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  *) echo "usage: deploy/local/down.sh [--keep]" >&2; exit 2 ;;
esac
if [ ! -d "$SG_RUN_DIR" ]; then
  echo "down.sh: no sandbox in $SG_RUN_DIR"; exit 0
fi
bash "$repo/tests/kafka/cluster.sh" stop-all $([ $keep -eq 1 ] || echo --clean)
# JVMs carry -Dsyncgate.testbed=$SG_RUN_DIR, syncgate its config $SG_RUN_DIR/syncgate.yaml
left="$(pgrep -af -- "-Dsyncgate.testbed=$SG_RUN_DIR( |$)|$SG_RUN_DIR/syncgate.yaml" || true)"
if [ -n "$left" ]; then
  echo "down.sh: processes still running:" >&2; echo "$left" >&2; exit 1
fi
echo "down.sh: sandbox stopped; nothing left running from $SG_RUN_DIR$([ $keep -eq 1 ] && echo " (kept)")"
