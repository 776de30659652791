#!/bin/sh
# trace-after-run.sh - what a traced daemon pays once the tracer is gone:
# bench/daemonwork (-finstrument-functions) forks, its parent exits, and the
# child times 20 M calls one second later, when `sonde collect trace` has
# ended (or `uftrace record`, where installed). Plain and under each tool,
# interleaved, ROUNDS rounds; medians of the child's own time, and the ratio
# to plain (1.0: the hooks cost nothing any more).
# Usage: bench/trace-after-run.sh [BUILD] [ROUNDS]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-5}
SONDE=$BUILD/src/sonde
WORK=$(cd "$BUILD/bench" && pwd)/daemonwork
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"

# child OUT: wait for the daemon's own time in OUT (it writes it when done)
child() {
	i=0
	while [ ! -s "$1" ] && [ $i -lt 600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	cut -d' ' -f1 "$1"
	rm -f "$1"
}
: >"$TMP/plain"; : >"$TMP/sonde"; : >"$TMP/uft"
r=0
while [ $r -lt "$ROUNDS" ]; do
	"$WORK" "$TMP/o" 1
	child "$TMP/o" >>"$TMP/plain"
	"$SONDE" collect trace -q -o "$TMP/p.json" -- "$WORK" "$TMP/o" 1 >/dev/null 2>&1
	child "$TMP/o" >>"$TMP/sonde"
	if command -v uftrace >/dev/null; then
		rm -rf "$TMP/uftrace.data"
		uftrace record -d "$TMP/uftrace.data" "$WORK" "$TMP/o" 1 >/dev/null 2>&1
		child "$TMP/o" >>"$TMP/uft"
	fi
	r=$((r + 1))
done
plain=$(median "$TMP/plain")
sonde=$(median "$TMP/sonde")
awk -v p="$plain" -v s="$sonde" 'BEGIN {
	printf "trace-after-run: 20 M calls of a daemon after the tracer ended: plain %.1f ms, after sonde %.1f ms (%.2fx plain)\n", p / 1e6, s / 1e6, s / p }'
if [ -s "$TMP/uft" ]; then
	uft=$(median "$TMP/uft")
	awk -v p="$plain" -v s="$sonde" -v u="$uft" 'BEGIN {
		printf "trace-after-run: after uftrace record %.1f ms (%.2fx plain); sonde/uftrace %.2f\n", u / 1e6, u / p, s / u }'
fi
