#!/usr/bin/env bash
# tests/bench/peers.sh — other Kafka proxies as pass-through peers for
# tests/bench/run.sh --peer-cmd (docs/benchmarks.md, "Peer proxies").
#
#   tests/bench/peers.sh setup        get what is missing into .cache/peers, then print the --peer-cmd options
#   tests/bench/peers.sh print        print the --peer-cmd options for what is there
#   tests/bench/peers.sh run NAME BROKER PORT   (what --peer-cmd runs) exec peer NAME in the foreground,
#                                     proxying BROKER (host:port) on 127.0.0.1:PORT; the bench stops it
#
# Peers:
#   kroxylicious  Kroxylicious 0.12.0 (Java), io.kroxylicious:kroxylicious-runtime and its dependencies
#                 from Maven Central (mvn dependency:copy-dependencies), no filters, started by
#                 tests/bench/KroxyliciousPeer.java (compiled here). Port-per-node gateway: node n on
#                 PORT+1+n (node ids 0–2; the bench's single broker is node 1).
#   kafka-proxy   grepplabs/kafka-proxy (Go). The Go module proxy here does not serve it, so there is
#                 no recipe for it in this repository: build it yourself (its v0.4.3 tag vendors its
#                 dependencies) and put the binary at .cache/peers/bin/kafka-proxy or name it in
#                 $KAFKA_PROXY_BIN. Run with one bootstrap-server mapping, listeners on 127.0.0.1,
#                 its HTTP endpoint off.
# Everything runs in the foreground (exec): stopping the process the bench started stops the peer.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="$repo/.cache/peers"
krox="$cache/kroxylicious"
KROX_VERSION=0.12.0
kp_bin="${KAFKA_PROXY_BIN:-$cache/bin/kafka-proxy}"

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

krox_ready() { [ -f "$krox/lib/kroxylicious-runtime-$KROX_VERSION.jar" ] && [ -f "$krox/classes/KroxyliciousPeer.class" ]; }

krox_setup() {
  krox_ready && return 0
  mkdir -p "$krox"
  cat > "$krox/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>syncgate.bench</groupId>
  <artifactId>kroxylicious-peer</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>io.kroxylicious</groupId><artifactId>kroxylicious-runtime</artifactId><version>$KROX_VERSION</version></dependency>
  </dependencies>
</project>
POM
  (cd "$krox" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib)
  mkdir -p "$krox/classes"
  javac -d "$krox/classes" -cp "$krox/lib/*" "$repo/tests/bench/KroxyliciousPeer.java"
}

print_cmds() {
  local any=0
  if krox_ready; then
    echo "--peer-cmd 'kroxylicious=tests/bench/peers.sh run kroxylicious {broker} {port}'"; any=1
  else
    echo "peers.sh: no Kroxylicious in $krox (run: tests/bench/peers.sh setup)" >&2
  fi
  if [ -x "$kp_bin" ]; then
    echo "--peer-cmd 'kafka-proxy=tests/bench/peers.sh run kafka-proxy {broker} {port}'"; any=1
  else
    echo "peers.sh: no kafka-proxy binary at $kp_bin (see the header of this script)" >&2
  fi
  [ $any = 1 ]
}

run_peer() {
  local name="$1" broker="$2" port="$3"
  case "$name" in
    kroxylicious)
      krox_ready || { echo "peers.sh: Kroxylicious not set up (tests/bench/peers.sh setup)" >&2; exit 1; }
      local cfg="${SG_RUN_DIR:-/tmp}/peer-kroxylicious-$port.yaml"
      cat > "$cfg" <<YAML
virtualClusters:
  - name: bench
    targetCluster:
      bootstrapServers: $broker
    gateways:
      - name: default
        portIdentifiesNode:
          bootstrapAddress: 127.0.0.1:$port
YAML
      exec java ${PEER_JAVA_OPTS:-} -cp "$krox/classes:$krox/lib/*" KroxyliciousPeer "$cfg" ;;
    kafka-proxy)
      [ -x "$kp_bin" ] || { echo "peers.sh: no kafka-proxy binary at $kp_bin" >&2; exit 1; }
      exec "$kp_bin" server --bootstrap-server-mapping "$broker,127.0.0.1:$port" \
        --default-listener-ip 127.0.0.1 --http-disable --log-level warn ;;
    *) echo "peers.sh: unknown peer '$name' (kroxylicious, kafka-proxy)" >&2; exit 2 ;;
  esac
}

case "${1:-}" in
  setup) krox_setup; print_cmds ;;
  print) print_cmds ;;
  run) [ $# -eq 4 ] || usage; run_peer "$2" "$3" "$4" ;;
  *) usage ;;
esac
