#!/bin/sh
# sonde collect sched on programs with known answers: two busy threads pinned
# to one CPU (each runs half the time and waits the other half: interference
# index 0.5), a ping-pong of two processes over pipes (N voluntary switches
# each, both processes followed), a sleeper (its off-CPU time is its sleep),
# exactly N getppid calls, a writer that waits on the disk; the /proc fallback;
# the ring's drops, counted; the timeline. The peers' numbers on the same
# programs are in tests/conformance/sched.sh.
. "$SRC/tests/e2e/lib.sh"

within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }
# val FILE UID SUBTYPE [TYPE]: the amount of one resource (the first row)
val() {
	jq -r --arg u "$2" --arg s "$3" --arg t "${4:-threads}" '.resources as $r |
		[.resource_type_map | to_entries[] | select(.value.uid == $u and
		.value.subtype == $s and .value.type == $t) | $r[.key].amount[0]] | first' "$1"
}
# pinned-thread values: the k-burn threads with the most on-CPU time
busy() {
	jq -r --arg s "$2" '.resources as $r | [.resource_type_map | to_entries[] |
		select(.value.type == "thread" and .value.subtype == $s) |
		{tid: .value.tid, v: $r[.key].amount[0]}] | sort_by(.tid) | .[1:] | .[].v' "$1"
}

# ---- without eBPF: the /proc fallback works everywhere ----------------------------------------
run collect sched --source proc -o proc.json -- "$PROGS/k-burn" 2 0.5 0
check "--source proc: exit 0" [ "$rc" = 0 ]
check "--source proc: the profile is valid" validate proc.json
check "--source proc: recorded, with why" jq -e '.stats.sched.source == "proc" and
	(.stats.sched.why_proc | length > 0)' proc.json
check "--source proc: says what it cannot measure" has "$err" "are not measured"
check "--source proc: no off-CPU reasons, interrupts or system calls (not measured, not 0)" \
	jq -e '[.resource_type_map[] | select(.subtype == "sleeping" or .subtype == "irq" or
		.type == "syscall")] | length == 0' proc.json
on=$(val proc.json all on-cpu)
rq=$(val proc.json all runqueue)
# the known answers need the CPU to be the two threads': where the VM's host
# (or anything else) took a fifth of it, they are skipped, saying so
if within "$on" 0 400000000; then
	skip "--source proc: two threads pinned to one CPU for 0.5 s, about 0.5 s" \
		"the CPU was busy: they ran $on ns of 0.5 s"
	skip "--source proc: and they waited for it as long" "the CPU was busy"
else
	check "--source proc: two threads pinned to one CPU for 0.5 s: on-CPU $on ns, about 0.5 s" \
		within "$on" 400000000 550000000
	check "--source proc: and they waited for it as long: run-queue $rq ns" \
		within "$rq" 350000000 700000000
fi

# the target's own thread, read once more when it has exited (before it is
# reaped): a readings' interval longer than the run used to leave it at its
# first reading, 0 ns on the CPU
run collect sched --source proc -I 5s -o last.json -- "$PROGS/s-spin" 200
spin=$(jq '[.resources as $r | .resource_type_map | to_entries[] |
	select(.value.type == "thread" and .value.subtype == "on-cpu") | $r[.key].amount[0]] | max' last.json)
check "--source proc -I 5s: the target's thread read at its exit (on-CPU $spin ns > 0)" \
	within "$spin" 1000000 1e12
# sonde held up 0.3 s (stopped) while it reads /proc every 50 ms: the late
# reading is counted and noted, as the system and counters samplers do
held_up collect sched --source proc -I 50ms -o held.json -- sh -c ': >started; sleep 1'
check "--source proc held up 0.3 s: exit 0" [ "$rc" = 0 ]
check "--source proc held up 0.3 s: counted (samples_late, sample_late_max_ms 250-2000) and noted" \
	jq -e '(.stats.sched | .samples_late >= 1 and .sample_late_max_ms > 250 and .sample_late_max_ms < 2000) and
		([.stats.notes[] | select(test("^sched: .* late"))] | length == 1)' held.json
