#!/bin/sh
# sched-overhead.sh - what watching the scheduler costs a context-switch-heavy
# program (bench/switchwork: a ping-pong over pipes, which prints its own
# elapsed time): plain, under `sonde collect sched` (eBPF), under `sonde
# collect sched --syscalls` (system calls too), under `perf sched record` and
# under BCC's runqlat, interleaved. Needs root.
#
# The ping-pong runs twice over: pinned to one CPU, where the two processes
# switch straight into each other (every round trip is two switches and two
# wake-ups, nothing else), and free, where each wake-up crosses to the other
# CPU (in a VM most of a round trip is then the wake-up's interrupt between
# CPUs). Each prints the best (minimum) and the median of ROUNDS runs: a
# shared VM only ever adds time, so the minimum is the steadiest estimate of
# a cost; the ratios are of the slowdowns over plain.
# Usage: bench/sched-overhead.sh [BUILD] [ROUNDS] [ROUND-TRIPS]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-15}
N=${3:-50000}
SONDE=$BUILD/src/sonde
WORK=$BUILD/bench/switchwork
TMP=$(mktemp -d)
trap 'kill $bcc 2>/dev/null; rm -rf "$TMP"' EXIT
bcc=""
command -v perf >/dev/null || { echo "sched-overhead: perf is missing (scripts/install-deps)"; exit 3; }
[ "$(id -u)" = 0 ] || { echo "sched-overhead: needs root (eBPF, perf sched record)"; exit 3; }
. "$(dirname "$0")/lib.sh"
smallest() { sort -n "$1" | head -1; }

# one NAME COMMAND...: the workload's own elapsed ns under COMMAND
one() {
	name=$1
	shift
	"$@" >"$TMP/out" 2>/dev/null || true
	grep -E '^[0-9]+$' "$TMP/out" | tail -1 >>"$TMP/$name.t"
}

# BCC's runqlat traces the whole machine while it runs: started once it has
# loaded its program, stopped after the workload. Its libbpf-tools build (CO-RE,
# needs only BTF) where installed, else its Python tool (needs kernel headers).
RUNQLAT=$(dpkg -L libbpf-tools 2>/dev/null | grep -m1 '/sbin/runqlat$' || command -v runqlat-bpfcc || true)
bcc_run() { # NAME [PIN...]
	name=$1
	shift
	stdbuf -oL "$RUNQLAT" >"$TMP/bcc.out" 2>&1 &
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
	"$@" "$WORK" "$N" >>"$TMP/$name.t"
	kill -INT "$bcc"
	wait "$bcc" || true
	bcc=""
}
have_bcc=no
if [ -n "$RUNQLAT" ] && bcc_run probe; then
	have_bcc=yes
else
	why=$(grep -m1 -i -e 'kernel headers' -e error "$TMP/bcc.out" 2>/dev/null | cut -c1-100 || true)
	[ -n "$why" ] || why="${RUNQLAT:-neither libbpf-tools nor bpfcc-tools is installed}: it did not start"
fi

# round PLACE [PIN...]: one run of each, the workload under PIN
round() {
	p=$1
	shift
	one "$p.bare" "$@" "$WORK" "$N"
	one "$p.sonde" "$SONDE" collect sched -q -o "$TMP/s.json" -- "$@" "$WORK" "$N"
	one "$p.sys" "$SONDE" collect sched -q --syscalls -o "$TMP/s.json" -- "$@" "$WORK" "$N"
	one "$p.perf" perf sched record -q -o "$TMP/perf.data" -- "$@" "$WORK" "$N"
	if [ $have_bcc = yes ]; then bcc_run "$p.bcc" "$@"; fi
}

cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
r=0
while [ $r -lt "$ROUNDS" ]; do
	round pinned taskset -c "$cpu"
	round free
	r=$((r + 1))
done

ms() { echo "$1 / 1000000" | bc -l; }
# report PLACE TITLE
report() {
	p=$1
	bmin=$(smallest "$TMP/$p.bare.t")
	bmed=$(median "$TMP/$p.bare.t")
	printf '%s: %s %s round trips, %s interleaved rounds; plain: best %.1f ms, median %.1f ms\n' \
		"$2" "$WORK" "$N" "$ROUNDS" "$(ms "$bmin")" "$(ms "$bmed")"
	for v in sonde sys perf bcc; do
		[ -s "$TMP/$p.$v.t" ] || continue
		mn=$(smallest "$TMP/$p.$v.t")
		md=$(median "$TMP/$p.$v.t")
		eval "${v}_min=$mn ${v}_med=$md"
		case $v in
		sonde) label="sonde collect sched" ;;
		sys) label="  ... --syscalls" ;;
		perf) label="perf sched record" ;;
		bcc) label="BCC runqlat" ;;
		esac
		printf '  %-22s best %8.1f ms (%+6.1f %%)   median %8.1f ms (%+6.1f %%)\n' "$label" \
			"$(ms "$mn")" "$(echo "100 * ($mn - $bmin) / $bmin" | bc -l)" \
			"$(ms "$md")" "$(echo "100 * ($md - $bmed) / $bmed" | bc -l)"
	done
	# ratio A B: A's slowdown over B's, best and median
	ratio() {
		eval "a=\$${1}_min b=\$${2}_min c=\$${1}_med d=\$${2}_med"
		printf '%.3f (median %.3f)' "$(echo "($a - $bmin) / ($b - $bmin)" | bc -l)" \
			"$(echo "($c - $bmed) / ($d - $bmed)" | bc -l)"
	}
	printf '  sonde / perf sched record overhead: %s, target <= 0.5\n' "$(ratio sonde perf)"
	printf '  with --syscalls (perf records none): %s\n' "$(ratio sys perf)"
	if [ $have_bcc = yes ]; then
		printf '  sonde / BCC runqlat overhead: %s, target <= 1\n' "$(ratio sonde bcc)"
	fi
}
report pinned "pinned to CPU $cpu"
report free "free on $(nproc) CPUs"
[ $have_bcc = yes ] || printf 'BCC runqlat: cannot run here (%s)\n' "$why"
