#!/bin/sh
# Build the codec fuzz targets with clang into build-fuzz/ and run each one
# for SECONDS (default 10) over a copy of the seed corpus, SG_FUZZ_JOBS
# (default: the number of cores) at a time; an input running
# over 5 s counts as a hang. Crashes and hangs are left as
# build-fuzz/{crash,timeout}-* files: once fixed, add them to
# tests/fuzz/corpus/<target>/ as regression inputs.
#   tests/fuzz/run.sh [SECONDS]
#   tests/fuzz/run.sh --build-only     build the targets, run none
set -eu
secs=${1:-10}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-fuzz
if [ ! -d "$build" ]; then
	CC=clang meson setup "$build" "$root" -Dfuzz=true -Db_lundef=false >/dev/null
fi
targets=$(cd "$root/tests/fuzz" && ls fuzz_*.c | sed 's/\.c$//')
# regenerate a build dir made before a target was added (meson compile looks
# the target names up before it would regenerate)
ninja -C "$build" build.ninja >/dev/null
meson compile -C "$build" $targets >/dev/null
[ "$secs" != --build-only ] || exit 0
# one target: its result line (and, failed, the report and the inputs) on stdout
run_one() {
	t=$1
	name=${t#fuzz_}
	work=$build/fuzz-corpus/$name
	mkdir -p "$work"
	cp "$root/tests/fuzz/corpus/$name/"* "$work/" 2>/dev/null || true
	if (cd "$build" && "./tests/fuzz/$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=5 \
		-print_final_stats=1 "$work" >"$build/$t.log" 2>&1); then
		echo "$t: ok, $(grep -m1 'stat::number_of_executed_units' "$build/$t.log" | awk '{print $2}') runs"
	else
		echo "$t: FAILED, see $build/$t.log"
		grep -m2 -E '^(==[0-9]+==ERROR|SUMMARY|ERROR)' "$build/$t.log" || tail -n 3 "$build/$t.log"
		# the input itself, so a report that keeps only the output can be replayed
		for f in $(grep -o -E "(crash|timeout|oom|leak)-[0-9a-f]+" "$build/$t.log" | sort -u); do
			[ -f "$build/$f" ] && echo "$f base64: $(head -c 4096 "$build/$f" | base64 -w0)"
		done
		return 1
	fi
}
# SG_FUZZ_JOBS targets at a time (default: one per core), each for $secs
jobs=${SG_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
status=0
set -- $targets
while [ $# -gt 0 ]; do
	pids="" outs=""
	i=0
	while [ $i -lt "$jobs" ] && [ $# -gt 0 ]; do
		out=$build/$1.result
		run_one "$1" >"$out" &
		pids="$pids $!" outs="$outs $out"
		i=$((i + 1))
		shift
	done
	for p in $pids; do
		wait "$p" || status=1
	done
	for o in $outs; do
		cat "$o"
		rm -f "$o"
	done
done
exit $status
