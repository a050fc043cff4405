#!/usr/bin/env bash
# tests/clients/install.sh — install and build the clients of the client
# matrix (tests/integration/test_client_matrix.py) from the package
# registries, into $SG_CLIENTS_CACHE (default <repo>/.cache/clients,
# git-ignored). Each part is rebuilt only when its inputs changed (a stamp of
# versions + sources), so a second run takes about a second.
#
#   go               franz-go and sarama programs, franz-go transactional (go/, Go module proxy)
#   node             KafkaJS (node/, npm registry)
#   kafka-python-2   venv with kafka-python $KAFKA_PYTHON_2 (PyPI)
#   kafka-python-3   venv with kafka-python $KAFKA_PYTHON_3 (PyPI)
#   confluent-kafka  venv with confluent-kafka $CONFLUENT_KAFKA (PyPI, bundles librdkafka)
#   java-2, java-3   kafka-clients $KAFKA_CLIENTS_2 / _3 (Maven Central) + java/LineProd.java
#
# Usage: tests/clients/install.sh [PART...]   (no PART: all). Needs go, npm,
# /usr/bin/python3 with venv, mvn and javac. Exits non-zero when a part failed
# (the others are still installed); prints each part's directory.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=versions.env
. "$here/versions.env"
cache="${SG_CLIENTS_CACHE:-$repo/.cache/clients}"
mkdir -p "$cache"

stamp_of() { # a digest of the given strings and files under $here
  local s=""; for x in "$@"; do
    if [ -f "$here/$x" ]; then s+="$(sha256sum < "$here/$x")"; else s+="$x;"; fi
  done; printf '%s' "$s" | sha256sum | cut -c1-16
}
fresh() { [ -f "$1/.stamp" ] && [ "$(cat "$1/.stamp")" = "$2" ]; }
done_part() { echo "$2" > "$1/.stamp"; echo "$1"; }
need() { command -v "$1" >/dev/null || { echo "install.sh: '$1' not found on PATH ($2)" >&2; return 1; }; }

part_go() {
  local d="$cache/go" st
  need go "Go >= the go line of go/go.mod; the Go toolchain is not a Debian 12 package that new" || return 1
  st="$(stamp_of "$(go version)" go/go.mod go/go.sum go/proto/proto.go go/franzprod/main.go go/saramaprod/main.go \
    go/franztxn/main.go)"
  fresh "$d" "$st" && { echo "$d"; return; }
  mkdir -p "$d" && (cd "$here/go" && GOFLAGS=-mod=readonly go build -trimpath -o "$d/" ./franzprod ./saramaprod ./franztxn) \
    && done_part "$d" "$st"
}

part_node() {
  local d="$cache/node" st
  need npm "Node.js >= 14 with npm; Debian: apt-get install nodejs npm" || return 1
  st="$(stamp_of "$(node --version)" node/package.json node/package-lock.json)"
  fresh "$d" "$st" && { echo "$d"; return; }
  rm -rf "$d" && mkdir -p "$d" && cp "$here/node/package.json" "$here/node/package-lock.json" "$d/" \
    && (cd "$d" && npm ci --omit=dev --no-audit --no-fund --loglevel=error >&2) && done_part "$d" "$st"
}

part_venv() { # NAME PIP-SPEC
  local d="$cache/$1" st
  st="$(stamp_of "$2" "$(/usr/bin/python3 --version)")"
  fresh "$d" "$st" && { echo "$d"; return; }
  rm -rf "$d" && /usr/bin/python3 -m venv "$d" \
    && "$d/bin/pip" install -q --disable-pip-version-check "$2" >&2 && done_part "$d" "$st"
}

part_java() { # NAME VERSION
  local d="$cache/$1" st
  need mvn "deploy/install-deps.sh installs maven" && need javac "a JDK (javac)" || return 1
  st="$(stamp_of "$2" java/pom.xml java/LineProd.java "$(javac -version 2>&1)")"
  fresh "$d" "$st" && { echo "$d"; return; }
  rm -rf "$d" && mkdir -p "$d/classes" \
    && mvn -q -B -Dstyle.color=never ${MVN_ARGS:-} -f "$here/java/pom.xml" -Dclients.version="$2" \
         dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$d/libs" >&2 \
    && javac -nowarn -d "$d/classes" -cp "$d/libs/*" "$here/java/LineProd.java" \
    && done_part "$d" "$st"
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(go node kafka-python-2 kafka-python-3 confluent-kafka java-2 java-3)
rc=0
for p in "${parts[@]}"; do
  t0=$SECONDS
  case "$p" in
    go) part_go ;;
    node) part_node ;;
    kafka-python-2) part_venv "$p" "kafka-python==$KAFKA_PYTHON_2" ;;
    kafka-python-3) part_venv "$p" "kafka-python==$KAFKA_PYTHON_3" ;;
    confluent-kafka) part_venv "$p" "confluent-kafka==$CONFLUENT_KAFKA" ;;
    java-2) part_java "$p" "$KAFKA_CLIENTS_2" ;;
    java-3) part_java "$p" "$KAFKA_CLIENTS_3" ;;
    *) echo "install.sh: unknown part '$p'" >&2; false ;;
  esac || { echo "install.sh: FAILED: $p" >&2; rc=1; }
  [ $((SECONDS - t0)) -lt 2 ] || echo "install.sh: $p took $((SECONDS - t0))s" >&2
done
exit $rc
