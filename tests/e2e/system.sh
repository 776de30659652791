#!/bin/sh
# sonde collect system: the machine and the target's tree from /proc, on
# programs with known answers: two threads that burn two CPUs for a second
# show about 200 % CPU, a program that writes 100 MiB shows 100 MiB written,
# and the CPU time the series saw agrees with GNU time's for the same program.
. "$SRC/tests/e2e/lib.sh"

# sum FILE UID: a metric's mean from the summary
summary() { jq -r --arg u "$2" ".stats.system.summary[\$u].$3" "$1"; }
within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }
# the CPU time (ns) a profile's process.cpu series holds over the run
series_cpu() {
	jq '[.resources as $r | .resource_type_map | to_entries[] |
		select(.value.uid == "process.cpu") | $r[.key] as $x |
		range(0; $x.amount | length) as $i | $x.amount[$i] * $x.duration[$i] / 100] | add' "$1"
}
# the machine's steal (ns of CPU) over the run, from its cpu.steal series:
# process.cpu's counter holds the time the host took a CPU away, which wait4
# and GNU time leave out (docs/system.md)
steal_ns() {
	jq --argjson n "$(getconf _NPROCESSORS_ONLN)" '[.resources as $r |
		.resource_type_map | to_entries[] | select(.value.uid == "cpu.steal") |
		$r[.key] as $x | range(0; $x.amount | length) as $i | select($x.amount[$i] != null) |
		$x.amount[$i] * $x.duration[$i] / 100 * $n] | add // 0 | floor' "$1"
}

ncpu=$(nproc)
run collect system -q -o burn.json -- "$PROGS/k-burn" 2 1
check "runs: exit 0" [ "$rc" = 0 ]
check "the profile is valid" validate burn.json
check "counters_unread and counters_slow are counts" \
	jq -e '.stats.system | (.counters_unread | type == "number") and (.counters_slow | type == "number")' burn.json
cpu=$(summary burn.json process.cpu mean)
got=$(jq .stats.system.runs_total.cpu_ns burn.json)
if [ "$ncpu" -lt 2 ]; then
	skip "two busy threads: process.cpu about 200 %" "one CPU here"
elif [ "$got" -lt 1800000000 ]; then
	skip "two busy threads: process.cpu about 200 %" \
		"the machine was busy: they got $got ns of CPU in 1 s, not 2 s (process.cpu $cpu %)"
else
	check "two busy threads on $ncpu CPUs: process.cpu mean $cpu %, about 200" \
		within "$cpu" 170 210
fi
peak=$(summary burn.json process.cpu peak)
check "two busy threads: no sample over what two CPUs give (process.cpu peak $peak %, <= 205)" \
	within "$peak" 0 205
# a thread's CPU time in /proc lags up to a scheduler tick while it runs: read
# there, 10 ms samples of one busy thread gave p95 120 % and peaks of 198 %.
# The counter is read with the sample's time (docs/system.md); a read whose
# time was still off (107.8 % once, 115 % once, both in a busy CI run) may
# stand alone
run collect system -q --parameter n=1,2 -o sp.json -- "$PROGS/k-burn" 1 0.{n}
check "--parameter n=1,2: each row of the machine's figures says its size (structure-unit-size, n)" \
	jq -e '[.resources[] | select(.order) | ((.order | map(tostring)) == (.n | map(tostring))) and
		(.["structure-unit-size"] == .n)] | all and length > 0' sp.json
run collect system -q -o one.json -- "$PROGS/k-burn" 1 1
peak=$(summary one.json process.cpu peak)
p95=$(summary one.json process.cpu p95)
over=$(jq '[.resources as $r | .resource_type_map | to_entries[] |
	select(.value.uid == "process.cpu") | $r[.key].amount[] | select(. > 105)] | length' one.json)
check "one busy thread: no sample over one CPU (process.cpu p95 $p95 %; $over over 105 %, at most 1; peak $peak %, <= 125)" \
	all 'within "$p95" 90 102' '[ "$over" -le 1 ]' 'within "$peak" 0 125'
check "process.cpu from the inherited counters: no note of the /proc way" \
	jq -e '[.stats.notes[] | select(test("perf_event_open"))] | length == 0' one.json
# the series' CPU time against wait4's for the whole run (what the samples missed)
seen=$(series_cpu burn.json)
total=$(jq '.stats.system.runs_total.cpu_ns' burn.json)
steal=$(steal_ns burn.json)
# a reading not taken (counters_unread) or not timed (counters_slow) leaves the
# two intervals beside it unmeasured: up to 2 x 10 ms of two busy threads each
gap=$(jq '.stats.system | (.counters_unread + .counters_slow) * 2 * .interval_ms * 2e6' burn.json)
check "the series saw the run's CPU time: $seen of $total ns (within 5 %, less $gap ns not measured, more the machine's steal, $steal ns)" \
	within "$seen" "$(awk -v t="$total" -v g="$gap" 'BEGIN { print t * 0.95 - g }')" \
	"$(awk -v t="$total" -v s="$steal" 'BEGIN { print t * 1.05 + s }')"
