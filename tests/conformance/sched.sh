#!/bin/sh
# Conformance of `sonde collect sched` with the peers on the same programs:
# perf sched (record + timehist: run time, waits and switches per thread),
# strace -c (system call counts) and BCC's syscount, runqlat and offcputime (its
# libbpf-tools, which need only BTF; its Python tools where the kernel's headers are).
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

# Both tools watch the same run (perf records sonde, which runs the program): what
# else the machine runs changes both alike (run apart, a loaded machine gave
# each a different run: 928 against 875 ms, 543 against 247 switches).
# ---- two threads pinned to one CPU: run time and waits are known --------------------------------
perf sched record -q -o burn.data -- "$SONDE" collect sched -q -o burn.json -- "$PROGS/k-burn" 2 1 "$cpu" >/dev/null 2>&1
set -- $(perfsum burn.data k-burn)
near "pinned threads: run time (ms)" "$1" "$(ms "$(ours burn.json on-cpu)")" 0.05 5
near "pinned threads: waiting off the CPU, perf's wait time against sleeping + blocked + preempted (ms)" \
	"$2" "$(ms "$(awk -v a="$(ours burn.json sleeping)" -v b="$(ours burn.json blocked)" \
		-v c="$(ours burn.json preempted)" 'BEGIN { print a + b + c }')")" 0.05 10
near "pinned threads: switches, perf's sched-ins against voluntary + involuntary" "$4" \
	"$(awk -v a="$(ours burn.json switches-voluntary)" -v b="$(ours burn.json switches-involuntary)" \
		'BEGIN { print a + b }')" 0.2 10

# ---- a ping-pong on one CPU: every round trip is a switch of each side ---------------------------
perf sched record -q -o pp.data -- "$SONDE" collect sched -q -o pp.json -- taskset -c "$cpu" "$PROGS/c-pingpong" 5000 >/dev/null 2>&1
set -- $(perfsum pp.data c-pingpong)
near "ping-pong: switches of both processes, perf's sched-ins against sonde's" "$4" \
	"$(awk -v a="$(ours pp.json switches-voluntary)" -v b="$(ours pp.json switches-involuntary)" \
		'BEGIN { print a + b }')" 0.03 20

# ---- a sleeper: off the CPU for its sleep (medians of 3: perf once read 277 ms of a
# 300 ms sleep, a recording that lost events) -------------------------------------------------
pw="" sw=""
for i in 1 2 3; do
	perf sched record -q -o sl.data -- "$SONDE" collect sched -q -o sl.json -- "$PROGS/s-sleep" 300 >/dev/null 2>&1
	set -- $(perfsum sl.data s-sleep)
	pw="$pw $2" sw="$sw $(ms "$(ours sl.json sleeping)")"
done
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
# shellcheck disable=SC2086
near "sleeper: perf's wait time against sonde's sleeping (ms, medians of 3)" \
	"$(median3 $pw)" "$(median3 $sw)" 0.05 5

# ---- system calls: strace -c counts the same calls ----------------------------------------------
"$SONDE" collect sched -q --syscalls -o sys.json -- "$PROGS/k-getppid" 20000
mine=$(jq -r '.resources as $r | .resource_type_map | to_entries[] |
	select(.value.uid == "getppid" and .value.subtype == "count") | $r[.key].amount[0]' sys.json)
if command -v strace >/dev/null 2>&1; then
	strace -f -c -e trace=getppid -o st.txt "$PROGS/k-getppid" 20000 >/dev/null 2>&1
	peer=$(awk '$NF == "getppid" { print $4 }' st.txt)
	check "getppid calls: strace -c $peer, sonde $mine" all \
		'[ "$peer" = 20000 ]' \
		'[ "${mine%.*}" = 20000 ]'
else
	skip "getppid calls against strace -c" "strace is not installed"
fi

# ---- BCC's tools: its libbpf-tools (CO-RE, run on BTF alone), else its Python tools ----------
# bcc_tool NAME: the path of BCC's NAME, or nothing. The Python tools (bpfcc-tools) compile
# their programs against the running kernel's headers, which a custom kernel lacks.
bcc_tool() {
	t=$(dpkg -L libbpf-tools 2>/dev/null | grep -m1 "/sbin/$1\$") && [ -x "$t" ] && {
		echo "$t"
		return
	}
	command -v "$1-bpfcc" >/dev/null 2>&1 && timeout 60 "$1-bpfcc" -h >/dev/null 2>&1 &&
		! timeout 60 syscount-bpfcc -d 1 2>&1 >/dev/null | grep -qi 'kernel headers' &&
		command -v "$1-bpfcc"
}
# after PROG ARGS...: start PROG 2 s from now (BCC's tool attaches first, then follows its pid)
after() {
	sh -c 'sleep 2; exec "$0" "$@"' "$@" &
	pid=$!
}

if ! t=$(bcc_tool syscount); then
	skip "BCC syscount: getppid calls" "neither libbpf-tools nor a working bpfcc-tools (scripts/install-deps)"
else
	after "$PROGS/k-getppid" 20000
	timeout 60 "$t" -p "$pid" -d 4 >bcc.txt 2>&1
	wait "$pid"
	peer=$(awk '$1 == "getppid" { print $2 }' bcc.txt)
	check "BCC syscount: getppid $peer, sonde $mine" all '[ "$peer" = 20000 ]' '[ "${mine%.*}" = 20000 ]'
fi

# runqlat: every wait of the two pinned threads (each waits while the other runs its slice)
if ! t=$(bcc_tool runqlat); then
	skip "BCC runqlat: the pinned threads' run-queue waits" "neither libbpf-tools nor a working bpfcc-tools"
else
	after "$PROGS/k-burn" 2 1 "$cpu"
	timeout 60 "$t" -p "$pid" 4 1 >rq.txt 2>&1
	wait "$pid"
	# its log2 buckets in us; sonde's in ns: all waits, and those of 1 ms or more
	set -- $(awk '$2 == "->" { n += $5; if ($1 >= 1024) long += $5 } END { print n + 0, long + 0 }' rq.txt)
	near "BCC runqlat: the pinned threads' run-queue waits (count)" "$1" \
		"$(jq '[.stats.sched.runqueue_histogram[].count] | add' burn.json)" 0.15 10
	near "BCC runqlat: ... of 1 ms or more (a slice of the other thread)" "$2" \
		"$(jq '[.stats.sched.runqueue_histogram[] | select(.from_ns >= 1048576) | .count] | add' burn.json)" 0.15 10
fi

# offcputime: the sleeper's time off the CPU, from switch-out to switch-in (every stack summed)
if ! t=$(bcc_tool offcputime); then
	skip "BCC offcputime: the sleeper's time off the CPU" "neither libbpf-tools nor a working bpfcc-tools"
else
	after "$PROGS/s-sleep" 300
	timeout 60 "$t" -p "$pid" 4 >oc.txt 2>/dev/null
	wait "$pid"
	peer=$(awk '/^ *[0-9]+ *$/ { us += $1 } END { printf "%.3f", us / 1000 }' oc.txt)
	near "BCC offcputime: the sleeper off the CPU, against sleeping + blocked + runqueue (ms)" "$peer" \
		"$(ms "$(awk -v a="$(ours sl.json sleeping)" -v b="$(ours sl.json blocked)" \
			-v c="$(ours sl.json runqueue)" 'BEGIN { print a + b + c }')")" 0.03 5
fi
finish
