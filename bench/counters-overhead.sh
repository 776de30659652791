#!/bin/sh
# counters-overhead.sh - `sonde collect counters` against `perf stat` on the
# same events and workload, interleaved; then the cost of one region
# begin/end pair (bench/regionpair) beside the floor of its two read(2)s.
# Usage: bench/counters-overhead.sh [BUILD] [ROUNDS]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-7}
SONDE=$BUILD/src/sonde
WORK="$BUILD/examples/sort 400000"
EV=task-clock,context-switches,cpu-migrations,page-faults
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
command -v perf >/dev/null || { echo "counters-overhead: perf is missing (scripts/install-deps)"; exit 3; }
. "$(dirname "$0")/lib.sh"

: >"$TMP/bare"; : >"$TMP/sonde"; : >"$TMP/perf"
r=0
while [ $r -lt "$ROUNDS" ]; do
	# shellcheck disable=SC2086
	wall $WORK >>"$TMP/bare"
	# shellcheck disable=SC2086
	wall "$SONDE" collect counters -q -e $EV -o "$TMP/p.json" -- $WORK >>"$TMP/sonde"
	# shellcheck disable=SC2086
	wall perf stat -e $EV -- $WORK >>"$TMP/perf"
	r=$((r + 1))
done
bare=$(median "$TMP/bare"); sonde=$(median "$TMP/sonde"); perf=$(median "$TMP/perf")
printf 'workload: %s, events %s, %s interleaved rounds (median wall)\n' "$WORK" "$EV" "$ROUNDS"
printf '  bare      %8.2f ms\n' "$(echo "$bare / 1000000" | bc -l)"
printf '  sonde     %8.2f ms  (+%.2f ms)\n' "$(echo "$sonde / 1000000" | bc -l)" "$(echo "($sonde - $bare) / 1000000" | bc -l)"
printf '  perf stat %8.2f ms  (+%.2f ms)\n' "$(echo "$perf / 1000000" | bc -l)" "$(echo "($perf - $bare) / 1000000" | bc -l)"
printf '  sonde / perf stat (whole command): %.3f\n' "$(echo "$sonde / $perf" | bc -l)"
set -- $("$BUILD/bench/regionpair" 200000 task-clock)
printf 'region begin/end pair, task-clock:              %s ns (two bare read(2)s: %s ns)\n' "$1" "$2"
set -- $("$BUILD/bench/regionpair" 200000 task-clock,page-faults)
printf 'region begin/end pair, task-clock,page-faults:  %s ns (two bare read(2)s: %s ns)\n' "$1" "$2"
