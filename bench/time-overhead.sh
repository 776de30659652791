#!/bin/sh
# time-overhead.sh - per-run overhead of `sonde collect time` against hyperfine -N
# and a bare posix_spawn/wait4 loop, on an empty program, interleaved.
#
# Each round runs the three tools back to back (N and 2N runs each); it reports
# the median over ROUNDS rounds of the wall time per run, and each tool's
# overhead over the bare loop. Usage: bench/time-overhead.sh [BUILD] [N] [ROUNDS]
set -eu
BUILD=${1:-build}
N=${2:-1000}
ROUNDS=${3:-7}
SONDE=$BUILD/src/sonde
EMPTY=$BUILD/bench/empty
LOOP=$BUILD/bench/spawnloop
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

command -v hyperfine >/dev/null || { echo "time-overhead: hyperfine is missing (scripts/install-deps)"; exit 3; }
. "$(dirname "$0")/lib.sh"

: >"$TMP/loop"; : >"$TMP/sonde"; : >"$TMP/hyper"
# Per-run cost without start-up and profile writing: (T(2N) - T(N)) / N.
per_run() {
	a=$(wall "$@" "$N")
	b=$(wall "$@" "$((2 * N))")
	echo $(((b - a) / N))
}
sonde_n() { "$SONDE" collect time -q -r "$1" -o "$TMP/p.json" -- "$EMPTY"; }
hyper_n() { hyperfine -N -r "$1" --style none "$EMPTY"; }
r=0
while [ $r -lt "$ROUNDS" ]; do
	"$LOOP" "$N" "$EMPTY" >>"$TMP/loop"
	per_run sonde_n >>"$TMP/sonde"
	per_run hyper_n >>"$TMP/hyper"
	r=$((r + 1))
done
loop=$(median "$TMP/loop")
sonde=$(median "$TMP/sonde")
hyper=$(median "$TMP/hyper")
printf 'empty static program, %s and %s runs per tool per round, %s rounds\n' "$N" "$((2 * N))" "$ROUNDS"
printf '(medians of the per-run wall time, (T(2N) - T(N)) / N, so start-up is excluded)\n'
printf '  bare posix_spawn loop  %8.0f ns\n' "$loop"
printf '  sonde collect time     %8.0f ns  overhead %+7.0f ns/run\n' "$sonde" "$((sonde - loop))"
printf '  hyperfine -N           %8.0f ns  overhead %+7.0f ns/run\n' "$hyper" "$((hyper - loop))"
awk -v s="$sonde" -v h="$hyper" -v l="$loop" 'BEGIN {
	so = s - l; ho = h - l
	printf "  ratio of overheads (sonde / hyperfine): %.2f\n", (ho != 0) ? so / ho : 0
	printf "  target: sonde overhead <= 10000 ns/run: %s\n", (so <= 10000) ? "met" : "NOT met" }'
