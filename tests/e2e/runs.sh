#!/bin/sh
# Several collectors on one run (sonde collect time+system+sched): a profile
# each, one run id, one clock; the refusals; and the run on one Perfetto
# timeline (sonde export RUN --format perfetto), its tracks in line.
. "$SRC/tests/e2e/lib.sh"

within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }

# the hypervisor's steal time over the run, in ns (/proc/stat counts it in USER_HZ ticks)
steal_ns() { awk '$1 == "cpu" { print $9 * 1e9 / '"$(getconf CLK_TCK)"' }' /proc/stat; }
steal0=$(steal_ns)
run collect time+system+counters -e task-clock -o run.json -- "$PROGS/k-burn" 2 0.5
steal=$(awk -v a="$steal0" -v b="$(steal_ns)" 'BEGIN { print b - a }')
check "time+system+counters: exit 0" [ "$rc" = 0 ]
check "a profile per collector: run-time.json, run-system.json, run-counters.json" all \
	'[ -f run-time.json ]' \
	'[ -f run-system.json ]' \
	'[ -f run-counters.json ]'
check "each is valid" validate run-time.json run-system.json run-counters.json
id=$(jq -r .header.run_id run-time.json)
check "they share one run id ($id)" all \
	'[ "$(jq -r .header.run_id run-system.json)" = "$id" ]' \
	'[ "$(jq -r .header.run_id run-counters.json)" = "$id" ]'
check "each names the run's collectors" \
	jq -e '.metadata.run_collectors == ["time", "system", "counters"]' run-system.json
check "one run: the default with several collectors" jq_eq run-time.json .stats.runs 1
check "the report names each collector and the run" all \
	'has "$err" "== system =="' \
	'has "$err" "run $id: profiles written to"'
check "each collector's own options: counters got -e, time and system did not" all \
	'jq -e '\''(.collector_info.params.events == ["task-clock"])'\'' run-counters.json' \
	'jq -e '\''.collector_info.params.events == null'\'' run-system.json'
# the same runs: counters' task-clock and system's CPU time of the tree agree. In a
# virtual machine they may differ by the time the hypervisor stole: the kernel leaves it
# out of a task's CPU time (what wait4 reports, CONFIG_PARAVIRT_TIME_ACCOUNTING) but
# task-clock runs on while the task is on its CPU (docs/counters.md)
tc=$(jq '.resources as $r | [.resource_type_map | to_entries[] | select(.value.uid ==
	"task-clock" and .value.dispatch == "run") | $r[.key].amount[0]] | .[0]' run-counters.json)
cpu=$(jq .stats.system.runs_total.cpu_ns run-system.json)
check "the same run seen twice: task-clock $tc ns, wait4's CPU $cpu ns (within 10 %, plus $steal ns stolen)" \
	within "$tc" "$(awk -v c="$cpu" 'BEGIN { print c * 0.9 }')" \
	"$(awk -v c="$cpu" -v s="$steal" 'BEGIN { print c * 1.1 + s }')"

# runs are numbered alike in every profile of the run: order 1 and 2 (1-based, docs/profile-format.md)
run collect time+system+counters -q -r 2 -e task-clock -o two.json -- true
check "-r 2: every profile numbers its rows' runs 1 and 2" all \
	'jq -e "[.resources[] | .order // empty | .[]] | unique == [1, 2]" two-time.json' \
	'jq -e "[.resources[] | .order // empty | .[]] | unique == [1, 2]" two-system.json' \
	'jq -e "[.resources[] | .order // empty | .[]] | unique == [1, 2]" two-counters.json'

# the origin commit: git asked once per run (rev-parse and status, at once),
# while the collectors prepare, and done before the target starts
mkdir -p fakegit
real_git=$(command -v git)
cat >fakegit/git <<EOF
#!/bin/sh
echo "start \$(date +%s%N) \$*" >>"$WORK/git.log"
"$real_git" "\$@"
rc=\$?
echo "end \$(date +%s%N)" >>"$WORK/git.log"
exit \$rc
EOF
chmod +x fakegit/git
cat >stamp.sh <<EOF
#!/bin/sh
date +%s%N >"$WORK/target.start"
EOF
chmod +x stamp.sh
: >git.log
PATH="$WORK/fakegit:$PATH" "$SONDE" collect time+system+counters -q -e task-clock -o og.json -- ./stamp.sh
t=$(cat target.start)
check "three profiles, git asked twice (not twice per profile)" \
	[ "$(grep -c '^start' git.log)" = 2 ]
check "and both were done before the target started" \
	awk -v t="$t" '$1 == "end" && $2 > t { bad = 1 } END { exit bad }' git.log

# refusals: one line, exit 2, nothing written
run collect memory+trace -o mt.json -- "$PROGS/t-calls"
check "memory+trace: refused, exit 2" [ "$rc" = 2 ]
check "memory+trace: one line that says why" has "$err" "cannot share a run"
check "memory+trace: nothing written" all \
	'[ ! -e mt-memory.json ]' \
	'[ ! -e mt-trace.json ]'
run collect time+nope -- true
check "an unknown collector in the list: exit 2" all \
	'[ "$rc" = 2 ]' \
	'has "$err" "unknown collector '\''nope'\''"'
