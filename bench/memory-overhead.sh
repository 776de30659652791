#!/bin/sh
# memory-overhead.sh - `sonde collect memory` against heaptrack on one
# allocation-heavy workload (bench/memwork.c: 2 threads, 3 million malloc/free
# of mixed sizes from call depths 4-19), plain and under both tools,
# interleaved, ROUNDS rounds; medians.
#
# Reports for each tool: the slowdown of the whole command, the overhead per
# event in ns ((T_tool - T_plain) / events), and the size of its output. For
# sonde the overhead is split into the part the target feels (the run, from
# the profile) and the analysis after it (symbols, replay, the profile);
# heaptrack's analysis is a separate step (heaptrack_print), timed as well, so
# that "the same answers" can be compared end to end.
# ITERS is a list: the trend at each size, not one point (default: three sizes).
# sonde runs twice a round: with its symbol cache (warm after the first round)
# and without one (every object's debug information read, as a first run does).
# Usage: bench/memory-overhead.sh [BUILD] ["ITER ..."] [ROUNDS]
set -eu
BUILD=${1:-build}
ITERS=${2:-187500 750000 3000000}
ROUNDS=${3:-5}
SONDE=$BUILD/src/sonde
WORK=$BUILD/bench/memwork
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

command -v heaptrack >/dev/null || { echo "memory-overhead: heaptrack is missing (scripts/install-deps)"; exit 3; }
command -v jq >/dev/null || { echo "memory-overhead: jq is missing (scripts/install-deps)"; exit 3; }
. "$(dirname "$0")/lib.sh"
# sonde's symbol cache (docs/cli.md): the bench's own, empty at its start, so the
# first round reads the debug information and later ones the cache; each round
# also runs sonde with no cache at all ("cold"), which is every first run
export SONDE_CACHE_DIR="$TMP/symcache"

# measure ITER: one size, ROUNDS interleaved rounds, its report
measure() {
	ITER=$1
	EVENTS=$((4 * ITER)) # 2 threads, ITER allocations each, every one freed
	: >"$TMP/plain"; : >"$TMP/sonde"; : >"$TMP/sonde_run"; : >"$TMP/heap"; : >"$TMP/print"
	: >"$TMP/cold"; : >"$TMP/cold_run"
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		wall "$WORK" "$ITER" >>"$TMP/plain"
		SONDE_CACHE_DIR=""
		collect_round "$TMP/cold" "$TMP/cold_run" memory "$WORK" "$ITER"
		SONDE_CACHE_DIR="$TMP/symcache"
		collect_round "$TMP/sonde" "$TMP/sonde_run" memory "$WORK" "$ITER"
		rm -f "$TMP"/ht.*
		wall heaptrack -o "$TMP/ht" "$WORK" "$ITER" >>"$TMP/heap"
		wall heaptrack_print "$TMP"/ht.* >>"$TMP/print"
		r=$((r + 1))
	done
	plain=$(median "$TMP/plain")
	sonde=$(median "$TMP/sonde")
	cold=$(median "$TMP/cold")
	srun=$(median "$TMP/sonde_run")
	heap=$(median "$TMP/heap")
	print=$(median "$TMP/print")
	ssize=$(stat -c %s "$TMP/p.json")
	hsize=$(stat -c %s "$TMP"/ht.*)
	check=$(jq '.stats.memory.allocations + .stats.memory.frees' "$TMP/p.json")
	awk -v p="$plain" -v s="$sonde" -v sr="$srun" -v h="$heap" -v e="$EVENTS" -v ss="$ssize" \
		-v hs="$hsize" -v r="$ROUNDS" -v c="$check" -v hp="$print" -v cs="$cold" 'BEGIN {
		printf "memwork: %d events (sonde recorded %d), %d rounds, medians\n", e, c, r
		printf "  plain                 %8.1f ms\n", p / 1e6
		printf "  sonde collect memory  %8.1f ms  slowdown %5.2fx  %6.1f ns/event  output %6.2f MB\n",
			s / 1e6, s / p, (s - p) / e, ss / 1e6
		printf "    of which the run    %8.1f ms  slowdown %5.2fx  %6.1f ns/event (what the target feels)\n",
			sr / 1e6, sr / p, (sr - p) / e
		printf "    no symbol cache     %8.1f ms  slowdown %5.2fx  %6.1f ns/event (a first run)\n",
			cs / 1e6, cs / p, (cs - p) / e
		printf "  heaptrack             %8.1f ms  slowdown %5.2fx  %6.1f ns/event  output %6.2f MB\n",
			h / 1e6, h / p, (h - p) / e, hs / 1e6
		printf "  heaptrack_print       %8.1f ms  (heaptrack + print: %6.1f ns/event)\n", hp / 1e6,
			(h + hp - p) / e
		ratio = (sr - p) / (h - p)
		printf "  recording overhead per event, sonde / heaptrack: %.2f (target <= 0.33: %s)\n",
			ratio, ratio <= 0.33 ? "met" : "NOT met"
		printf "  end to end, sonde collect / heaptrack alone: %.2f, / heaptrack + print: %.2f\n",
			(s - p) / (h - p), (s - p) / (h + hp - p)
		printf "  end to end without the symbol cache, sonde / heaptrack alone: %.2f\n",
			(cs - p) / (h - p)
		printf "  output: sonde / heaptrack %.2f (target <= 1: %s)\n", ss / hs, ss <= hs ? "met" : "NOT met"
	}'
}

for ITER in $ITERS; do
	measure "$ITER"
done
