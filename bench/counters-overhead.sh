#!/bin/sh
# counters-overhead.sh - `sonde collect counters` against `perf stat` on the
# same events and workload, interleaved; then the cost of one region
# begin/end pair (bench/regionpair) beside the floor of its two read(2)s.
# Usage: bench/counters-overhead.sh [BUILD] [ROUNDS]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-7}
SONDE=$BUILD/src/sonde
EV=task-clock,context-switches,cpu-migrations,page-faults
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
command -v perf >/dev/null || { echo "counters-overhead: perf is missing (scripts/install-deps)"; exit 3; }
. "$(dirname "$0")/lib.sh"

# seconds between two tools' runs: the kernel's perf hooks go off once no event is open
COLD=${COLD:-1.5}
# the trend, not one point: three sizes of the same workload
SIZES=${SIZES:-100000 400000 1600000}
printf 'events %s, %s interleaved rounds (median wall of the whole command)\n' "$EV" "$ROUNDS"
for n in $SIZES; do
	WORK="$BUILD/examples/sort $n"
	: >"$TMP/bare"; : >"$TMP/sonde"; : >"$TMP/perf"
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		# shellcheck disable=SC2086
		wall $WORK >>"$TMP/bare"
		# Each tool starts with no perf event open on the machine, as a command
		# typed alone does: the kernel switches its perf hooks on at the first
		# perf_event_open (10-15 ms in this VM) and off again once the last
		# event closes (its scheduler hook a second later). Run back to back,
		# the second tool found them on: perf stat, after sonde, every round.
		sleep "$COLD"
		# shellcheck disable=SC2086
		wall "$SONDE" collect counters -q -e $EV -o "$TMP/p.json" -- $WORK >>"$TMP/sonde"
		sleep "$COLD"
		# shellcheck disable=SC2086
		wall perf stat -e $EV -- $WORK >>"$TMP/perf"
		r=$((r + 1))
	done
	bare=$(median "$TMP/bare"); sonde=$(median "$TMP/sonde"); perf=$(median "$TMP/perf")
	printf '  sort %-8s bare %8.2f ms   sonde %8.2f ms (+%.2f)   perf stat %8.2f ms (+%.2f)   sonde / perf stat %.3f\n' \
		"$n" "$(echo "$bare / 1000000" | bc -l)" "$(echo "$sonde / 1000000" | bc -l)" \
		"$(echo "($sonde - $bare) / 1000000" | bc -l)" "$(echo "$perf / 1000000" | bc -l)" \
		"$(echo "($perf - $bare) / 1000000" | bc -l)" "$(echo "$sonde / $perf" | bc -l)"
done
set -- $("$BUILD/bench/regionpair" 200000 task-clock)
printf 'region begin/end pair, task-clock:              %s ns (two bare read(2)s: %s ns)\n' "$1" "$2"
set -- $("$BUILD/bench/regionpair" 200000 task-clock,page-faults)
printf 'region begin/end pair, task-clock,page-faults:  %s ns (two bare read(2)s: %s ns)\n' "$1" "$2"