run collect time+time -- true
check "a collector named twice: exit 2" all \
	'[ "$rc" = 2 ]' \
	'has "$err" "named twice"'
run collect time+system -o - -- true
check "-o - with two profiles: refused, exit 2" [ "$rc" = 2 ]

# one timeline
if "$SONDE" version --features | grep -q '^ebpf yes' && [ "$(id -u)" = 0 ] &&
	[ -r /sys/kernel/btf/vmlinux ]; then
	cols=time+system+sched
else
	cols=time+system
fi
run collect "$cols" -o tl.json -- "$PROGS/k-burn" 2 0.3
id=$(jq -r .header.run_id tl-time.json)
run export "$(printf '%s' "$id" | cut -c1-10)" --format perfetto -o tl.trace.json
check "export RUN --format perfetto: exit 0" [ "$rc" = 0 ]
check "the timeline is trace-event JSON" jq -e '.traceEvents | length > 0' tl.trace.json
check "it has the run, the system's counter tracks$([ "$cols" = time+system ] || echo ', the threads'\'' states')" \
	jq -e --arg c "$cols" '([.traceEvents[] | select(.cat == "run")] | length) as $runs |
		([.traceEvents[] | select(.cat == "sched")] | length) as $states |
		$runs == 1 and (($c | test("sched") | not) or $states > 0)' tl.trace.json
check "system counters are there" \
	jq -e '[.traceEvents[] | select(.ph == "C" and .name == "process.cpu (%)")] | length > 10' \
	tl.trace.json
# one clock: everything measured lies within the run's slice (and an interval's
# slack). A counter track's first window opens at the system collector's last
# reading before the target's exec: an interval before it, more where a tick
# comes late on a loaded machine, so only that first one may open up to 100 ms
# before the run (it opened 15-30 ms early under load when the windows began
# where the collector started).
check "one clock: every event lies within the run (give or take one 10 ms interval; a track's first window may open before it)" \
	jq -e '([.traceEvents[] | select(.cat == "run")][0]) as $r |
		[.traceEvents[] | select(.ph == "C" or .cat == "sched")] as $e |
		([$e[] | select(.ph == "C")] | group_by(.name) | map(sort_by(.ts))) as $tracks |
		all($e[]; .ts <= $r.ts + $r.dur + 10000) and
		all($e[] | select(.ph != "C"); .ts >= $r.ts - 10000) and
		all($tracks[]; .[0].ts >= $r.ts - 100000 and all(.[1:][]; .ts >= $r.ts - 10000))' \
	tl.trace.json
# the HTML report draws the run on one timeline, in a real browser
run report tl-time.json tl-system.json $([ -f tl-sched.json ] && echo tl-sched.json) -o tl.html
check "report of the run: exit 0" [ "$rc" = 0 ]
check "the report has the run's timeline: the runs lane and counter lanes" \
	grep -q 'class="timeline"' tl.html
cat >spec.json <<JSON
[{"file": "tl.html", "expect": {"section.timeline": 1, "svg.timeline": 1},
  "screenshot": "${BUILD:-$SRC/build}/tests/artifacts/timeline.png"}]
JSON
mkdir -p "${BUILD:-$SRC/build}/tests/artifacts"
browser "the run's timeline in chromium" spec.json || true
# a traced run: its calls drawn on the run's timeline, a lane per call depth of each thread
run collect time+trace -q -o tf.json -- "$PROGS/t-threads"
run report tf-time.json tf-trace.json -o tf.html
check "report of a traced run: exit 0" [ "$rc" = 0 ]
check "its timeline has each thread's calls: lanes for depth 0 and 1, main's rectangle named" \
	sh -c 'grep -q "(calls, depth 0)" tf.html && grep -q "(calls, depth 1)" tf.html &&
		grep -q "<title>main</title></rect>" tf.html'
check "and every lane drawn has something in it (no lane for a depth never reached)" \
	python3 -c '
import re, sys
svg = re.search(r"<svg[^>]*class=\"timeline\".*?</svg>", open("tf.html").read(), re.S).group(0)
lanes = re.findall(r"<g class=\"lane\">(.*?)</g>", svg, re.S)
sys.exit(0 if lanes and all("<rect" in l or "<path" in l for l in lanes) else 1)'
cat >spec2.json <<JSON
[{"file": "tf.html", "expect": {"svg.timeline": 1, "svg.timeline g.lane rect": 3}}]
JSON
browser "a traced run's timeline in chromium" spec2.json || true
run export tl-time.json tl-system.json --format perfetto -o tl2.trace.json
check "export PROFILE PROFILE --format perfetto: the same events" \
	[ "$(jq '.traceEvents | length' tl2.trace.json)" -gt 0 ]
run export tl-time.json run-system.json --format perfetto
check "profiles of different runs: refused, exit 2" all \
	'[ "$rc" = 2 ]' \
	'has "$err" "different runs"'
run export 0123456789ab --format perfetto
check "an unknown run id: exit 1 (as a missing profile), one line" all \
	'[ "$rc" = 1 ]' \
	'has "$err" "no profile of run"'
run export run-time.json run-system.json --format csv
check "several profiles: only perfetto, exit 2" [ "$rc" = 2 ]
finish