check "--source proc -I 5s, a 0.2 s run: no reading late (samples_late 0, no note)" \
	jq -e '.stats.sched.samples_late == 0 and ([.stats.notes[]? | select(test("late"))] | length == 0)' last.json
# what the threads read add up to, against wait4's totals for the tree
loop="for i in 1 2 3 4 5 6 7 8 9 10; do '$PROGS/c-pingpong' 20; done"
run collect sched --source proc -o short.json -- sh -c "$loop"
# (ten ping-pongs of 20 round trips: about 400 switches, each a blocked read)
check "--source proc: wait4's totals for the tree are in the profile (runs_total: $(jq -c .stats.sched.runs_total short.json))" \
	jq -e '.stats.sched.runs_total | .cpu_ns > 0 and .voluntary_switches + .involuntary_switches >= 300' short.json
check "... and the note says a short-lived thread is not seen" has "$err" "is not seen"
run show short.json sched
check "... and the view says how much of them the threads read add up to" \
	sh -c 'printf "%s\n" "$1" | grep -Eq "the threads read add up to .* of the .* that wait4 gives the whole tree \([0-9]+ %\), and [0-9]+ of its [0-9]+ switches"' _ "$out"

if ! "$SONDE" version --features | grep -q '^ebpf yes'; then
	skip "eBPF: the rest" "this sonde is built without eBPF (libbpf-dev, clang, bpftool)"
	finish
	exit 0
fi
if [ "$(id -u)" != 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	run collect sched -o auto.json -- true
	check "no root or BTF: auto falls back to /proc, exit 0" [ "$rc" = 0 ]
	check "and says why" jq -e '.stats.sched.source == "proc"' auto.json
	run collect sched --source ebpf -o e.json -- true
	check "--source ebpf without root or BTF: exit 3, one line" [ "$rc" = 3 ]
	skip "eBPF: the rest" "needs root and BTF"
	finish
	exit 0
fi

# ---- two busy threads pinned to one CPU ---------------------------------------------------------
run collect sched -o pinned.json -- "$PROGS/k-burn" 2 1 0
check "exit 0" [ "$rc" = 0 ]
check "the profile is valid" validate pinned.json
check "eBPF is the source" jq_eq pinned.json .stats.sched.source ebpf
check "the report is printed: the threads and the index" has "$err" "interference"
both=$(busy pinned.json on-cpu | awk '{s += $1} END {print s + 0}')
if within "$both" 0 800000000; then
	skip "pinned threads: about half of 1 s each, preempted the other half, index about 0.5" \
		"the CPU was busy: the two ran $both ns of 1 s"
else
	for v in $(busy pinned.json on-cpu); do
		check "a pinned thread ran about half of 1 s: $v ns" within "$v" 400000000 600000000
	done
	for v in $(busy pinned.json preempted); do
		check "and waited for the CPU the other half: preempted $v ns" \
			within "$v" 400000000 600000000
	done
	for v in $(busy pinned.json interference-index); do
		check "interference index of a pinned thread: $v, about 0.5" within "$v" 0.4 0.6
	done
fi
check "the threads' switches are involuntary (preempted): more than 50 each" \
	jq -e '[.resources as $r | .resource_type_map | to_entries[] |
		select(.value.type == "thread" and .value.subtype == "switches-involuntary") |
		$r[.key].amount[0]] | sort | .[-2:] | all(. > 50)' pinned.json
check "a run-queue histogram" jq -e '.stats.sched.runqueue_histogram | length > 0' pinned.json
check "nothing dropped" jq -e '.stats.sched.dropped | to_entries | all(.value == 0)' pinned.json
check "the timeline: states of every thread, no overlap within a thread" \
	jq -e '.sched.spans | group_by(.[0]) | all(sort_by(.[2]) as $s |
		[range(1; $s | length) as $i | $s[$i][2] >= $s[$i - 1][2] + $s[$i - 1][3]] | all)' \
	pinned.json
