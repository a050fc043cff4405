#!/usr/bin/env bash
# fetch-jars.sh — download the Apache Kafka jars the test bed runs.
#
# Copies every runtime jar named by tests/kafka/pom.xml (kafka_2.13, kafka-tools,
# connect-mirror, ... at the pinned version) from Maven Central into
#   <repo>/.cache/kafka-<version>/libs        (git-ignored)
# Idempotent: does nothing when that folder is already complete (marker file).
# Prints the libs directory on stdout as its last line.
#
# Env: SG_KAFKA_VERSION   another Kafka version than the pinned one (e.g. the
#                          newest broker, tests/integration/test_proxy.py)
#      SG_KAFKA_BROKER_ONLY=1   the broker and its tools only, no MirrorMaker 2
#      SG_KAFKA_LIBS   override the target folder
#      MAVEN_OPTS / MVN_ARGS   passed to mvn (e.g. a mirror settings file)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
version="${SG_KAFKA_VERSION:-$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")}"
libs="${SG_KAFKA_LIBS:-$repo/.cache/kafka-$version/libs}"

if [ -f "$libs/.complete" ]; then
  echo "fetch-jars: Kafka $version jars already in $libs" >&2
  echo "$libs"; exit 0
fi
command -v mvn >/dev/null || { echo "fetch-jars: mvn not found (run deploy/install-deps.sh)" >&2; exit 1; }

echo "fetch-jars: downloading Kafka $version jars into $libs ..." >&2
tmp="$libs.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
only=(); [ "${SG_KAFKA_BROKER_ONLY:-}" = 1 ] && only=(-Dsg.brokerOnly=true)
# Debian's Maven 3.8 writes ANSI resets (ESC[0m) even in batch mode with
# colours off: its output goes through a filter that drops escape sequences.
# shellcheck disable=SC2086
mvn -q -B --no-transfer-progress -Dstyle.color=never ${MVN_ARGS:-} -f "$here/pom.xml" \
    -Dkafka.version="$version" "${only[@]}" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp" 2>&1 | sed $'s/\e\\[[0-9;]*[A-Za-z]//g' >&2
n=$(ls "$tmp"/*.jar | wc -l)
ls "$tmp"/kafka_2.13-"$version".jar >/dev/null
[ ${#only[@]} -gt 0 ] || ls "$tmp"/connect-mirror-"$version".jar >/dev/null
rm -rf "$libs"; mv "$tmp" "$libs"; trap - EXIT
touch "$libs/.complete"
echo "fetch-jars: $n jars ready" >&2
echo "$libs"
