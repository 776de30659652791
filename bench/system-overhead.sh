#!/bin/sh
# system-overhead.sh - what `sonde collect system` costs: the sampler thread's
# own CPU time (stats.system.own_cpu_share, % of one CPU, measured with
# CLOCK_THREAD_CPUTIME_ID) at 100 Hz (the machine at 100 Hz too, and at 10 Hz,
# the default) and 20 Hz, over a sleeping target and a
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
# 10m: the tree and the machine every 10 ms (--machine-interval 10ms); 10 and
# 50: the tree every 10 or 50 ms, the machine every 100 ms (the default)
opts() { case $1 in 10m) echo "-I 10ms --machine-interval 10ms" ;; *) echo "-I ${1}ms" ;; esac; }
r=0
while [ $r -lt "$ROUNDS" ]; do
	for i in 10m 10 50; do
		# shellcheck disable=SC2046
		"$SONDE" collect system -q $(opts $i) -o "$TMP/s.json" -- sleep 1
		share "$TMP/s.json" >>"$TMP/sleep-$i"
		# shellcheck disable=SC2046
		"$SONDE" collect system -q $(opts $i) -o "$TMP/b.json" -- "$WORK" >"$TMP/out"
		share "$TMP/b.json" >>"$TMP/busy-$i"
		grep -E '^[0-9]+$' "$TMP/out" | tail -1 >>"$TMP/busy-$i.t"
	done
	"$WORK" | grep -E '^[0-9]+$' | tail -1 >>"$TMP/bare.t"
	r=$((r + 1))
done
bare=$(median "$TMP/bare.t")
printf '%s rounds (medians); sampler CPU as %% of one CPU\n' "$ROUNDS"
for i in 10m 10 50; do
	t=$(median "$TMP/busy-$i.t")
	case $i in
	10m) what="tree and machine every 10 ms" ;;
	*) what="tree every $i ms, machine every 100" ;;
	esac
	printf '  %-36s sleeping target %.2f %%, busy target %.2f %% (its slowdown %+.2f %%)\n' \
		"$what:" "$(median "$TMP/sleep-$i")" "$(median "$TMP/busy-$i")" \
		"$(echo "100 * ($t - $bare) / $bare" | bc -l)"
done