check "the timeline: the running spans of the busy threads add up to their on-CPU time" \
	jq -e '.resources as $r | [.resource_type_map | to_entries[] | select(.value.type ==
		"thread" and .value.subtype == "on-cpu") | {tid: .value.tid, v: $r[.key].amount[0]}]
		as $on | [.sched.spans[] | select(.[1] == 1)] | group_by(.[0]) |
		all((map(.[3]) | add) as $sum | .[0][0] as $t | ($on[] | select(.tid == $t) | .v) as $v |
		($sum - $v | fabs) < 0.02 * $v + 1000000)' pinned.json

# ---- a ping-pong: both processes, voluntary switches ----------------------------------------
# on one CPU, so that each read must wait for the other side to run: N switches each
cpu=$(taskset -pc $$ | sed 's/.*: //; s/.*[,-]//')
run collect sched -o pp.json -- taskset -c "$cpu" "$PROGS/c-pingpong" 5000
check "ping-pong: both processes are followed (fork)" \
	jq -e '[.resource_type_map[] | select(.type == "thread") | .pid] | unique | length == 2' pp.json
# (each write wakes the reader, which may take the CPU at once: some switches are
# involuntary, and every round trip is one switch out of each side)
switches() {
	jq -e --argjson lo "$2" --argjson hi "$3" '.resources as $r | [.resource_type_map |
		to_entries[] | select(.value.type == "thread" and (.value.subtype |
		startswith("switches-"))) | {tid: .value.tid, v: $r[.key].amount[0]}] |
		group_by(.tid) | map(map(.v) | add) | all(. >= $lo and . <= $hi)' "$1"
}
# (at least once per round trip; more when other programs want that CPU too)
check "ping-pong on one CPU: each process switched out about 5000 times" \
	switches pp.json 4950 7500
check "ping-pong: woken as often as it slept" \
	jq -e '.resources as $r | [.resource_type_map | to_entries[] | select(.value.type ==
		"thread" and (.value.subtype == "wakeups" or .value.subtype ==
		"switches-voluntary")) | {tid: .value.tid, s: .value.subtype, v: $r[.key].amount[0]}] |
		group_by(.tid) | all((.[0].v - .[1].v) | fabs <= 2)' pp.json

# ---- a sleeper ---------------------------------------------------------------------------------
run collect sched -o sleep.json -- "$PROGS/s-sleep" 300
sl=$(val sleep.json all sleeping)
check "a sleeper's off-CPU time is its sleep: sleeping $sl ns, about 300 ms" \
	within "$sl" 295000000 340000000
check "and it hardly ran: on-CPU under 20 ms" within "$(val sleep.json all on-cpu)" 0 20000000

# ---- system calls -----------------------------------------------------------------------------
run collect sched --syscalls -o sys.json -- "$PROGS/k-getppid" 10000
check "exactly 10000 getppid calls" [ "$(val sys.json getppid count syscall)" = 10000 ]
check "none failed" [ "$(val sys.json getppid errors syscall)" = 0 ]
check "a latency histogram per call, 10000 in getppid's" \
	jq -e '.stats.sched.syscall_histograms.getppid | map(.count) | add == 10000' sys.json
run collect sched -o nosys.json -- "$PROGS/k-getppid" 1000
check "without --syscalls none is traced (opt-in: traced, every call of the machine is slower)" \
	jq -e '.stats.sched.syscall_histograms == null and
		([.resources[] | select(.type == "syscall")] | length == 0)' nosys.json
