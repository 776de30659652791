#!/bin/sh
# Conformance of `sonde collect sched` with the peers on the same programs:
# perf sched (record + timehist: run time, waits and switches per thread),
# strace -c (system call counts) and, where they can run, BCC's syscount and
# runqlat (they compile their programs against the running kernel's headers).
#
# How the numbers map (docs/sched.md): perf's "run time" is sonde's on-CPU
# time; perf's "sch delay" counts only wake-up waits, so it is compared with
# sonde's run-queue wait less its preempted time; perf's "wait time" is the
# rest of the time off the CPU (sleeping + blocked + preempted); perf's
# "sched-in" count is sonde's voluntary + involuntary switches.
. "$SRC/tests/conformance/lib.sh"
need_peer perf

if ! "$SONDE" version --features | grep -q '^ebpf yes'; then
	echo "1..0 # SKIP this sonde is built without eBPF"
	exit 0
fi
if [ "$(id -u)" != 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "1..0 # SKIP the sched collector's eBPF source and perf sched need root and BTF"
	exit 0
fi

near() { # near NAME PEER OURS REL ABS
	if awk -v p="$2" -v s="$3" -v r="$4" -v a="$5" 'BEGIN {
		d = p - s; if (d < 0) d = -d; t = r * p; if (t < a) t = a; exit !(d <= t) }'; then
		ok "$1: peer $2, sonde $3"
	else
		not_ok "$1: peer $2, sonde $3 (more than $4 or $5 apart)"
	fi
}
# perfsum DATA COMM: run ms, wait ms, sch delay ms, sched-ins of the threads named COMM
perfsum() {
	perf sched timehist -i "$1" 2>/dev/null | awk -v c="$2" '
		index($3, c "[") == 1 { w += $4; d += $5; r += $6; n++ }
		END { printf "%.3f %.3f %.3f %d\n", r, w, d, n }'
}
# ours FILE SUBTYPE: the sum over all threads (the "all" row), in ms for times
ours() {
	jq -r --arg s "$2" '.resources as $r | [.resource_type_map | to_entries[] |
		select(.value.uid == "all" and .value.subtype == $s) | $r[.key].amount[0]] | .[0]' "$1"
}
ms() { awk -v x="$1" 'BEGIN { printf "%.3f", x / 1e6 }'; }
cpu=$(taskset -pc $$ | sed 's/.*: //; s/.*[,-]//')

# ---- two threads pinned to one CPU: run time and waits are known --------------------------------
perf sched record -q -o burn.data -- "$PROGS/k-burn" 2 1 "$cpu" >/dev/null 2>&1
"$SONDE" collect sched -q -o burn.json -- "$PROGS/k-burn" 2 1 "$cpu"
set -- $(perfsum burn.data k-burn)
near "pinned threads: run time (ms)" "$1" "$(ms "$(ours burn.json on-cpu)")" 0.05 5
near "pinned threads: waiting off the CPU, perf's wait time against sleeping + blocked + preempted (ms)" \
	"$2" "$(ms "$(awk -v a="$(ours burn.json sleeping)" -v b="$(ours burn.json blocked)" \
		-v c="$(ours burn.json preempted)" 'BEGIN { print a + b + c }')")" 0.05 10
near "pinned threads: switches, perf's sched-ins against voluntary + involuntary" "$4" \
	"$(awk -v a="$(ours burn.json switches-voluntary)" -v b="$(ours burn.json switches-involuntary)" \
		'BEGIN { print a + b }')" 0.2 10

# ---- a ping-pong on one CPU: every round trip is a switch of each side ---------------------------
perf sched record -q -o pp.data -- taskset -c "$cpu" "$PROGS/c-pingpong" 5000 >/dev/null 2>&1
"$SONDE" collect sched -q -o pp.json -- taskset -c "$cpu" "$PROGS/c-pingpong" 5000
set -- $(perfsum pp.data c-pingpong)
near "ping-pong: switches of both processes, perf's sched-ins against sonde's" "$4" \
	"$(awk -v a="$(ours pp.json switches-voluntary)" -v b="$(ours pp.json switches-involuntary)" \
		'BEGIN { print a + b }')" 0.03 20

# ---- a sleeper: off the CPU for its sleep (medians of 3: perf once read 277 ms of a
# 300 ms sleep, a recording that lost events) -------------------------------------------------
pw="" sw=""
for i in 1 2 3; do
	perf sched record -q -o sl.data -- "$PROGS/s-sleep" 300 >/dev/null 2>&1
	"$SONDE" collect sched -q -o sl.json -- "$PROGS/s-sleep" 300
	set -- $(perfsum sl.data s-sleep)
	pw="$pw $2" sw="$sw $(ms "$(ours sl.json sleeping)")"
done
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
# shellcheck disable=SC2086
near "sleeper: perf's wait time against sonde's sleeping (ms, medians of 3)" \
	"$(median3 $pw)" "$(median3 $sw)" 0.05 5

# ---- system calls: strace -c counts the same calls ----------------------------------------------
if command -v strace >/dev/null 2>&1; then
	strace -f -c -e trace=getppid -o st.txt "$PROGS/k-getppid" 20000 >/dev/null 2>&1
	peer=$(awk '$NF == "getppid" { print $4 }' st.txt)
	"$SONDE" collect sched -q --syscalls -o sys.json -- "$PROGS/k-getppid" 20000
	mine=$(jq -r '.resources as $r | .resource_type_map | to_entries[] |
		select(.value.uid == "getppid" and .value.subtype == "count") | $r[.key].amount[0]' sys.json)
	check "getppid calls: strace -c $peer, sonde $mine" all \
		'[ "$peer" = 20000 ]' \
		'[ "${mine%.*}" = 20000 ]'
else
	skip "getppid calls against strace -c" "strace is not installed"
fi

# ---- BCC, where its tools can compile here -------------------------------------------------------
if ! command -v syscount-bpfcc >/dev/null 2>&1; then
	skip "BCC syscount: getppid calls" "bpfcc-tools is not installed (scripts/install-deps)"
elif ! why=$(timeout 60 syscount-bpfcc -d 1 2>&1 >/dev/null) && [ -n "$why" ]; then
	skip "BCC syscount: getppid calls" \
		"BCC cannot build its programs here: $(printf '%s\n' "$why" | grep -m1 -i 'kernel headers' | cut -c1-100)"
else
	# the program starts after syscount has attached; syscount follows its pid
	sh -c 'sleep 2; exec "$0" 20000' "$PROGS/k-getppid" &
	pid=$!
	timeout 60 syscount-bpfcc -p "$pid" -d 4 >bcc.txt 2>&1
	wait "$pid"
	peer=$(awk '$1 == "getppid" { print $2 }' bcc.txt)
	check "BCC syscount: getppid $peer, sonde $mine" [ "$peer" = 20000 ]
fi
finish