check "a summary per metric: mean, peak, p95" \
	jq -e '.stats.system.summary["cpu.busy"] | .mean and .peak and .p95' burn.json
check "samples every 10 ms: about 100 over a second" \
	within "$(jq .stats.system.samples burn.json)" 80 115
check "every CPU has its own series (cpu0 .. cpu$((ncpu - 1)))" \
	jq -e --argjson n "$ncpu" '[.resource_type_map[].uid | select(test("^cpu[0-9]+\\.busy$"))] |
		length == $n' burn.json
check "the machine's CPUs were busy: cpu.busy peak over 90 %" \
	within "$(summary burn.json cpu.busy peak)" 90 100.001
used=$(jq '.stats.system.summary["memory.used"].mean' burn.json)
avail=$(jq '.stats.system.summary["memory.available"].mean' burn.json)
memtotal=$(awk '/^MemTotal:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)
check "memory used + available = MemTotal" \
	within "$(awk -v a="$used" -v b="$avail" 'BEGIN { printf "%.0f", a + b }')" \
	"$(awk -v m="$memtotal" 'BEGIN { printf "%.0f", m - 4096 }')" \
	"$(awk -v m="$memtotal" 'BEGIN { printf "%.0f", m + 4096 }')"
check "threads: 3 (main and two workers)" \
	within "$(summary burn.json process.threads peak)" 3 3
check "its own cost is measured: own_cpu_share (% of one CPU)" \
	jq -e '.stats.system.own_cpu_share > 0' burn.json
if [ -r /proc/pressure/cpu ]; then
	check "pressure stall information is sampled" \
		jq -e '.stats.system.summary["pressure.cpu.some"].samples > 0' burn.json
else
	check "no /proc/pressure: said, and no pressure series" \
		jq -e '(.stats.notes | map(select(test("pressure"))) | length > 0) and
			.stats.system.summary["pressure.cpu.some"] == null' burn.json
fi

# processes that start and end between two samples: 100 rounds of a program
# that makes 200 page faults and one that passes a byte back and forth 20
# times between two processes (at least 40 switches), each a few ms long. Read
# from /proc the series saw 4 % of the faults and half of the switches; the
# inherited counters hold every process's, gone or not
loop="for i in \$(seq 100); do '$PROGS/c-pages' 200; '$PROGS/c-pingpong' 20; done"
run collect system -q -o short.json -- sh -c "$loop"
flt=$(summary short.json process.faults.minor total)
wflt=$(jq .stats.system.runs_total.minor_faults short.json)
check "short-lived processes: process.faults.minor total $flt of wait4's $wflt (within 3 %)" \
	within "$flt" "$(awk -v t="$wflt" 'BEGIN { print t * 0.97 }')" "$wflt"
sw=$(summary short.json process.switches total)
# (each ping-pong about 40: a read that finds its byte already there does not block)
check "short-lived processes: process.switches total $sw >= 3000 (100 x about 40)" within "$sw" 3000 1e9
# (wait4 counts each task's last switch, as it exits; perf's counter, as perf
# stat's context-switches, does not: 300 processes here)
wsw=$(jq '.stats.system.runs_total | .voluntary_switches + .involuntary_switches' short.json)
check "short-lived processes: process.switches $sw, wait4's $wsw less at most one a process" \
	within "$sw" "$((wsw - 400))" "$wsw"
# the same where perf_event_open is refused (x-noperf): said, and read from /proc
"$PROGS/x-noperf" "$SONDE" collect system -q -o noperf.json -- sh -c "$loop" >/dev/null 2>&1
check "perf_event_open refused: a note says which metrics then come from /proc, and what is missed" \
	jq -e '[.stats.notes[] | select(test("process.switches, process.faults.*perf_event_open.*not seen"))] | length == 1' noperf.json
check "... and the series still has them" \
	jq -e '.stats.system.summary["process.faults.minor"].total > 0 and .stats.system.summary["process.cpu"].mean > 0' noperf.json

# the machine every 100 ms (/proc/stat counts in ticks of 10 ms), the tree every 10 ms
mach=$(jq '.stats.system.summary["cpu.busy"].samples' burn.json)
check "the machine read every 100 ms: cpu.busy has $mach samples over a second, about 10" \
	within "$mach" 8 12
# (a sample taken late, the sampler having waited for a CPU, makes its window
# longer and the next one shorter by as much: stats.system.sample_late_max_ms)
late=$(jq '.stats.system.sample_late_max_ms * 1e6' burn.json)
wins=$(jq -c '[.resources as $r | .resource_type_map | to_entries[] | select(.value.uid == "cpu.busy") |
	$r[.key].duration[]]' burn.json)
check "... each its window's length (about 100 ms, give or take the latest sample's $late ns; the last ends with the run): $wins ns" \
	jq -en --argjson w "$wins" --argjson late "$late" '$w | (.[:-1] | (min > 80e6 - $late) and (max < 150e6 + $late)) and .[-1] < 150e6 + $late'
check "samples_late and sample_late_max_ms: a count, and a time under the run's" \
	jq -e '.stats.system | (.samples_late | type == "number") and .sample_late_max_ms >= 0 and .sample_late_max_ms < 1000' burn.json
# a sampler held up for longer than an interval (sonde stopped: the same as
# starved of a CPU, and certain): counted, one long window rather than a burst
# of samples an instant apart, and a note
held_up collect system -q -o held.json -- sh -c ': >started; sleep 1'
check "held up 0.3 s: exit 0" [ "$rc" = 0 ]
hw=$(jq -c '[.resources as $r | .resource_type_map | to_entries[] | select(.value.uid == "process.cpu") |
	$r[.key].duration[]] | map(. / 1e6 | round)' held.json)
check "held up 0.3 s: counted (samples_late, sample_late_max_ms 250-2000) and noted" \
	jq -e '(.stats.system | .samples_late >= 1 and .sample_late_max_ms > 250 and .sample_late_max_ms < 2000) and
		([.stats.notes[] | select(test("^system: .* late, the latest by"))] | length == 1)' held.json
check "held up 0.3 s: one window of 250 ms or more, none under 1 ms (the deadlines missed were skipped): $hw ms" \
	jq -en --argjson w "$hw" '([$w[] | select(. >= 250)] | length == 1) and ($w[:-1] | min >= 1)'
# held up in a warm-up run: its windows are dropped, and its lateness with them
held_up collect system -q -w 1 -o heldw.json -- sh -c '[ -e started ] || { : >started; sleep 1; }; sleep 0.2'
check "held up 0.3 s in the warm-up only: exit 0" [ "$rc" = 0 ]
check "... not counted in the recorded run (sample_late_max_ms < 250, no note)" \
	jq -e '(.stats.system.sample_late_max_ms < 250) and ([.stats.notes[]? | select(test("late"))] | length == 0)' heldw.json
check "... and no note of coarse shares" \
	jq -e '[.stats.notes[] | select(test("ticks"))] | length == 0' burn.json
run collect system -q --machine-interval 10ms -o fine.json -- "$PROGS/k-burn" 1 0.3
# (a window in which /proc/stat's ticks did not move, a few ms after a late
# sample, stays open: its time goes into the next window, which has a share)
fine=$(jq -c '. as $p | .resources as $r | [.resource_type_map | to_entries[] |
	select(.value.uid == "cpu.busy" or .value.uid == "process.threads") | {(.value.uid): $r[.key]}] | add as $w |
	($w["cpu.busy"].timestamp | length) as $n |
	{windows: $n, samples: $p.stats.system.samples, interval_ms: $p.stats.system.machine_interval_ms,
	 gaps: [range(1; $n) | select($w["cpu.busy"].timestamp[. - 1] + $w["cpu.busy"].duration[. - 1] != $w["cpu.busy"].timestamp[.])] | length,
	 cover: (($w["cpu.busy"].duration | add) / ($w["process.threads"].duration | add))}' fine.json)
check "--machine-interval 10ms: the machine's windows end to end over the run ($fine)" \
	jq -n -e --argjson f "$fine" '$f | .interval_ms == 10 and .gaps == 0 and .cover >= 0.9'
# a window ends where /proc/stat's ticks moved: at most samples, at least half
# of them where the host lets the VM run (8 of 31 once in a busy CI run; 2-4 %
# of the CPUs' time stolen is usual here)
steal=$(steal_ns fine.json)
cap=$(jq --argjson n "$ncpu" '.stats.duration_ns * $n' fine.json)
if awk -v s="$steal" -v c="$cap" 'BEGIN { exit !(s > 0.1 * c) }'; then
	skip "--machine-interval 10ms: a window at least every other sample" \
		"the host took $steal ns of the CPUs' $cap from this VM during the run (cpu.steal)"
else
	check "--machine-interval 10ms: the machine read at the samples, a window at least every other one ($fine, steal $steal ns)" \
		jq -n -e --argjson f "$fine" '$f | .windows >= .samples * 0.5'
fi
check "... and a note says one sample's cpu.* share is then coarse (ticks of 10 ms)" \
	jq -e '[.stats.notes[] | select(test("^cpu[.][*]: /proc/stat counts CPU time in ticks"))] | length == 1' fine.json

# resident memory: two threads touch 8 MiB on two CPUs, then the program
# says its resident pages (its own /proc/self/statm) and sleeps unchanged.
# /proc/PID/stat's rss (pidstat's and ps's source) is the kernel's quick
# reading of per-CPU counters, and read 28-64 pages short of it here
run collect system -q -o rss.json -- "$PROGS/k-rss" 8 0.3
pages=$(printf '%s\n' "$out" | awk '/^resident/ { print $2 }')
peak=$(summary rss.json process.rss peak)
check "resident memory: process.rss peak $peak B, the program's own $pages pages exactly" \
	awk -v a="$peak" -v p="$pages" -v s="$(getconf PAGESIZE)" 'BEGIN { exit !(p > 0 && a == p * s) }'

# I/O: 100 MiB written through write(2)
run collect system -q -o write.json -- "$PROGS/k-write" "$WORK/out.bin" 100
wchar=$(summary write.json process.io.wchar total)
# exactly: the first reading is taken before the exec and the last once the
# target has exited, before it is reaped, so nothing it wrote falls outside the
# samples (read after the exec, a loaded machine lost up to 17 %)
check "100 MiB written: process.io.wchar total $wchar B, exactly" \
	within "$wchar" $((100 * 1048576)) $((100 * 1048576))
case $(stat -f -c %T "$WORK") in
tmpfs | ramfs) skip "storage writes: runs_total.io_write_bytes" "$WORK is on $(stat -f -c %T "$WORK")" ;;
*)
	check "storage writes from wait4: runs_total.io_write_bytes >= 100 MiB" \
		jq -e '.stats.system.runs_total.io_write_bytes >= 104857600' write.json
	;;
