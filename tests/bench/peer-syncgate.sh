#!/usr/bin/env bash
# tests/bench/peer-syncgate.sh — start another syncgate binary (e.g. an older
# build) as a pass-through peer for run.sh --peer-cmd, so two builds are
# compared in the same run:
#
#   tests/bench/run.sh --quick --peer-cmd 'old=tests/bench/peer-syncgate.sh /tmp/old/syncgate {broker} {port}'
#
# Writes a minimal sidecar config (no mirrors, admin on a free port) into
# $SG_RUN_DIR and execs the binary in the foreground (the bench stops it).
set -euo pipefail
[ $# -eq 3 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bin="$1" broker="$2" port="$3"
admin="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cfg="${SG_RUN_DIR:-/tmp}/peer-syncgate-$port.yaml"
cat > "$cfg" <<YAML
mode: sidecar
listen:
  kafka: 127.0.0.1:$port
upstream:
  broker: $broker
advertise:
  template: "127.0.0.1:$port"
mirrors: []
state:
  topic: __sgbench_state_peer_$port
  replication_factor: 1
admin:
  listen: 127.0.0.1:$admin
log:
  level: info
YAML
exec "$bin" --config "$cfg"
