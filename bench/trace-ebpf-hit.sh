#!/bin/sh
# trace-ebpf-hit.sh - the ebpf engine's cost per probed call against bpftrace's,
# on the same uprobe + uretprobe of one function (bench/hitwork.c's hit()).
#
# For each of three builds of hitwork (hit() starting with push %rbp, with
# endbr64, or with an instruction the kernel single-steps), runs hitwork plain,
# under `sonde collect trace -e ebpf -s custom -F hit` and under bpftrace with
# an entry and a return probe on hit, each with N and 2N calls, interleaved,
# ROUNDS rounds. The cost per call is (T(2N) - T(N)) / N, which leaves out
# start-up (loading programs, attaching); for sonde T is the run as the profile
# times it (stats.duration_ns less sonde's own time), as writing N calls' rows
# and timeline slices grows with N and is no probe's cost; bpftrace's maps
# cost nothing to print. bpftrace runs two programs: two counters (the least a
# probe pair can do), and the least that answers what sonde's summary does,
# the calls and their time (each thread's entry time kept and taken from the
# return's, as BCC's funclatency does). Medians. Then each tool's BPF programs'
# own time per call (kernel.bpf_stats_enabled), steadier on a noisy machine.
# N is a list: the trend at each size, not one point (default: three sizes).
# Needs root. Usage: bench/trace-ebpf-hit.sh [BUILD] ["N ..."] [ROUNDS]
set -eu
BUILD=${1:-build}
NS=${2:-100000 400000 1600000}
ROUNDS=${3:-5}
SONDE=$BUILD/src/sonde
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

[ "$(id -u)" = 0 ] || { echo "trace-ebpf-hit: needs root (uprobes)"; exit 3; }
command -v bpftrace >/dev/null || { echo "trace-ebpf-hit: bpftrace is missing (scripts/install-deps)"; exit 3; }
. "$(dirname "$0")/lib.sh"

# progcost NAMES CMD...: the BPF programs' own time per call (kernel.bpf_stats_enabled:
# their run_time_ns over run_cnt, 1.5 s into CMD and 1.5 s later, summed over the
# programs named, each of which runs once a call). The trap into the kernel and
# back is the same for both tools and left out: this is the part each one chooses.
progcost() {
	names=$1
	shift
	was=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -q kernel.bpf_stats_enabled=1
	"$@" >/dev/null 2>&1 &
	sleep 1.5
	bpftool -j prog show >"$TMP/pa.json"
	sleep 1.5
	bpftool -j prog show >"$TMP/pb.json"
	wait $! || true
	sysctl -q kernel.bpf_stats_enabled="$was"
	jq -n --slurpfile a "$TMP/pa.json" --slurpfile b "$TMP/pb.json" --arg names "$names" '
		($names | split(",")) as $n
		| [$b[0][] | select(.name as $x | $n | index($x)) as $q
		   | ($a[0][] | select(.id == $q.id)) as $p
		   | select($q.run_cnt > $p.run_cnt)
		   | ($q.run_time_ns - $p.run_time_ns) / ($q.run_cnt - $p.run_cnt)] | add // 0'
}

for v in hitwork hitwork-cet hitwork-nofp; do
	BIN=$(realpath "$BUILD/bench/$v")
	prog="uprobe:$BIN:hit { @calls = count(); } uretprobe:$BIN:hit { @rets = count(); }"
	timed="uprobe:$BIN:hit { @s[tid] = nsecs; } uretprobe:$BIN:hit /@s[tid]/ { @calls = count(); @ns = sum(nsecs - @s[tid]); delete(@s[tid]); }"
	first=$(objdump -d "$BIN" | awk '/<hit>:/ {getline; sub(/^[^\t]*\t[^\t]*\t/, ""); print; exit}')
	echo "$v: hit() starts with $first"
	for N in $NS; do
		N2=$((N * 2))
		for f in plain sonde bpft bpftt; do : >"$TMP/$f"; done
		r=0
		while [ $r -lt "$ROUNDS" ]; do
			a=$(wall "$BIN" "$N"); b=$(wall "$BIN" "$N2"); echo $((b - a)) >>"$TMP/plain"
			for k in "$N" "$N2"; do
				"$SONDE" collect trace -e ebpf -q -s custom -F hit -o "$TMP/p$k.json" -- "$BIN" "$k" >/dev/null
			done
			jq -n --slurpfile a "$TMP/p$N.json" --slurpfile b "$TMP/p$N2.json" \
				'($b[0].stats | .duration_ns - .overhead.sonde_ns) - ($a[0].stats | .duration_ns - .overhead.sonde_ns)' \
				>>"$TMP/sonde"
			a=$(wall bpftrace -e "$prog" -c "$BIN $N"); b=$(wall bpftrace -e "$prog" -c "$BIN $N2")
			echo $((b - a)) >>"$TMP/bpft"
			a=$(wall bpftrace -e "$timed" -c "$BIN $N"); b=$(wall bpftrace -e "$timed" -c "$BIN $N2")
			echo $((b - a)) >>"$TMP/bpftt"
			r=$((r + 1))
		done
		calls=$(jq '.stats.trace.calls' "$TMP/p$N2.json")
		awk -v p="$(median "$TMP/plain")" -v s="$(median "$TMP/sonde")" -v b="$(median "$TMP/bpft")" \
			-v t="$(median "$TMP/bpftt")" -v n="$N" -v c="$calls" \
			-v k="$(jq '.stats.trace.cost_ns_per_call' "$TMP/p$N2.json")" 'BEGIN {
			ps = (s - p) / n; pb = (b - p) / n; pt = (t - p) / n
			printf "  N %8d (sonde recorded %d calls at 2N): sonde -e ebpf %6.0f ns/call (calibrated %.0f), bpftrace counting %6.0f ns/call (%.2f), bpftrace timing %6.0f ns/call (%.2f)\n",
				n, c, ps, k, pb, ps / pb, pt, ps / pt
		}'
	done
	ps=$(progcost te_call,te_return "$SONDE" collect trace -e ebpf -q -s custom -F hit \
		-o "$TMP/long.json" -- "$BIN" 4000000)
	pb=$(progcost hit bpftrace -e "$prog" -c "$BIN 4000000")
	pt=$(progcost hit bpftrace -e "$timed" -c "$BIN 4000000")
	awk -v s="$ps" -v b="$pb" -v t="$pt" 'BEGIN {
		printf "  the programs alone: sonde %.0f ns/call, bpftrace counting %.0f ns/call (%.2f), timing %.0f ns/call (%.2f)\n",
			s, b, b ? s / b : 0, t, t ? s / t : 0
	}'
done
