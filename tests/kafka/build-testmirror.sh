#!/usr/bin/env bash
# build-testmirror.sh — compile tests/kafka/testmirror.c (single file, librdkafka)
# into tests/kafka/testmirror when missing or older than its source.
# Prints the binary's path. Env: CC (default cc), SG_TESTMIRROR_CFLAGS.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/testmirror.c" bin="$here/testmirror"
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
  echo "build-testmirror: compiling $bin" >&2
  # shellcheck disable=SC2046,SC2086
  ${CC:-cc} -std=c11 -O2 -g -Wall -Wextra -Werror ${SG_TESTMIRROR_CFLAGS:-} -o "$bin.tmp" "$src" \
    $(pkg-config --cflags --libs rdkafka)
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
