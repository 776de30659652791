#!/bin/sh
# The front door: output streams as perf stat and hyperfine have them, one
# vocabulary of options (durations, -o, global options anywhere, did-you-mean,
# colour), init on an existing store, drawn views never dumped on a terminal,
# the Perfetto export's fixed precision, profiles and exports read and
# written gzip'ed or zstd'ed.
. "$SRC/tests/e2e/lib.sh"

# ---- streams: stdout is the target's, the report stderr's ------------------------------------
"$PROGS/s-echo" hi >own.out 2>/dev/null
run collect memory -o m.json -- "$PROGS/s-echo" hi
check "memory: stdout is exactly the target's own" sh -c 'printf "%s\n" "$1" | cmp -s - own.out' _ "$out"
check "memory: the report is on stderr" has "$err" "profile written to 'm.json'"
run collect trace -o t.json -- "$PROGS/t-calls"
"$PROGS/t-calls" >own-t.out 2>/dev/null
check "trace: stdout is exactly the target's own" sh -c 'printf "%s\n" "$1" | cmp -s - own-t.out' _ "$out"
run collect counters -o c.json -- "$PROGS/s-echo" hi
check "counters: stdout is exactly the target's own" sh -c 'printf "%s\n" "$1" | cmp -s - own.out' _ "$out"
check "counters: the table is on stderr" has "$err" "task-clock"
# time: as hyperfine, the target's output is discarded unless --show-output
run collect time -r 2 -o t1.json -- "$PROGS/s-echo" hi
check "time: the target's output is discarded by default" [ -z "$out" ]
check "time: ... and not on stderr either" sh -c '! printf "%s" "$1" | grep -q "err hi"' _ "$err"
check "time: the table is on stderr" has "$err" "mean ± σ"
run collect time -r 2 --show-output -o t2.json -- "$PROGS/s-echo" hi
check "time --show-output: shown" sh -c '[ "$(printf "%s\n" "$1" | grep -c "out hi")" = 2 ]' _ "$out"
run collect time -r 2 --show-output --discard-output -o t3.json -- "$PROGS/s-echo" hi
check "--show-output with --discard-output: usage error" [ "$rc" = 2 ]
# -o -: the profile is stdout, everything else is stderr
run collect memory -q -o - -- "$PROGS/s-echo" hi
check "-o -: stdout is the profile alone" sh -c 'printf "%s" "$1" | jq -e .header >/dev/null' _ "$out"
# -q: nothing but errors
run collect time -q -r 2 -o q.json -- "$PROGS/s-exit"
check "-q: nothing on stderr" [ -z "$err" ]
check "-q: nothing on stdout" [ -z "$out" ]
run -q collect time -r 2 -o q2.json -- "$PROGS/s-exit"
check "-q before the command: the same" [ -z "$err$out" ]
# -v: what sonde did (info); -vv: every step (debug, all domains); neither: none of it
run collect time -r 2 -o v0.json -- "$PROGS/s-exit"
check "no -v: no info or debug lines" sh -c '! printf "%s\n" "$1" | grep -q "^sonde: \(info\|debug\):"' _ "$err"
run -v collect time -r 2 -o v1.json -- "$PROGS/s-exit"
check "-v: the collectors, the runs' total and the file written, as info lines" \
	sh -c 'for w in "info: session: collector time" "info: session: 2 runs and 0 warm-ups" "info: profile: wrote .v1.json.: time profile"; do
		printf "%s\n" "$1" | grep -q "^sonde: $w" || exit 1; done' _ "$err"
check "-v: no debug lines" sh -c '! printf "%s\n" "$1" | grep -q "^sonde: debug:"' _ "$err"
run collect -vv time -r 2 -o v2.json -- "$PROGS/s-exit"
check "-vv: each run, as debug lines" sh -c 'printf "%s\n" "$1" | grep -q "^sonde: debug: session: run 2: pid [0-9]*, exit 0, [0-9.]* ms"' _ "$err"
run collect -q --color=never time -r 2 -o v3.json -- "$PROGS/s-exit"
check "collect -q --color=never time: global options before the collector's name" \
	sh -c '[ "$1" = 0 ] && [ -z "$2" ] && [ -s v3.json ]' _ "$rc" "$err"
