#!/bin/sh
# trace-pg-overhead.sh - `sonde collect trace` against `uftrace record` on a
# -pg build (bench/callwork.c, -O2 -pg: every call enters mcount and returns
# through the tool's return point), plain and under both tools, interleaved,
# ROUNDS rounds; medians. Reports the overhead per call ((T_tool - T_plain) /
# calls) of each, sonde's run alone (what the target feels) and whole, and
# their ratio.
# Usage: bench/trace-pg-overhead.sh [BUILD] [ITER] [ROUNDS]
set -eu
BUILD=${1:-build}
ITER=${2:-1000000}
ROUNDS=${3:-5}
SONDE=$BUILD/src/sonde
WORK=$(cd "$BUILD/bench" && pwd)/callwork-pg
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

command -v uftrace >/dev/null || { echo "trace-pg-overhead: uftrace is missing (scripts/install-deps)"; exit 3; }
command -v jq >/dev/null || { echo "trace-pg-overhead: jq is missing (scripts/install-deps)"; exit 3; }
. "$(dirname "$0")/lib.sh"

CALLS=$(cd "$TMP" && "$WORK" "$ITER")
: >"$TMP/plain"; : >"$TMP/sonde"; : >"$TMP/sonde_run"; : >"$TMP/uft"
r=0
while [ $r -lt "$ROUNDS" ]; do
	# (in $TMP: run plain, a -pg program writes gmon.out where it runs)
	(cd "$TMP" && wall "$WORK" "$ITER") >>"$TMP/plain"
	collect_round "$TMP/sonde" "$TMP/sonde_run" trace "$WORK" "$ITER"
	rm -rf "$TMP/uftrace.data"
	wall uftrace record --no-libcall -d "$TMP/uftrace.data" "$WORK" "$ITER" >>"$TMP/uft"
	r=$((r + 1))
done
plain=$(median "$TMP/plain")
sonde=$(median "$TMP/sonde")
srun=$(median "$TMP/sonde_run")
uft=$(median "$TMP/uft")
srec=$(jq '.stats.trace.calls' "$TMP/p.json")
# gcc -O2 turns walk's recursion into a loop: the calls made are those recorded
# (uftrace's report agrees), not the logical count callwork prints
awk -v p="$plain" -v s="$sonde" -v sr="$srun" -v u="$uft" -v c="$srec" -v lc="$CALLS" \
	-v r="$ROUNDS" 'BEGIN {
	printf "callwork -pg: %d calls made (%d in the source: -O2 loops the recursion), %d rounds, medians\n", c, lc, r
	printf "  plain                  %8.1f ms\n", p / 1e6
	printf "  sonde collect trace    %8.1f ms  %6.1f ns/call\n", s / 1e6, (s - p) / c
	printf "    of which the run     %8.1f ms  %6.1f ns/call (what the target feels)\n",
		sr / 1e6, (sr - p) / c
	printf "  uftrace record         %8.1f ms  %6.1f ns/call\n", u / 1e6, (u - p) / c
	printf "  overhead per call, sonde run / uftrace record: %.2f; whole: %.2f\n",
		(sr - p) / (u - p), (s - p) / (u - p)
}'
