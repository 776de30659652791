#!/bin/sh
# sample-overhead.sh - `sonde collect sample` against `perf record` at the same
# rate and call-graph mode, interleaved on the same workload (bench/samplework,
# which prints its own elapsed time): the target's slowdown under each, and the
# time from the target's exit to the report (sonde: the rest of its run, which
# ends with the report; perf: the rest of perf record's run plus perf report).
# Usage: bench/sample-overhead.sh [BUILD] [ROUNDS]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-5}
SONDE=$BUILD/src/sonde
WORK=$BUILD/bench/samplework
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
command -v perf >/dev/null || { echo "sample-overhead: perf is missing (scripts/install-deps)"; exit 3; }
. "$(dirname "$0")/lib.sh"

# one NAME: the target's elapsed ns to NAME.t, the time after it to NAME.post
one() {
	name=$1
	shift
	t0=$(now)
	"$@" >"$TMP/out" 2>/dev/null
	t1=$(now)
	e=$(grep -E '^[0-9]+$' "$TMP/out" | tail -1)
	echo "$e" >>"$TMP/$name.t"
	echo $((t1 - t0 - e)) >>"$TMP/$name.post"
}

CONFIGS="999:fp 99:fp 999:dwarf"
for c in $CONFIGS; do
	: >"$TMP/bare.t"
done
r=0
while [ $r -lt "$ROUNDS" ]; do
	"$WORK" >>"$TMP/bare.t"
	for c in $CONFIGS; do
		hz=${c%%:*} g=${c##*:}
		one "sonde-$hz-$g" "$SONDE" collect sample -F "$hz" -g "$g" -o "$TMP/p.json" -- "$WORK"
		if [ "$g" = fp ]; then pg="-g"; else pg="--call-graph=dwarf"; fi
		one "perf-$hz-$g" perf record -q -F "$hz" $pg -o "$TMP/perf.data" -- "$WORK"
		wall perf report -i "$TMP/perf.data" --stdio >>"$TMP/perf-$hz-$g.report"
	done
	r=$((r + 1))
done
bare=$(median "$TMP/bare.t")
ms() { echo "$1 / 1000000" | bc -l; }
printf 'workload: %s (%.1f ms bare), %s interleaved rounds (medians)\n' "$WORK" "$(ms "$bare")" "$ROUNDS"
for c in $CONFIGS; do
	hz=${c%%:*} g=${c##*:}
	st=$(median "$TMP/sonde-$hz-$g.t"); pt=$(median "$TMP/perf-$hz-$g.t")
	sp=$(median "$TMP/sonde-$hz-$g.post"); pp=$(median "$TMP/perf-$hz-$g.post")
	pr=$(median "$TMP/perf-$hz-$g.report")
	printf '%s Hz, call graph %s:\n' "$hz" "$g"
	printf '  target under sonde  %8.1f ms  (%+.2f %%)\n' "$(ms "$st")" "$(echo "100 * ($st - $bare) / $bare" | bc -l)"
	printf '  target under perf   %8.1f ms  (%+.2f %%)\n' "$(ms "$pt")" "$(echo "100 * ($pt - $bare) / $bare" | bc -l)"
	printf '  exit to report: sonde %.1f ms; perf %.1f ms (record %.1f + report %.1f); sonde / perf %.3f\n' \
		"$(ms "$sp")" "$(ms $((pp + pr)))" "$(ms "$pp")" "$(ms "$pr")" "$(echo "$sp / ($pp + $pr)" | bc -l)"
done