esac

# GNU time on the same run (sonde collects the tree that /usr/bin/time heads):
# its user + sys against the series'
if [ -x /usr/bin/time ]; then
	"$SONDE" collect system -q -o gt.json -- /usr/bin/time -f "%U %S" -o "$WORK/gt.txt" \
		"$PROGS/k-burn" 2 1
	gt=$(awk '{ printf "%d", ($1 + $2) * 1e9 }' gt.txt)
	seen=$(series_cpu gt.json)
	steal=$(steal_ns gt.json) # above, the run's steal is allowed
	check "GNU time's user+sys ($gt ns) and the series' CPU time ($seen ns), same run, within 10 % (above: and the machine's steal, $steal ns)" \
		within "$seen" "$(awk -v t="$gt" 'BEGIN { print t * 0.9 }')" \
		"$(awk -v t="$gt" -v s="$steal" 'BEGIN { print t * 1.1 + 20000000 + s }')"
else
	skip "GNU time's user+sys against the series" "no /usr/bin/time"
fi

# disk throughput: a writer that fsyncs 64 MiB, against the kernel's own
# /proc/diskstats sectors written over the same run (the physical disks', as sonde)
case $(stat -f -c %T "$WORK") in
tmpfs | ramfs) skip "disk.write of a writer that fsyncs 64 MiB" "$WORK is in memory" ;;
*)
	disks=$(for d in /sys/block/*; do
		[ -e "$d/device" ] && case ${d##*/} in loop*) ;; *) echo "${d##*/}" ;; esac
	done)
	sectors() { awk -v l="$disks" 'BEGIN { n = split(l, a, "\n"); for (i = 1; i <= n; i++) d[a[i]] = 1 }
		($3 in d) { s += $10 } END { print s + 0 }' /proc/diskstats; }
	before=$(sectors)
	run collect system -q -o dk.json -- "$PROGS/k-write" "$WORK/dk.bin" 64
	peer=$(( ($(sectors) - before) * 512 ))
	rm -f "$WORK/dk.bin"
	mine=$(jq '.resources as $r | [.resource_type_map | to_entries[] | select(.value.uid ==
		"disk.write")][0].key as $k | [$r[$k].amount, $r[$k].duration] | transpose |
		map(.[0] * .[1] / 1e9) | add | floor' dk.json)
	check "disk.write of 64 MiB fsynced: $mine B, /proc/diskstats around the run $peer B" \
		within "$mine" 67108864 "$peer"
	;;
esac

# options
run collect system -q -I 50ms --no-per-cpu -o slow.json -- "$PROGS/s-sleep" 500
check "-I 50ms: about 10 samples over half a second" \
	within "$(jq .stats.system.samples slow.json)" 7 12
check "--no-per-cpu: no cpuN series" \
	jq -e '[.resource_type_map[].uid | select(test("^cpu[0-9]"))] | length == 0' slow.json
check "a sleeper uses no CPU: process.cpu mean under 5 %" \
	within "$(summary slow.json process.cpu mean)" 0 5
run collect system -q -I 0 -o bad.json -- true
check "-I 0: refused, exit 2" [ "$rc" = 2 ]
check "-I 0: one line that says why" has "$err" "invalid value '0' for '-I'"
finish
