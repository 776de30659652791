#!/bin/sh
# The time collector: runs, warm-ups, automatic repeat, parameters, output modes.
. "$SRC/tests/e2e/lib.sh"

run collect time -q -r 3 -w 2 -o p.json -- "$PROGS/s-spin" 1
check "collect exits 0" [ "$rc" = 0 ]
check "profile written" [ -f p.json ]
check "profile matches the schema" validate p.json
check "3 measured runs" jq_eq p.json .stats.runs 3
check "2 warm-up runs" jq_eq p.json .stats.warmup_runs 2
check "every resource has 3 amounts" jq_eq p.json '[.resources[] | .amount | length] | unique | join(",")' 3
check "orders are 1 2 3" jq_eq p.json '.resources["'"$PROGS"'/s-spin 1#0"].order | join(",")' "1,2,3"
check "real time is positive" jq_eq p.json '.resources["'"$PROGS"'/s-spin 1#0"].amount | all(. > 0)' true
check "exit status recorded 0" jq_eq p.json '.resources["'"$PROGS"'/s-spin 1#8"].amount | join(",")' "0,0,0"
check "units declared" jq_eq p.json '.header.units.time' ns
check "format_version 1" jq_eq p.json .format_version 1
check "machine described" jq_eq p.json '.machine.cpus > 0' true
check "params recorded" jq_eq p.json '.collector_info.params.repeat' 3

# the resource layout, with times stripped
jq -r '.resource_type_map | to_entries[] | "\(.key) \(.value.type) \(.value.subtype)"' p.json |
	sed "s|$PROGS|PROGS|" >layout.txt
cat >layout.expected <<EOT
PROGS/s-spin 1#0 time real
PROGS/s-spin 1#1 time user
PROGS/s-spin 1#2 time sys
PROGS/s-spin 1#3 memory max-rss
PROGS/s-spin 1#4 count minor-faults
PROGS/s-spin 1#5 count major-faults
PROGS/s-spin 1#6 count voluntary-switches
PROGS/s-spin 1#7 count involuntary-switches
PROGS/s-spin 1#8 status exit-status
EOT
check "resource layout" diff -u layout.expected layout.txt

# without -r: at least 10 runs and at least 3 s
run collect time -q -o auto.json -- "$PROGS/s-exit"
check "automatic repeat: at least 10 runs" jq_eq auto.json '.stats.runs >= 10' true
check "automatic repeat: at least 3 s measured" \
	jq_eq auto.json '[.resources["'"$PROGS"'/s-exit#0"].amount[]] | add >= 3e9' true
# (the rule, whatever this machine's load made of the runs: a mean under 5 ms is warned about)
check "short runs warned" jq_eq auto.json \
	'([.resource_type_map | to_entries[] | select(.value.subtype == "real") | .key][0]) as $k |
	 ([.stats.warnings[]?.code] | index("short-run") != null) == (([.resources[$k].amount[]] | add / length) < 5e6)' true

# --parameter: one workload per value, {n} substituted, sizes recorded
run collect time -q -r 2 --parameter n=1,3 -o par.json -- "$PROGS/s-spin" "{n}"
check "parameter: exit 0" [ "$rc" = 0 ]
check "parameter: workloads" jq_eq par.json '[.resource_type_map[] | select(.subtype=="real") | .workload] | join(",")' "1,3"
check "parameter: structure-unit-size" jq_eq par.json '[.resources[] | ."structure-unit-size" // empty | .[]] | unique | join(",")' "1,3"
check "parameter: header workload" jq_eq par.json .header.workload "1,3"
run collect time -q -r 1 --parameter n=2..6:2 -o range.json -- "$PROGS/s-spin" "{n}"
check "parameter range 2..6:2" jq_eq range.json .header.workload "2,4,6"
check "parameter profile matches the schema" validate par.json range.json
# --clock: which clock real is on, recorded; process-cpu is the target's user + sys
run collect time -q -r 3 --clock process-cpu -o pcpu.json -- "$PROGS/s-spin" 20
check "--clock process-cpu: real is user + sys, run by run, and the profile says which clock" \
	all '[ "$rc" = 0 ]' "jq -e '.collector_info.params.clock == \"process-cpu\"' pcpu.json" \
	"jq -e '(.resource_type_map | to_entries | map({(.value.subtype): .key}) | add) as \$k |
		[.resources[\$k.real].amount, .resources[\$k.user].amount,
		 .resources[\$k.sys].amount] | transpose | all(.[0] == .[1] + .[2])' pcpu.json"