run -vv show v2.json
check "-vv show: the profile loaded, with its size and time" \
	sh -c 'printf "%s\n" "$1" | grep -q "^sonde: debug: profile: loaded .v2.json.: time profile, [0-9]* resources, [0-9]* bytes in [0-9.]* ms"' _ "$err"

# a repeated warning is printed once, naming the workloads it applies to
run collect time -r 3 --parameter N=1,2,3 -o w.json -- "$PROGS/s-exit" 0 {N}
# the warning needs runs under 5 ms: a sanitizer build's fork on a loaded machine can take longer
slow=$(jq '[.resource_type_map | to_entries[] | select(.value.subtype == "real") | .key] as $k
	| [$k[] as $x | .resources[$x].amount | add / length | select(. >= 5e6)] | length' w.json)
if [ -s w.json ] && [ "$slow" != 0 ]; then
	for d in "three short-run warnings recorded" "each names its workload" \
		"printed once, with the other workloads" "warnings have one format: 'sonde: warning:'"; do
		skip "$d" "runs of $PROGS/s-exit took 5 ms or more here (a loaded machine): no short-run warning to repeat"
	done
else
	check "three short-run warnings recorded" jq_eq w.json '[.stats.warnings[] | select(.code == "short-run")] | length' 3
	check "each names its workload" jq_eq w.json '[.stats.warnings[] | select(.code == "short-run") | .workload] | join(",")' "1,2,3"
	check "printed once, with the other workloads" \
		sh -c '[ "$(printf "%s\n" "$1" | grep -c "warning: runs took")" = 1 ] && printf "%s" "$1" | grep -q "also in workload 2, 3"' _ "$err"
	check "warnings have one format: 'sonde: warning:'" has "$err" "^sonde: warning: "
fi

# ---- one vocabulary of options ------------------------------------------------------------------
run collect time -r 1 -t 1500ms -o d.json -- "$PROGS/s-exit"
check "durations: -t 1500ms is 1.5 s" jq_eq d.json .collector_info.params.timeout 1.5
run collect time -r 1 -t 2m -o d2.json -- "$PROGS/s-exit"
check "durations: -t 2m is 120 s" jq_eq d2.json .collector_info.params.timeout 120
run collect counters -I 1s -o d3.json -- "$PROGS/s-exit"
check "durations: -I 1s is 1000 (ms, perf's unit)" jq_eq d3.json .collector_info.params.interval 1000
run collect counters -I 500 -o d4.json -- "$PROGS/s-exit"
check "durations: a plain -I is milliseconds" jq_eq d4.json .collector_info.params.interval 500
run collect trace --min-time 2us -o d5.json -- "$PROGS/t-calls"
check "durations: --min-time 2us is 2000 ns" jq_eq d5.json '.collector_info.params."min-time"' 2000
run collect time -t 5parsecs -- "$PROGS/s-exit"
check "a bad duration: exit 2, says what is expected" \
	sh -c '[ "$1" = 2 ] && printf "%s" "$2" | grep -q "expected a duration such as 500ms"' _ "$rc" "$err"
run collect time -t -1s -- "$PROGS/s-exit"
check "a negative duration: exit 2" [ "$rc" = 2 ]
run collect memory --repaet 2 -- "$PROGS/s-exit"
check "a mistyped option: did you mean" sh -c '[ "$1" = 2 ] && printf "%s" "$2" | grep -q "did you mean .--repeat.?"' _ "$rc" "$err"
run colect time -- true
check "a mistyped command: did you mean" sh -c '[ "$1" = 2 ] && printf "%s" "$2" | grep -q "did you mean .collect.?"' _ "$rc" "$err"
run show --fromat csv m.json
check "show: did you mean --format" has "$err" "did you mean '--format'"
run show m.json -v
check "-v after the command is accepted" [ "$rc" = 0 ]
run -v show m.json
check "-v before the command is accepted" [ "$rc" = 0 ]
for c in export show report postprocess; do
	run "$c" --help
	check "$c: -o is the output file" has "$out" "-o, --output FILE"
done
run collect time --help
check "collect: -o is the output file" has "$out" "-o, --output FILE"
check "collect time --help: the real default of -r" has "$out" "at least 10 runs and 3 s"
run collect memory --help
check "collect memory --help: memory runs once" has "$out" "measure N runs (default: 1)"
run collect trace --help
check "trace: -F is a function rule (-f is --format everywhere)" has "$out" "-F, --func"
run add --help
check "add: --force has no -f" sh -c '! printf "%s" "$1" | grep -q -- "-f, --force"' _ "$out"
for c in check postprocess counters collect; do
	run "$c" --help
	check "$c --help: no link to a missing file" sh -c '! printf "%s" "$1" | grep -q "docs/"' _ "$out"
done

# colour: verdicts, --color and NO_COLOR
run collect time -q -r 5 -o slow.json -- "$PROGS/s-sleep" 20
run collect time -q -r 5 -o fast.json -- "$PROGS/s-sleep" 20
jq '.resources |= with_entries(.value.amount |= map(. * 3))' slow.json >slower.json
run check fast.json slower.json --color=always
check "--color=always: the degradation is red" sh -c 'printf "%s" "$1" | grep -q "$(printf "\033\\[31m")"' _ "$out"
run check fast.json slower.json
check "not a terminal: no colour" sh -c '! printf "%s" "$1" | grep -q "$(printf "\033")"' _ "$out"
if command -v script >/dev/null; then
	NO_COLOR=1 script -qec "'$SONDE' check '$WORK/fast.json' '$WORK/slower.json'" /dev/null >nc.out 2>&1
	check "NO_COLOR on a terminal: no colour" sh -c '! grep -q "$(printf "\033\\[3")" nc.out'
	script -qec "'$SONDE' check '$WORK/fast.json' '$WORK/slower.json'" /dev/null >c.out 2>&1
	check "a terminal: coloured" grep -q "$(printf '\033\\[31m')" c.out
	check "a terminal: the colour does not become \\x1b text" sh -c '! grep -q "x1b\\[" c.out'
	# drawn views are never dumped on a terminal
	script -qec "cd '$WORK' && '$SONDE' show m.json flamegraph" /dev/null >svg.out 2>&1
	check "SVG on a terminal: written to a file instead" sh -c 'grep -q "m-flamegraph.svg written" svg.out && grep -q "<svg" m-flamegraph.svg'
	check "... and no SVG on the terminal" sh -c '! grep -q "<svg" svg.out'
else
	skip "colour and SVG on a terminal" "script(1) is not installed"
fi
run show m.json flamegraph
check "SVG into a pipe: still written to stdout" has "$out" "<svg"

# ---- smaller ------------------------------------------------------------------------------------
mkdir repo && git -C repo init -q
run init repo
check "init: a new store" has "$out" "initialised a sonde store"
check "init: .sonde/ excluded from git" grep -qx ".sonde/" repo/.git/info/exclude
check "init: git status stays clean" [ -z "$(git -C repo status --porcelain)" ]
run init repo
check "init again: says the store is there, exit 0" sh -c '[ "$1" = 0 ] && printf "%s" "$2" | grep -q "already"' _ "$rc" "$out"
check "init again: excluded once" [ "$(grep -cx ".sonde/" repo/.git/info/exclude)" = 1 ]
run export t.json --format perfetto -o pf.json
check "perfetto: timestamps with three decimals (ns), never %.17g" \
	sh -c '! grep -Eq "\"(ts|dur)\":[0-9]+\.[0-9]{4,}" pf.json && grep -Eq "\"ts\":[0-9]+\.[0-9]{3}[,}]" pf.json'
check "perfetto: valid JSON" jq -e '.traceEvents | length > 0' pf.json
# compressed profiles and exports: written by the name's extension, read by the magic
run collect trace -o tz.json.gz -- "$PROGS/t-calls"
check "collect -o x.json.gz: gzip -t accepts it" gzip -t tz.json.gz
gzip -dc tz.json.gz >tz-plain.json
check "collect -o x.json.gz: gzip -dc gives a valid profile" validate tz-plain.json
run collect trace -o tz.json.zst -- "$PROGS/t-calls"
check "collect -o x.json.zst: zstd -t accepts it" zstd -qt tz.json.zst
run show tz.json.gz
gz_show=$out
run show tz-plain.json
check "show x.json.gz: what the plain JSON shows" [ "$gz_show" = "$out" ]
cp tz.json.zst tz-renamed.json
run show tz-renamed.json
check "show: zstd data under a .json name is read by its magic" [ "$rc" = 0 ]
run export tz.json.zst --format perfetto -o pz.json.gz
check "export -o x.json.gz: gzip'ed Perfetto JSON with every event" \
	sh -c '[ "$(gzip -dc pz.json.gz | jq ".traceEvents | length")" -gt 0 ] && gzip -dc pz.json.gz | jq -e ".traceEvents | map(select(.ph == \"X\")) | length > 0"'
run postprocess -q tz.json.gz regression
check "postprocess x.json.gz: written back compressed, with its models" \
	sh -c 'gzip -t tz.json.gz && gzip -dc tz.json.gz | jq -e ".postprocessors | length == 1"'
head -c 300 tz.json.gz >cut.json.gz
run show cut.json.gz
check "a truncated x.json.gz: one line, exit 1" \
	sh -c '[ "$1" = 1 ] && [ "$(printf "%s\n" "$2" | wc -l)" = 1 ]' _ "$rc" "$err"
check "a truncated x.json.gz: says so" has "$err" "compressed data is truncated or corrupt"
# the store keeps a compressed profile compressed, and knows it is the same as the plain one
git -C repo -c user.name=t -c user.email=t@t commit -q --allow-empty -m x
(cd repo && "$SONDE" collect time -q -r 2 -o z.json.gz -- "$PROGS/s-exit" && gzip -dc z.json.gz >z.json) 2>/dev/null
cd repo || exit 1
run add z.json.gz
check "add x.json.gz: stored compressed" \
	sh -c 'ls .sonde/objects/*/z.json.gz >/dev/null && gzip -t .sonde/objects/*/z.json.gz'
run add z.json
check "add: the plain copy is the same profile" has "$err" "already registered"
run show 0@i
check "show N@i of a compressed stored profile" has "$out" "^uid "
cd .. || exit 1
run show t1.json
check "show: the uid is named" has "$out" "^uid "
check "show: each row says what its numbers are in (time: each carries its unit)" has "$out" "  real  *time  *[0-9.]* [nµm]*s ±"
# ---- views that answer their question ------------------------------------------------------------
EX=$BUILD/examples
# the trace's time-per-size curve is timing: on a loaded machine a run can be noise, so
# three runs at most until its best model is a real curve (checked below)
for _try in 1 2 3; do
	"$SONDE" collect trace -q -o ex-trace.json -- "$EX/sort-traced" 5000 >/dev/null
	"$SONDE" postprocess -q ex-trace.json regression >/dev/null
	jq_eq ex-trace.json '[.models[] | select(.uid == "merge_sort" and .best) | .model != "constant" and .r_square > 0.5] | all' true && break
done
"$SONDE" collect memory -q -o ex-memory.json -- "$EX/sort" 5000 >/dev/null
check "make run's example under the memory collector: its allocations are recorded" \
	jq -e '.stats.memory.allocations > 0' ex-memory.json
"$SONDE" collect time -q -r 3 -o ex-time.json -- "$EX/sort" 5000
run report ex-trace.json ex-memory.json ex-time.json -o ex.html
check "report of make run's profiles: exit 0" [ "$rc" = 0 ]
check "report: no 'not in baseline' rows (unlike profiles are not compared)" sh -c '! grep -q "not in baseline" ex.html'
check "report: each profile opens with its answer, its facts last" \
	python3 -c "
import re,sys
h=open('ex.html').read()
secs=re.findall(r'<section id=\"profile-\d+\".*?</section>', h, re.S)
sys.exit(not (len(secs) == 3 and all(s.index('class=\"answer\"') < s.index('class=\"summary') < s.index('class=\"facts\"') for s in secs)))"
check "report: the memory answer is heaptrack's (peak, leaked)" sh -c 'grep -q "<b>peak heap</b>" ex.html && grep -q "<b>leaked</b>" ex.html'
check "report: the time answer is the wall time" grep -q "<b>wall time</b>" ex.html
run report ex-time.json ex-time.json -o same.html
check "report: like with like is compared" grep -q 'section id="comparison-1"' same.html
check "chart titles read as phrases" sh -c '! grep -Eq ">[^<]*( of sum| of mean|amounttimestamp)" ex.html'
check "the time-per-size axis names the size's unit" grep -q "size (elements)" ex.html
# (0.98-0.995 on an idle machine; before sizes were recorded, a constant fit of
# R² 0. Calls preempted on a loaded 2-core machine under a sanitizer are
# outliers enough to take it below 0.8 (seen once in CI), so the bar is the
# curve, not the noise: not constant, R² > 0.5)
check "make run's example records sizes: a real curve (best not constant, R² > 0.5)" \
	jq_eq ex-trace.json '[.models[] | select(.uid == "merge_sort" and .best) | .model != "constant" and .r_square > 0.5] | all' true
run show ex-trace.json scatter -o sc.svg
check "scatter: one panel per resource and metric" [ "$(grep -c '<g class="panel">' sc.svg)" = 2 ]
check "scatter: the legend gives each model's formula, coefficients with units and R²" \
	grep -q "linear: y = b0 + b1·x, b0 = [-0-9.]* [nµm]*s, b1 = [0-9.]* [nµm]*s per element, R² = " sc.svg
check "scatter: the best model is marked" grep -q 'font-weight="bold">best, ' sc.svg
run export ex-memory.json -f folded
check "folded stacks: main is always the root when present" \
	sh -c 'printf "%s\n" "$1" | grep "main" | grep -qv "^main" && exit 1; exit 0' _ "$out"
# a site of no weight (its bytes zeroed) is left out, not drawn as a 0 line
jq '(.resource_type_map | to_entries | map(select(.value.summary.freed != null)) | .[0].key) as $k
    | .resource_type_map[$k].summary.bytes = 0' ex-memory.json >ex-memory0.json
run export ex-memory0.json -f folded
check "folded stacks: no zero-weight lines" sh -c '! printf "%s\n" "$1" | grep -q " 0$"' _ "$out"

# ---- a hyperfine-style comparison in one step --------------------------------------------------
mkdir cmp && cd cmp || exit 1
run collect time -r 5 -- "$PROGS/s-sleep" 20 ::: "$PROGS/s-sleep" 40
check "A ::: B: exit 0, two profiles" sh -c '[ "$1" = 0 ] && [ "$(ls s-sleep-time-*.json | wc -l)" = 2 ]' _ "$rc"
check "A ::: B: B ran about 2× slower than A, with its error" \
	has "$err" "'$PROGS/s-sleep 40' ran [12]\.[0-9][0-9] ± 0\.[0-9][0-9] × slower than '$PROGS/s-sleep 20'"
# the verdict is a test over 5 runs of each: on a loaded machine one slow run
# can leave it unsure ("maybe"); measured again up to twice before it counts
tries=1
while ! has "$err" "check: severe degradation" && [ $tries -lt 3 ]; do
	rm -f s-sleep-time-*.json
	run collect time -r 5 -- "$PROGS/s-sleep" 20 ::: "$PROGS/s-sleep" 40
	tries=$((tries + 1))
done
check "A ::: B: check's verdict (attempts: $tries)" has "$err" "check: severe degradation"
# the README's glob: two profiles of one program match it, each is shown under its name
run show s-sleep-time-*.json
check "show GLOB: both profiles, each under its name" \
	sh -c '[ "$1" = 0 ] && [ "$(printf "%s\n" "$2" | grep -c "^== s-sleep-time-.*json$")" = 2 ]' _ "$rc" "$out"
run show s-sleep-time-*.json table -f json
check "show GLOB -f json: one document per show, exit 2" [ "$rc" = 2 ]
run show s-sleep-time-*.json tabel
check "show GLOB VIEW: a mistyped view is still named" sh -c '[ "$1" = 2 ] || exit 1; printf "%s" "$2" | grep -q "is not\|unknown\|cannot"' _ "$rc" "$err"
cd .. || exit 1
run collect memory -- true ::: true
check "::: under another collector: exit 2" [ "$rc" = 2 ]
finish
