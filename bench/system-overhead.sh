#!/bin/sh
# system-overhead.sh - what `sonde collect system` costs: the sampler thread's
# own CPU time (stats.system.own_cpu_share, % of one CPU, measured with
# CLOCK_THREAD_CPUTIME_ID) at 100 Hz and 20 Hz, over a sleeping target and a
# busy one (bench/samplework, which prints its own elapsed time: its slowdown
# is the cost the target sees). No peer samples /proc this often (pidstat and
# sar stop at one second), so the figures stand against the 1 % target.
# Usage: bench/system-overhead.sh [BUILD] [ROUNDS]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-5}
SONDE=$BUILD/src/sonde
WORK=$BUILD/bench/samplework
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"

share() { jq .stats.system.own_cpu_share "$1"; }
r=0
while [ $r -lt "$ROUNDS" ]; do
	for i in 10 50; do
		"$SONDE" collect system -q -I "${i}ms" -o "$TMP/s.json" -- sleep 1
		share "$TMP/s.json" >>"$TMP/sleep-$i"
		"$SONDE" collect system -q -I "${i}ms" -o "$TMP/b.json" -- "$WORK" >"$TMP/out"
		share "$TMP/b.json" >>"$TMP/busy-$i"
		grep -E '^[0-9]+$' "$TMP/out" | tail -1 >>"$TMP/busy-$i.t"
	done
	"$WORK" | grep -E '^[0-9]+$' | tail -1 >>"$TMP/bare.t"
	r=$((r + 1))
done
bare=$(median "$TMP/bare.t")
printf '%s rounds (medians); sampler CPU as %% of one CPU\n' "$ROUNDS"
for i in 10 50; do
	t=$(median "$TMP/busy-$i.t")
	printf '  every %2s ms: sleeping target %.2f %%, busy target %.2f %% (its slowdown %+.2f %%)\n' \
		"$i" "$(median "$TMP/sleep-$i")" "$(median "$TMP/busy-$i")" \
		"$(echo "100 * ($t - $bare) / $bare" | bc -l)"
done