out=$("$SONDE" show nosys.json sched 2>&1)
check "and show says so, and how to ask for them" has "$out" "system calls: not traced (sonde collect sched --syscalls"
check "show: the table's columns line up whatever the unit (µs is one character)" \
	all 'aligned "$out" run-queue' 'aligned "$out" sleeping' 'aligned "$out" irq+soft' \
	'aligned "$out" interference'
out=$("$SONDE" show sys.json sched 2>&1)
check "show: the system calls' table lines up too" \
	all 'aligned "$out" "  errors"' 'aligned "$out" "       max"'

# ---- blocked on the disk ----------------------------------------------------------------------
case $(stat -f -c %T "$WORK") in
tmpfs | ramfs) skip "a writer that fsyncs is blocked (uninterruptible)" "$WORK is in memory" ;;
*)
	run collect sched -o io.json -- "$PROGS/k-write" "$WORK/io.bin" 64
	check "a writer that fsyncs 64 MiB was blocked on the disk: blocked > 0" \
		jq -e '.resources as $r | [.resource_type_map | to_entries[] | select(.value.uid ==
			"all" and .value.subtype == "blocked") | $r[.key].amount[0]] | .[0] > 0' io.json
	;;
esac

# ---- limits: a tiny ring drops timeline events, and says so --------------------------------------
run collect sched --ring 4096 -o small.json -- taskset -c "$cpu" "$PROGS/c-pingpong" 20000
check "--ring 4096: the timeline events it had no room for are counted" \
	jq -e '.stats.sched.dropped.timeline_events > 0' small.json
check "--ring 4096: and the profile warns" \
	jq -e '.stats.dropped_events > 0 and (.stats.warnings | map(.code) | index("events-dropped"))' \
	small.json
check "--ring 4096: the counts are whole all the same (20000 round trips, in the maps)" \
	switches small.json 19800 30000
run collect sched --ring 5000 -o x.json -- true
check "--ring 5000: refused (a power of two), exit 2" [ "$rc" = 2 ]
run collect sched --no-timeline -o nt.json -- "$PROGS/s-sleep" 10
check "--no-timeline: counts, no timeline" \
	jq -e '(.sched == null) and (.stats.sched.source == "ebpf")' nt.json

# ---- another tracer attaching and detaching meanwhile --------------------------------------------
# The kernel skips some calls to sonde's programs while another program attaches to or
# detaches from the same tracepoint. A thread whose switch-in was skipped is found at its
# next system call (or switch), put back on its CPU and counted as a missed switch.
(
	i=0
	while [ $i -lt 60 ] && [ ! -e "$WORK/churn.stop" ]; do
		"$SONDE" collect sched -q -o "$WORK/churn.json" -- true >/dev/null 2>&1
		i=$((i + 1))
	done
) &
churn=$!
run collect sched --syscalls -o churn-target.json -- "$PROGS/k-getppid" 300000
touch "$WORK/churn.stop"
wait "$churn"
check "another sonde attaching and detaching meanwhile: still exactly 300000 getppid calls" \
	[ "$(val churn-target.json getppid count syscall)" = 300000 ]
check "what the kernel skipped is counted, and the profile warns exactly when it did" \
	jq -e '(.stats.sched.missed | .switches + .syscall_exits > 0) ==
		((.stats.warnings // []) | map(.code) | index("events-missed") != null)' \
	churn-target.json
check "a run alone misses nothing: missed 0, no warning" \
	jq -e '.stats.sched.missed == {switches: 0, syscall_exits: 0} and
		((.stats.warnings // []) | map(.code) | index("events-missed") == null)' sys.json

# ---- several runs: each run's threads are its own ----------------------------------------------
run collect sched --syscalls -r 3 -o three.json -- "$PROGS/k-getppid" 100
check "-r 3: three runs of 100 getppid calls, each counted on its own" \
	jq -e '.resources as $r | [.resource_type_map | to_entries[] | select(.value.uid ==
		"getppid" and .value.subtype == "count") | $r[.key].amount] | add | sort ==
		[100, 100, 100]' three.json
finish