for clk in boottime realtime; do
	run collect time -q -r 2 --clock $clk -o clk.json -- "$PROGS/s-sleep" 200
	check "--clock $clk: a 200 ms sleep reads 200 to 400 ms, the clock recorded" \
		all '[ "$rc" = 0 ]' "jq -e '.collector_info.params.clock == \"$clk\"' clk.json" \
		"jq -e '[.resources[] | select(.amount[0] > 1e8) | .amount[]] | length == 2 and
			all(. >= 2e8 and . < 4e8)' clk.json"
done
check "the default clock, monotonic, is recorded too" jq -e '.collector_info.params.clock == "monotonic"' par.json
# --time-unit: the table prints every time in that unit, the profile keeps ns
run collect time -r 2 --time-unit ms -o tu.json -- "$PROGS/s-sleep" 20
check "--time-unit ms: collect's table in ms (unit ms, x.xxx ± x.xxx), the profile in ns" \
	all '[ "$rc" = 0 ]' 'printf "%s\n" "$err" | grep -E -q "real +ms +[0-9]+\.[0-9]{3} ± [0-9]+\.[0-9]{3} "' \
	"jq -e '[.resources[] | .amount[] | select(. > 1.5e7)] | length >= 2' tu.json"
run show tu.json --time-unit us
check "show --time-unit us: the same profile in µs (the unit column says so)" \
	printf "%s\n" "$out" | grep -E -q "real +µs +[0-9]+\.[0-9]{3} ± "
