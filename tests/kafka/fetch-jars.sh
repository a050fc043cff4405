#!/usr/bin/env bash
# fetch-jars.sh — download the Apache Kafka jars the test bed runs.
#
# Copies every runtime jar named by tests/kafka/pom.xml (kafka_2.13, kafka-tools,
# connect-mirror, ... at the pinned version) from Maven Central into
#   <repo>/.cache/kafka-<version>/libs        (git-ignored)
# and Kafka Streams (kafka-streams, rocksdbjni: the jars libs/ lacks) into
#   <repo>/.cache/kafka-<version>/streams     (a class path of its own:
#                                              java -cp 'libs/*:streams/*')
# Idempotent: does nothing for a folder already complete (marker file); a
# libs/ fetched before Streams was added is kept and only streams/ fetched.
# Prints the libs directory on stdout as its last line.
#
# Env: SG_KAFKA_VERSION   another Kafka version than the pinned one (e.g. the
#                          newest broker, tests/integration/test_proxy.py)
#      SG_KAFKA_BROKER_ONLY=1   the broker and its tools only, no MirrorMaker 2
#                               and no Kafka Streams
#      SG_KAFKA_STREAMS   override the Streams folder
#      SG_KAFKA_NO_STREAMS=1    skip Kafka Streams (the sandbox does not need it)
#      SG_KAFKA_LIBS   override the target folder
#      MAVEN_OPTS / MVN_ARGS   passed to mvn (e.g. a mirror settings file)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
version="${SG_KAFKA_VERSION:-$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")}"
libs="${SG_KAFKA_LIBS:-$repo/.cache/kafka-$version/libs}"

streams="${SG_KAFKA_STREAMS:-$(dirname "$libs")/streams}"
only=(); [ "${SG_KAFKA_BROKER_ONLY:-}" = 1 ] && only=(-Dsg.brokerOnly=true)

# mvn_copy DIR ARGS...: every runtime jar of the pom (with ARGS) into DIR.
# Debian's Maven 3.8 writes ANSI resets (ESC[0m) even in batch mode with
# colours off: its output goes through a filter that drops escape sequences.
mvn_copy() {
  local dir="$1"; shift
  # shellcheck disable=SC2086
  mvn -q -B --no-transfer-progress -Dstyle.color=never ${MVN_ARGS:-} -f "$here/pom.xml" \
      -Dkafka.version="$version" "$@" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir" 2>&1 | sed $'s/\e\\[[0-9;]*[A-Za-z]//g' >&2
}

need_mvn() { command -v mvn >/dev/null || { echo "fetch-jars: mvn not found (run deploy/install-deps.sh)" >&2; exit 1; }; }

tmp=""
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT
if [ -f "$libs/.complete" ]; then
  echo "fetch-jars: Kafka $version jars already in $libs" >&2
else
  need_mvn
  echo "fetch-jars: downloading Kafka $version jars into $libs ..." >&2
  tmp="$libs.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  mvn_copy "$tmp" "${only[@]}"
  n=$(ls "$tmp"/*.jar | wc -l)
  ls "$tmp"/kafka_2.13-"$version".jar >/dev/null
  [ ${#only[@]} -gt 0 ] || ls "$tmp"/connect-mirror-"$version".jar >/dev/null
  # Kafka 3.x logs through log4j 1 (slf4j-reload4j, configured by
  # log4j.properties); the pom's log4j2 binding beside it would make slf4j
  # pick one of two at random: it goes.
  if ls "$tmp"/slf4j-reload4j-*.jar >/dev/null 2>&1; then rm -f "$tmp"/log4j-slf4j-impl-*.jar; fi
  rm -rf "$libs"; mv "$tmp" "$libs"; tmp=""
  touch "$libs/.complete"
  echo "fetch-jars: $n jars ready" >&2
fi

# Kafka Streams: only what libs/ lacks (same file name = same jar), so the
# two folders together are one class path without duplicates.
if [ ${#only[@]} -eq 0 ] && [ "${SG_KAFKA_NO_STREAMS:-}" != 1 ] && [ ! -f "$streams/.complete" ]; then
  need_mvn
  echo "fetch-jars: downloading Kafka Streams $version into $streams ..." >&2
  tmp="$streams.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  mvn_copy "$tmp" -Dsg.brokerOnly=true -Dsg.streams=true
  ls "$tmp"/kafka-streams-"$version".jar >/dev/null
  for j in "$tmp"/*.jar; do [ ! -f "$libs/$(basename "$j")" ] || rm -f "$j"; done
  n=$(ls "$tmp"/*.jar | wc -l)
  rm -rf "$streams"; mv "$tmp" "$streams"; tmp=""
  touch "$streams/.complete"
  echo "fetch-jars: Kafka Streams ready ($n jars beyond libs/)" >&2
fi
echo "$libs"
