#!/bin/sh
# trace-overhead.sh - `sonde collect trace` against `uftrace record` on one
# call-heavy workload (bench/callwork.c built with -finstrument-functions:
# ITER x 16 calls), plain and under both tools, interleaved, ROUNDS rounds;
# medians.
#
# Reports per tool the overhead per call ((T_tool - T_plain) / calls) and the
# bytes it recorded per call. For sonde the run (what the target feels, from
# the profile) is split from the analysis after it; uftrace's record step
# writes its data and stops, its analysis (uftrace report) is timed apart.
# ITERS is a list: the trend at each size, not one point (default: three sizes).
# Each size runs two workloads of the same number of calls: walks 8 calls deep,
# and deep recursion (walks DEEP calls deep, 1000 by default: uftrace records
# 1024 levels).
# Usage: bench/trace-overhead.sh [BUILD] ["ITER ..."] [ROUNDS] [DEEP]
set -eu
BUILD=${1:-build}
ITERS=${2:-125000 500000 2000000}
ROUNDS=${3:-5}
DEEP=${4:-1000}
SONDE=$BUILD/src/sonde
WORK=$BUILD/bench/callwork
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

command -v uftrace >/dev/null || { echo "trace-overhead: uftrace is missing (scripts/install-deps)"; exit 3; }
command -v jq >/dev/null || { echo "trace-overhead: jq is missing (scripts/install-deps)"; exit 3; }
. "$(dirname "$0")/lib.sh"

# measure ITER DEPTH: one size, ROUNDS interleaved rounds, its report
measure() {
	ITER=$1
	DEPTH=$2
	CALLS=$("$WORK" "$ITER" "$DEPTH")
	: >"$TMP/plain"; : >"$TMP/sonde"; : >"$TMP/sonde_run"; : >"$TMP/uft"; : >"$TMP/report"
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		wall "$WORK" "$ITER" "$DEPTH" >>"$TMP/plain"
		collect_round "$TMP/sonde" "$TMP/sonde_run" trace "$WORK" "$ITER" "$DEPTH"
		rm -rf "$TMP/uftrace.data"
		wall uftrace record -d "$TMP/uftrace.data" "$WORK" "$ITER" "$DEPTH" >>"$TMP/uft"
		wall uftrace report -d "$TMP/uftrace.data" >>"$TMP/report"
		r=$((r + 1))
	done
	plain=$(median "$TMP/plain")
	sonde=$(median "$TMP/sonde")
	srun=$(median "$TMP/sonde_run")
	uft=$(median "$TMP/uft")
	rep=$(median "$TMP/report")
	sbytes=$(jq '.stats.trace.log_bytes' "$TMP/p.json")
	srec=$(jq '.stats.trace.calls' "$TMP/p.json")
	scost=$(jq '.stats.trace.cost_ns_per_call // 0' "$TMP/p.json")
	ubytes=$(du -sb "$TMP/uftrace.data" | cut -f1)
	awk -v p="$plain" -v s="$sonde" -v sr="$srun" -v u="$uft" -v ur="$rep" -v c="$CALLS" \
		-v sb="$sbytes" -v sc="$srec" -v ub="$ubytes" -v r="$ROUNDS" -v k="$scost" -v d="$DEPTH" 'BEGIN {
		printf "callwork, %d calls deep: %d calls (sonde recorded %d), %d rounds, medians\n", d + 1, c, sc, r
		printf "  plain                  %8.1f ms\n", p / 1e6
		printf "  sonde collect trace    %8.1f ms  %6.1f ns/call  %5.1f bytes/call\n",
			s / 1e6, (s - p) / c, sb / sc
		printf "    of which the run     %8.1f ms  %6.1f ns/call (what the target feels; calibrated %.1f)\n",
			sr / 1e6, (sr - p) / c, k
		printf "  uftrace record         %8.1f ms  %6.1f ns/call  %5.1f bytes/call\n",
			u / 1e6, (u - p) / c, ub / c
		printf "  uftrace report         %8.1f ms\n", ur / 1e6
		ratio = (sr - p) / (u - p)
		printf "  overhead per call, sonde run / uftrace record: %.2f (target <= 0.33: %s)\n",
			ratio, ratio <= 0.34 ? "met" : "NOT met"
		printf "  end to end, sonde collect / uftrace record: %.2f, / record + report: %.2f\n",
			(s - p) / (u - p), (s - p) / (u + ur - p)
		printf "  bytes per call: sonde %.1f (target <= 16: %s), uftrace %.1f\n", sb / sc,
			sb / sc <= 16 ? "met" : "NOT met", ub / c
	}'
}

for ITER in $ITERS; do
	measure "$ITER" 7
	# the same number of calls, DEEP deep
	measure "$((ITER * 8 / DEEP))" "$((DEEP - 1))"
done