# several names: tuples, each name replaced by its part, each a column
run collect time -q -r 1 --parameter n,tag=2:a,4:b -o tup.json -- sh -c 'echo "$1" >>tup.txt' x "{n}-{tag}"
check "parameter n,tag=2:a,4:b: each run got its parts, the sizes the first, a column each" \
	all '[ "$rc" = 0 ]' '[ "$(sort -u tup.txt | tr "\n" " ")" = "2-a 4-b " ]' \
	"jq -e '[.resources[] | [.\"structure-unit-size\"[0], .n[0], .tag[0]]] | unique ==
		[[2, 2, \"a\"], [4, 4, \"b\"]]' tup.json"
run collect time -q -r 1 --parameter n,tag=2:a,4 -- /bin/true
check "a tuple without a part for each name: exit 2" [ "$rc" = 2 ]
run collect time -q -r 1 --parameter 'n=3' -o str.json -- sh -c 'printf %s "$1" >str.txt' x '{n:string}'
check "{n:string}: a string of n letters and digits" \
	all '[ "$rc" = 0 ]' '[ "$(wc -c <str.txt)" = 3 ]' '! grep -q "[^A-Za-z0-9]" str.txt' 

# output handling
run collect time -q -r 2 --discard-output -o s.json -- "$PROGS/s-echo" hi
check "suppress: nothing from the command" [ -z "$(printf '%s' "$out" | grep 'out hi')" ]
run collect time -q -r 2 --capture-output -o c.json -- "$PROGS/s-echo" hi
check "capture: shown on stdout" has "$out" "out hi"
check "capture: shown on stderr" has "$err" "err hi"
check "capture: kept beside the profile" [ "$(grep -c 'hi' c.out)" = 4 ]
check "capture: named in metadata" jq_eq c.json .metadata.captured_output c.out
run collect time -q -r 2 --output-handling capture -o oh.json -- "$PROGS/s-echo" hi
check "--output-handling capture (Perun's spelling): kept beside the profile" \
	all '[ "$rc" = 0 ]' '[ "$(grep -c hi oh.out)" = 4 ]'
run collect time -q -r 2 --output-handling suppress -o ohs.json -- "$PROGS/s-echo" hi
check "--output-handling suppress: nothing from the command" \
	all '[ "$rc" = 0 ]' '! has "$out" "out hi"'
run collect time -q -r 1 --output-handling capture --discard-output -- "$PROGS/s-echo" hi
check "--output-handling capture with --discard-output: exit 2" [ "$rc" = 2 ]
run collect time -q -r 1 --show-output --input /etc/hostname -o in.json -- /bin/cat
check "--input feeds stdin" has "$out" "$(cat /etc/hostname)"

# --prepare runs before every run
run collect time -q -r 3 --prepare "echo x >> prep.log" -o pr.json -- "$PROGS/s-exit"
check "prepare ran before each run" [ "$(wc -l <prep.log)" = 3 ]

# default output: the current directory, named bin-collector-timestamp.json
run collect time -r 1 -- "$PROGS/s-exit"
check "default name in the current directory" [ -n "$(ls s-exit-time-*.json 2>/dev/null)" ]
check "prints where the profile went" has "$err" "profile written to 's-exit-time-"

# the summary table after collect
run collect time -r 2 -o t.json -- "$PROGS/s-exit"
check "table printed" has "$err" "mean ± σ"
check "table has real" has "$err" "  real "

# two kinds of run (every other one 100 ms slower: far above what a loaded machine adds) are
# named as such, not as outliers
printf '%s\n' 'if [ -e flip ]; then rm flip; sleep 0.1; else touch flip; fi' >flip.sh
run collect time -r 20 -o bi.json -- sh flip.sh
# (10 and 10 on an idle machine; the tests beside it can push a fast run into the slow group)
check "bimodal runs: said, with both groups" has "$err$out" "the runs form two groups: [0-9]* around .* and [0-9]* around"
check "bimodal runs: not reported as outliers" jq_eq bi.json '[.stats.warnings[]?.code] | index("outliers")' null
check "bimodal runs: the warning has its fix" jq_eq bi.json '.stats.warnings[] | select(.code == "bimodal") | .fix | test("measure each kind apart")' true
# (one kind of run, a tail or a few stray runs are not two groups: tests/unit/test-stats.c,
# on fixed samples; real runs on a loaded machine can be either)

# max-rss needs sonde-spawn: without it (runtime dir elsewhere) it is left out, and said
SONDE_RUNTIME_DIR="$WORK" run collect time -r 2 -o norss.json -- "$PROGS/s-exit"
check "no sonde-spawn: the run still works" [ "$rc" = 0 ]
check "no sonde-spawn: no max-rss recorded" \
	[ "$(jq '[.resource_type_map[] | select(.subtype == "max-rss")] | length' norss.json)" = 0 ]
check "no sonde-spawn: said, with the reason" has "$out$err" "max-rss <not supported>: sonde-spawn was not found"

# one sonde-spawn serves a series; killed in the middle, the next run starts another, and
# none is left once sonde is done
# (runs of 0.2 s: the helper is idle but for ~0.1 ms of each, so the kill finds it waiting;
# 25 of them, so that the polls below end well before the series on a loaded machine)
"$SONDE" collect time -q -r 25 -o helper.json -- sleep 0.2 </dev/null >/dev/null 2>helper.err &
sp=$!
# the helpers seen over the first runs, every 20 ms: one pid, there all along
# (a helper per run would show as several pids, or as gaps between runs)
seen=
for _ in $(seq 25); do
	p=$(pgrep -P "$sp" -x sonde-spawn) && seen="$seen $p"
	sleep 0.02
done
npid=$(printf '%s\n' $seen | sort -u | grep -c .)
polls=$(printf '%s\n' $seen | grep -c .)
h1=$(printf '%s\n' $seen | head -n 1)
check "a series' runs come from one sonde-spawn, a child of sonde ($npid pid(s), in $polls of 25 polls over the first runs)" \
	all '[ "$npid" = 1 ]' '[ "$polls" -ge 20 ]'
# running (a zombie, not yet waited for, answers kill -0)
running() { st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1); [ -n "$st" ] && [ "$st" != Z ]; }
alive=no
running "$sp" && alive=yes
[ -n "$h1" ] && kill -KILL "$h1"
h2=
for _ in $(seq 100); do
	h2=$(pgrep -P "$sp" -x sonde-spawn | grep -vx "$h1") && break
	running "$sp" || break
	sleep 0.05
done
wait "$sp"
src=$?
runs=$(jq '[.resources[] | .amount | length] | max' helper.json 2>/dev/null)
check "sonde-spawn killed in a series: the series goes on (exit $src$(head -c 300 helper.err | tr '\n' ' '))" [ "$src" = 0 ]
check "... every run measured" [ "$runs" = 25 ]
if [ "$alive" = no ]; then
	skip "... by another sonde-spawn" "the series ended before the polls did (a loaded machine)"
	skip "... which is gone once sonde has exited" "no second sonde-spawn was started"
else
	check "... by another sonde-spawn" [ -n "$h2" ]
	check "... which is gone once sonde has exited" sh -c '! kill -0 "$1" 2>/dev/null' _ "${h2:-1}"
fi
# sonde-spawn killed at any moment, as often while it makes a target (between its
# clone and its report) as not: 200 short runs, the helper killed at four moments in
# each of 8 series (the old runner failed about one kill in eight). A helper that dies before it names the target is replaced and
# asked again, the target it may have made killed first: every run measured once.
bad=
for i in 1 2 3 4 5 6 7 8; do
	# -i: a target caught before its exec still bears the helper's name, and a kill
	# that finds one fails that run (measured, as a failed run), not the series
	"$SONDE" collect time -q -i -r 200 -o kill$i.json -- /bin/true </dev/null >/dev/null \
		2>kill$i.err &
	sp=$!
	for k in 1 2 3 4; do
		sleep "0.0$(( (i * 7 + k * 3 + $$) % 9 + 1 ))"
		# the oldest sonde-spawn child of sonde: the helper (its targets come after it)
		h=$(pgrep -o -P "$sp" -x sonde-spawn) && kill -KILL $h
	done
	wait "$sp"
	krc=$?
	kruns=$(jq '[.resources[] | .amount | length] | max' kill$i.json 2>/dev/null)
	[ "$krc" = 0 ] && [ "$kruns" = 200 ] ||
		bad="$bad [series $i: exit $krc, $kruns runs: $(head -c 120 kill$i.err | tr '\n' ' ')]"
done
check "sonde-spawn killed while it makes targets: 8 series of 200 runs, each run measured once$bad" \
	[ -z "$bad" ]
# hyperfine's habits: a quoted command line goes through /bin/sh (-N: it does not), and
# --setup / --cleanup run once around the series, --prepare before each run
printf '3\n1\n2\n' >nums.txt
run collect time -q -r 2 -o shell.json 'sort -n nums.txt'
check "a quoted command line runs through the shell: exit 0, every run measured" \
	all '[ "$rc" = 0 ]' '[ "$(jq -r .header.cmd shell.json)" = "/bin/sh -c '"'"'sort -n nums.txt'"'"'" ]' \
	'[ "$(jq "[.resources[] | .amount | length] | max" shell.json)" = 2 ]'
run collect time -N -q -r 2 -o noshell.json 'sort -n nums.txt'
check "-N: the quoted words are a program's name: not found, exit 127" \
	all '[ "$rc" = 127 ]' '[ ! -e noshell.json ]' 'has "$err" "command not found"'
run collect time -q -r 3 -w 1 -o steps.json --setup 'echo setup >>steps.log' \
	--prepare 'echo prepare >>steps.log' --cleanup 'echo cleanup >>steps.log' -- true
check "--setup once before the warm-up, --prepare before each run, --cleanup once after" \
	all '[ "$rc" = 0 ]' '[ "$(tr '"'"'\n'"'"' " " <steps.log)" = "setup prepare prepare prepare prepare cleanup " ]'
run collect time -q -r 2 -o nosetup.json --setup 'exit 3' -- true
check "a failing --setup: exit 1, one line, no runs, no profile" \
	all '[ "$rc" = 1 ]' 'has "$err" "--setup .exit 3. failed (exit 3)"' '[ ! -e nosetup.json ]'
finish
