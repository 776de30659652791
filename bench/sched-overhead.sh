#!/bin/sh
# sched-overhead.sh - what watching the scheduler costs a context-switch-heavy
# program (bench/switchwork: a ping-pong over pipes, which prints its own
# elapsed time): plain, under `sonde collect sched` (eBPF; and with
# --no-syscalls, the events perf sched record records), under `perf sched
# record` and under BCC's runqlat, interleaved. Prints each slowdown and
# sonde's against the peers'. Needs root.
# Usage: bench/sched-overhead.sh [BUILD] [ROUNDS] [ROUND-TRIPS]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-5}
N=${3:-200000}
SONDE=$BUILD/src/sonde
WORK=$BUILD/bench/switchwork
TMP=$(mktemp -d)
trap 'kill $bcc 2>/dev/null; rm -rf "$TMP"' EXIT
bcc=""
command -v perf >/dev/null || { echo "sched-overhead: perf is missing (scripts/install-deps)"; exit 3; }
[ "$(id -u)" = 0 ] || { echo "sched-overhead: needs root (eBPF, perf sched record)"; exit 3; }
. "$(dirname "$0")/lib.sh"

# one NAME COMMAND...: the workload's own elapsed ns under COMMAND
one() {
	name=$1
	shift
	"$@" >"$TMP/out" 2>/dev/null || true
	grep -E '^[0-9]+$' "$TMP/out" | tail -1 >>"$TMP/$name.t"
}

# BCC's runqlat traces the whole machine while it runs: started once it has
# compiled its program, stopped after the workload
bcc_run() {
	runqlat-bpfcc >"$TMP/bcc.out" 2>&1 &
	bcc=$!
	i=0
	while ! grep -q Tracing "$TMP/bcc.out" 2>/dev/null; do
		if ! kill -0 "$bcc" 2>/dev/null || [ $i -gt 300 ]; then
			bcc=""
			return 1
		fi
		sleep 0.1
		i=$((i + 1))
	done
	"$WORK" "$N" >>"$TMP/bcc.t"
	kill -INT "$bcc"
	wait "$bcc" || true
	bcc=""
}
have_bcc=no
if command -v runqlat-bpfcc >/dev/null 2>&1 && bcc_run; then
	have_bcc=yes
	: >"$TMP/bcc.t"
else
	why=$(grep -m1 -i -e 'kernel headers' -e error "$TMP/bcc.out" 2>/dev/null | cut -c1-100 || true)
	[ -n "$why" ] || why="bpfcc-tools is not installed"
fi

r=0
while [ $r -lt "$ROUNDS" ]; do
	one bare "$WORK" "$N"
	one sonde "$SONDE" collect sched -q -o "$TMP/s.json" -- "$WORK" "$N"
	one nosys "$SONDE" collect sched -q --no-syscalls -o "$TMP/s.json" -- "$WORK" "$N"
	one perf perf sched record -q -o "$TMP/perf.data" -- "$WORK" "$N"
	if [ $have_bcc = yes ]; then bcc_run; fi
	r=$((r + 1))
done
bare=$(median "$TMP/bare.t")
pct() { echo "100 * ($1 - $bare) / $bare" | bc -l; }
ms() { echo "$1 / 1000000" | bc -l; }
s=$(median "$TMP/sonde.t")
p=$(median "$TMP/perf.t")
printf 'workload: %s %s (%.1f ms plain), %s interleaved rounds (medians)\n' "$WORK" "$N" "$(ms "$bare")" "$ROUNDS"
printf '  sonde collect sched  %8.1f ms  (%+.1f %%)\n' "$(ms "$s")" "$(pct "$s")"
ns=$(median "$TMP/nosys.t")
printf '  ... --no-syscalls    %8.1f ms  (%+.1f %%)\n' "$(ms "$ns")" "$(pct "$ns")"
printf '  perf sched record    %8.1f ms  (%+.1f %%)\n' "$(ms "$p")" "$(pct "$p")"
printf '  sonde overhead / perf sched record overhead: %.3f (target <= 0.5); without system calls (perf records none): %.3f\n' \
	"$(echo "($s - $bare) / ($p - $bare)" | bc -l)" "$(echo "($ns - $bare) / ($p - $bare)" | bc -l)"
if [ $have_bcc = yes ]; then
	b=$(median "$TMP/bcc.t")
	printf '  BCC runqlat          %8.1f ms  (%+.1f %%)\n' "$(ms "$b")" "$(pct "$b")"
	printf '  sonde overhead / BCC runqlat overhead: %.3f (target <= 1)\n' \
		"$(echo "($s - $bare) / ($b - $bare)" | bc -l)"
else
	printf '  BCC runqlat: cannot run here (%s)\n' "$why"
fi
