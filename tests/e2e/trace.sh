#!/bin/sh
# The trace collector (instrument engine): exact call counts and nesting from
# programs with known answers; recursion, mutual recursion, threads, fork +
# exec, longjmp, a C++ exception, a signal handler; sizes; strategies, rules
# and filters; the report and graph views; folded and Perfetto exports.
. "$SRC/tests/e2e/lib.sh"
. "$SRC/tests/e2e/trace-lib.sh"


# ---- known counts ------------------------------------------------------------------------
run collect trace -o calls.json -- "$PROGS/t-calls"
check "collect trace exits 0" [ "$rc" = 0 ]
check "profile matches the schema" validate calls.json
check "profile type is mixed" jq_eq calls.json .header.type mixed
check "the report is printed" has "$err" "calls 2090 in 1 thread(s)"
check "fib(15): 1973 calls" [ "$(calls calls.json fib)" = 1973 ]
check "mutual recursion: is_even 6, is_odd 5" [ "$(calls calls.json is_even),$(calls calls.json is_odd)" = "6,5" ]
check "leaf: 100 calls" [ "$(calls calls.json leaf)" = 100 ]
check "main: 1 call, nothing unmatched" [ "$(calls calls.json main),$(jq .stats.trace.unmatched_exits calls.json)" = "1,0" ]
check "stats count every call" jq_eq calls.json .stats.trace.calls 2090
check "at most 16 bytes per call" [ "$(jq '.stats.trace.bytes_per_call <= 16' calls.json)" = true ]
check "a calibrated cost per call" [ "$(jq '.stats.trace.cost_ns_per_call > 0 and .stats.trace.estimated_cost_ns > 0' calls.json)" = true ]
run show calls.json table
check "show table: rows name their function, times in time units (the unit column: time)" has "$out" "  fib  *time *[0-9.]* [nµm]s ±"
run show calls.json
tr_out=$out
run show calls.json report
check "default show: the report (as collect printed it), then the warnings" all '[ "${tr_out#"$out"}" != "$tr_out" ]' 'has "$out" " fib$"'
# the report's bars say each function's total as the table does: fib's 1973 calls nest in
# one another, and only the outermost count (the sum of its rows would be many times more)
tab=$(printf '%s\n' "$out" | awk '$NF == "fib" { print $1 " " $2; exit }')
run report calls.json -o rep.html
bar=$(grep -o '<title>fib: [^<]*' rep.html | head -n 1 | sed 's/^<title>fib: //; s/ (.*//')
check "report: fib's bar is its total in the table ($bar, $tab)" all '[ -n "$tab" ]' '[ "$bar" = "$tab" ]'
run collect trace -q --max-slices 10 -o few.json -- "$PROGS/t-calls"
run export few.json -f perfetto -o few.perfetto.json
check "export -f perfetto: the calls past --max-slices are said (2080 of 2090)" \
	all '[ "$rc" = 0 ]' 'has "$err" "warning: export: 2080 calls of .* are not on the timeline"'
run check calls.json calls.json
check "check: a function's times in time units, not raw ns" \
	all '[ "$rc" = 0 ]' 'has "$out" "  fib  *total  *no change  *[0-9.]* [nµm]s  *[0-9.]* [nµm]s"'
check "sonde_trace_size: sizes 10..50" [ "$(jq -c '.resources["sized#0"]["structure-unit-size"]' calls.json)" = "[10,20,30,40,50]" ]
check "without a size, x is the call's ordinal" [ "$(jq -c '.resources["leaf#0"]["structure-unit-size"][0:3]' calls.json)" = "[1,2,3]" ]

# Rows beyond --max-rows: the models still see every size
run collect trace -q --max-rows 1000 -o sizes.json -- "$PROGS/t-sizes" 20000
run postprocess sizes.json regression
check "20 000 sizes, --max-rows 1000: the model spans [1, 20000]" \
	jq_eq sizes.json '[.models[] | select(.uid == "work" and .best) | .x_start, .x_end] | @csv' '1,20000'
check "20 000 distinct sizes: a row per call, nothing said to be sampled" \
	jq_eq sizes.json '[.stats.trace.rows, (.stats.trace | has("rows_sampled"))] | @csv' '20001,false'
run collect trace --max-rows 1000 -o sizes10.json -- "$PROGS/t-sizes" 2000 10
check "2000 sizes x 10 calls: the sample is said on the terminal" has "$out$err" "are a sample"
check "... and in the profile" jq_eq sizes10.json '.stats.trace.rows_sampled | [.functions, .calls, .max_rows] | @csv' '1,20000,1000'
check "... every size has a row" \
	jq_eq sizes10.json '[.resources["work#0"]["structure-unit-size"] | unique | length, max] | @csv' '2000,2000'
check "... and its aggregate over every call" \
	jq_eq sizes10.json '.resource_type_map["work#0"].summary.sizes | [(.size | length), (.calls | add), .size[-1]] | @csv' '2000,20000,2000'
check "sampled profile validates" validate sizes10.json
run postprocess sizes10.json regression
check "postprocess says the model fits a sample" has "$err" "are a sample"
check "columns: amount, exclusive, timestamp, call-order, thread" \
	[ "$(jq -c '.resources["fib#0"] | [has("amount"), has("exclusive"), has("timestamp"), has("call-order"), has("thread")] | all' calls.json)" = true ]
check "exclusive <= amount in every row" \
	[ "$(jq '[.resources[] | [.amount, .exclusive] | transpose[] | .[1] <= .[0]] | all' calls.json)" = true ]
check "fib is called by main and by fib" [ "$(parent calls.json fib)" = "fib,main" ]

# ---- views and exports ------------------------------------------------------------------
run show calls.json report --sort calls -n 2 -f csv
check "report --sort calls: fib first" [ "$(printf '%s\n' "$out" | sed -n 2p | cut -d, -f1,2)" = "\"fib\",1973" ]
run show calls.json graph
check "graph shows the nested contexts" has "$out" "      fib"
check "graph: the columns line up whatever the unit (µs is one character)" \
	all 'aligned "$out" exclusive' 'aligned "$out" "     calls"'
run show calls.json graph -f json
check "graph edges: main -> leaf 100 calls" [ "$(printf '%s' "$out" | jq '.[] | select(.caller == "main" and .callee == "leaf") | .calls')" = 100 ]
run export calls.json --format folded
check "folded: main;fib;fib stacks" has "$out" "main;fib;fib "
check "folded weights sum to main's inclusive time" \
	[ "$(printf '%s\n' "$out" | awk '{s += $NF} END {print s}')" = "$(jq '.resource_type_map[] | select(.uid == "main") | .summary.total' calls.json)" ]
run export calls.json --format perfetto -o calls.trace.json
check "perfetto export exits 0" [ "$rc" = 0 ]
check "perfetto: thread and process names" [ "$(jq '[.traceEvents[] | select(.ph == "M") | .name] | sort | unique | join(",")' calls.trace.json)" = '"process_name,thread_name"' ]
check "perfetto: one slice per call" [ "$(jq '[.traceEvents[] | select(.ph == "X")] | length' calls.trace.json)" = 2090 ]
check "perfetto: slices nest properly" nested calls.trace.json
run export "$PROGS/../tests/programs/missing.json" --format perfetto
check "export of a missing profile fails" [ "$rc" != 0 ]

# ---- threads, fork + exec, longjmp, exceptions, signals ---------------------------------------
run collect trace -q -o threads.json -- "$PROGS/t-threads"
check "threads: 4000 calls of work in 4 threads" [ "$(calls threads.json work),$(jq '[.resources["work#0"].thread[]] | unique | length' threads.json)" = "4000,4" ]
check "threads: 5 threads" jq_eq threads.json .stats.trace.threads 5
run collect trace -q -o fork.json -- "$PROGS/t-fork"
check "fork + exec: 3 process images" jq_eq fork.json .stats.trace.processes 3
check "fork: 10 calls in the child, 5 in the parent" [ "$(calls fork.json in_child),$(calls fork.json in_parent)" = "10,5" ]
check "exec: the new image's fib(10) and 7 leaves" [ "$(calls fork.json fib),$(calls fork.json leaf)" = "177,7" ]
check "fork: the child's inherited calls are not its own" [ "$(calls fork.json main)" = 2 ]
run collect trace -q -o fork20.json -- "$PROGS/t-fork" 20
check "fork 20 children (more images than the first allocation): 41 images" jq_eq fork20.json .stats.trace.processes 41
check "fork 20 children: 200 calls in the children, 5 in the parent, 20 fib(10)" [ "$(calls fork20.json in_child),$(calls fork20.json in_parent),$(calls fork20.json fib)" = "200,5,3540" ]
run collect trace -q -o jmp.json -- "$PROGS/t-jmp"
check "longjmp: a, b, c end unwound" [ "$(jq .stats.trace.unwound jmp.json),$(calls jmp.json a),$(calls jmp.json c)" = "3,1,1" ]
check "longjmp: after() is outer's callee, not c's" [ "$(parent jmp.json after)" = outer ]
check "signal handler: 3 calls of in_handler under handler" [ "$(calls jmp.json in_handler),$(parent jmp.json in_handler)" = "3,handler" ]
check "longjmp: nothing unmatched or unfinished" [ "$(jq '.stats.trace.unmatched_exits + .stats.trace.unfinished' jmp.json)" = 0 ]
run collect trace -q -o cxx.json -- "$PROGS/t-cxx"
check "exception: thrower, middle, catcher once each" [ "$(calls cxx.json 'thrower()'),$(calls cxx.json 'middle()'),$(calls cxx.json 'catcher()')" = "1,1,1" ]
check "exception: after() is catcher's callee" [ "$(parent cxx.json 'after()')" = "catcher()" ]

# ---- -pg programs (mcount), library calls at the PLT ------------------------------------------
run collect trace -q -o pg.json -- "$PROGS/t-calls-pg"
check "-pg: the instrument engine by default, the same calls (fib 1973, leaf 100, 2090 in all)" \
	all '[ "$rc" = 0 ]' 'jq_eq pg.json .stats.trace.engine instrument' \
	'[ "$(calls pg.json fib),$(calls pg.json leaf),$(jq .stats.trace.calls pg.json)" = "1973,100,2090" ]'
check "-pg: fib is called by main and by fib, sizes from sonde_trace_size" \
	all '[ "$(parent pg.json fib)" = "fib,main" ]' \
	'[ "$(jq -c '"'"'.resources["sized#0"]["structure-unit-size"]'"'"' pg.json)" = "[10,20,30,40,50]" ]'
check "-pg: no cost per call is claimed (the calibration times the -finstrument-functions hooks)" \
	jq -e '.stats.trace.cost_ns_per_call == null' pg.json
run collect trace -q -s custom -F fib -o x.json -- "$PROGS/t-calls-pg"
check "-pg: custom -F fib: only fib, 1973 calls" \
	[ "$(jq -c '[.resource_type_map[].uid]' x.json),$(calls x.json fib)" = '["fib"],1973' ]
run collect trace -q -o cxxpg.json -- "$PROGS/t-cxx-pg"
check "-pg, a C++ exception: thrower, middle, catcher once each, after() under catcher" \
	all '[ "$rc" = 0 ]' \
	'[ "$(calls cxxpg.json '"'"'thrower()'"'"'),$(calls cxxpg.json '"'"'middle()'"'"'),$(calls cxxpg.json '"'"'catcher()'"'"')" = "1,1,1" ]' \
	'[ "$(parent cxxpg.json '"'"'after()'"'"')" = "catcher()" ]'
run collect trace -q -s all -o lib.json -- "$PROGS/t-calls"
check "-s all: the program's library calls, at its PLT (printf once, under main)" \
	all '[ "$(calls lib.json printf),$(parent lib.json printf)" = "1,main" ]' \
	'[ "$(calls lib.json fib),$(jq .stats.trace.calls lib.json)" = "1973,2091" ]'
run collect trace -q -s all --no-libcall -o x.json -- "$PROGS/t-calls"
check "-s all --no-libcall: none of them" [ "$(calls x.json printf),$(jq .stats.trace.calls x.json)" = "0,2090" ]
run collect trace -q -s all -o cxxlib.json -- "$PROGS/t-cxx-pg"
check "-s all on a -pg C++ program that throws: its calls and its library calls" \
	all '[ "$rc" = 0 ]' '[ "$(calls cxxlib.json '"'"'thrower()'"'"')" = 1 ]' \
	'[ "$(calls cxxlib.json __cxa_allocate_exception)" = 1 ]'

# ---- strategies, rules, filters ----------------------------------------------------------------
run collect trace -q -s custom -F fib -o x.json -- "$PROGS/t-calls"
check "custom -F fib: only fib" [ "$(jq -c '[.resource_type_map[].uid]' x.json)" = '["fib"]' ]
run collect trace -q -g 10 -o x.json -- "$PROGS/t-calls"
check "-g 10: every 10th call (fib 198, leaf 10)" [ "$(calls x.json fib),$(calls x.json leaf)" = "198,10" ]
check "-g 10: the rest counted as sampled out" [ "$(jq '.stats.trace.sampled_out + .stats.trace.calls' x.json)" = 2090 ]
run collect trace -q -s u_sampled -F 'leaf#1' -o x.json -- "$PROGS/t-calls"
check "u_sampled with a rule: the rule wins (leaf 100, fib 99)" [ "$(calls x.json leaf),$(calls x.json fib)" = "100,99" ]
run collect trace -q --depth 1 -o x.json -- "$PROGS/t-calls"
check "--depth 1: only main" [ "$(jq -c '[.resource_type_map[].uid]' x.json)" = '["main"]' ]
run collect trace -q --exclude '^fib$' -o x.json -- "$PROGS/t-calls"
check "--exclude fib: no fib, its time is main's own" [ "$(calls x.json fib),$(jq '[.resource_type_map[] | select(.uid == "main") | .summary.self > 0] | all' x.json)" = "0,true" ]
run collect trace -q --filter '^is_' -o x.json -- "$PROGS/t-calls"
check "--filter ^is_: is_even and is_odd only" [ "$(jq -c '[.resource_type_map[].uid] | sort' x.json)" = '["is_even","is_odd"]' ]
# main is left out: is_even, its callee, hangs from the root (the profile names
# no context it does not hold, so sonde and other readers load it)
run show x.json
check "... the profile loads: its contexts' parents are contexts" all '[ "$rc" = 0 ]' \
	"jq -e '.trace.contexts | (map(.[0]) + [0]) as \$ids | all(.[]; .[1] as \$p | \$ids | index(\$p) != null)' x.json"
run export x.json --format folded
check "... is_even at the root of the folded stacks" \
	sh -c 'printf "%s\n" "$0" | grep -q "^is_even;is_odd;is_even "' "$out"
# walk left out between main and leaf: every leaf, at each depth, is main's
# callee in one context; walk's own time is main's, leaf's is not counted twice
run collect trace -q --exclude '^walk$' -o w.json -- "$PROGS/t-walk" 100 4
run export w.json --format folded
check "--exclude walk: main;leaf is one context of 500 calls, and the stacks sum to main's inclusive time" all \
	'[ "$rc" = 0 ]' \
	"jq -e '.trace.contexts | length == 2' w.json" \
	"jq -e '[.trace.functions | to_entries[] | select(.value.name == \"leaf\") | .key][0] as \$l |
		[.trace.contexts[] | select(.[2] == \$l)] | length == 1 and .[0][3] == 500' w.json" \
	"[ \"\$(printf '%s\\n' \"\$out\" | awk '{s += \$NF} END {print s}')\" = \"\$(jq '.resource_type_map[] | select(.uid == \"main\") | .summary.total' w.json)\" ]"
run collect trace -q --min-time 1ms -o x.json -- "$PROGS/t-calls"
check "--min-time 1ms: no leaf" [ "$(calls x.json leaf)" = 0 ]

# ---- a full ring that drops its oldest blocks -------------------------------------------------
# t-stall stops sonde before its first call, makes a million calls into a 1 MiB
# ring, lets sonde go on, and makes a million more: most of the first million,
# and the process's description with them, are dropped
run collect trace --drop-oldest --ring-mib 1 -q -o stall.json -- "$PROGS/t-stall" 1000000
check "--drop-oldest, the reader stopped: every call counted, recorded or dropped (2000001)" \
	all '[ "$rc" = 0 ]' \
	'jq -e ".stats.trace.calls + .stats.trace.dropped_calls == 2000001 and
		.stats.trace.dropped_calls > 0 and .stats.dropped_events == .stats.trace.dropped_calls" stall.json'
check "... and the process and its functions are known (its description sent again): leaf by name" \
	jq -e '.stats.trace.processes == 1 and ([.resource_type_map[].uid] | index("leaf") != null and
		all(startswith("?") | not))' stall.json

# ---- errors --------------------------------------------------------------------------------------
run collect trace -e instrument -o x2.json -- "$PROGS/s-exit" 0
check "-e instrument, a program without -finstrument-functions: exit 3" [ "$rc" = 3 ]
check "... with one clear line" has "$err" "finstrument-functions"
check "... and no profile" [ ! -e x2.json ]
run collect trace -e instrument -o x2.json -- "$PROGS/s-static"
check "-e instrument, a static program: exit 3" [ "$rc" = 3 ]
run collect trace -e instrument -u work -o x2.json -- "$PROGS/t-calls"
check "-u with the instrument engine: exit 3, naming the ebpf engine" [ "$rc,$(printf '%s' "$err" | grep -c 'needs the ebpf engine')" = "3,1" ]
run collect trace -F nosuchfunction -o x2.json -- "$PROGS/t-calls"
check "an -F rule that matches nothing: exit 2" [ "$rc" = 2 ]
check "... and says so" has "$err" "no function 'nosuchfunction'"
run collect trace --min-time soon -o x2.json -- "$PROGS/t-calls"
check "a bad --min-time: exit 2, one line" [ "$rc" = 2 ]
check "... saying what a duration is" has "$err" "expected a duration"
run collect trace --filter '(' -o x2.json -- "$PROGS/t-calls"
check "a bad --filter regex: one line" has "$err" "--filter '('"
run show calls.json memory
check "the memory view of a trace profile: exit 3" [ "$rc" = 3 ]
run collect time -q -o t.json -- "$PROGS/s-exit" 0
run show t.json report
check "the report of a time profile: exit 3" [ "$rc" = 3 ]
check "... because it needs a trace profile" has "$err" "needs a trace profile"
run export t.json --format perfetto
check "perfetto export of a time profile: its runs, a slice each" all \
	'[ "$rc" = 0 ]' \
	'printf "%s" "$out" | jq -e "[.traceEvents[] | select(.cat == \"run\")] |
		length >= 1 and all(.dur > 0)"'
run show t.json counters
check "a view a profile has nothing for: exit 3" [ "$rc" = 3 ]

# The target never sees sonde's variables; its children get them back, even
# those started with an environment of their own (posix_spawn) or by system().
run collect trace -o spawn.json -- "$PROGS/t-spawn"
check "posix_spawn with its own environment, then system: exit 0" [ "$rc" = 0 ]
check "both children traced: child_fn 2 calls" [ "$(calls spawn.json child_fn)" = 2 ]
check "3 processes" jq_eq spawn.json .stats.trace.processes 3
check "no process sees LD_PRELOAD or SONDE_*" \
	[ "$(printf '%s\n' "$out" | grep -c 'sees 0 variables of sonde')" = 3 ]
# Libraries named by -l or -f, found through the program's RUNPATH; only those
run collect trace -l libt-liba.so -o libs.json -- "$PROGS/t-libs"
check "-l a library found through RUNPATH: exit 0" [ "$rc" = 0 ]
check "-l libt-liba.so: its functions (liba_fn 1, liba_inner 2)" \
	[ "$(calls libs.json liba_fn),$(calls libs.json liba_inner)" = "1,2" ]
check "-l libt-liba.so: no other library's (libb_fn 0)" [ "$(calls libs.json libb_fn)" = 0 ]
check "-l: the program's functions still (main 1)" [ "$(calls libs.json main)" = 1 ]
run collect trace -F 'libt-libb.so#libb_inner' -o libs.json -- "$PROGS/t-libs"
check "-f LIB#FUNC through RUNPATH: exit 0" [ "$rc" = 0 ]
check "-f libt-libb.so#libb_inner: 4 calls, and main" \
	[ "$(calls libs.json libb_inner),$(calls libs.json main)" = "4,1" ]
check "-f libt-libb.so#libb_inner: nothing else of the libraries" \
	[ "$(calls libs.json libb_fn),$(calls libs.json liba_fn)" = "0,0" ]
printf '#!/bin/sh\nexec "%s"\n' "$PROGS/t-calls" >run.sh
chmod +x run.sh
run collect trace -o s.json -- ./run.sh
check "a script without -b: exit 1" [ "$rc" = 1 ]
check "... and a hint to name its program with -b" has "$err" "is a script: name the program it runs that is to be traced with -b FILE"
# swapcontext: each context keeps its calls; a returning context goes on in uc_link
run collect trace -o uctx.json -- "$PROGS/t-ucontext"
check "swapcontext: exit 0" [ "$rc" = 0 ]
"$SONDE" export uctx.json -f folded --weight calls >uctx.folded
check "swapcontext: the coroutine's calls nest in its own context (co_body;co_work 3)" \
	grep -qx 'co_body;co_work 3' uctx.folded
check "swapcontext: main's calls stay main's (main;resume 4, main;between 4)" \
	sh -c "grep -qx 'main;resume 4' uctx.folded && grep -qx 'main;between 4' uctx.folded"
check "swapcontext: nothing unwound, one context besides the thread" \
	jq_eq uctx.json '[.stats.trace.unwound, .stats.trace.ucontexts, .stats.trace.threads] | @csv' '0,1,1'
# dlopen by a bare name that only the program's RUNPATH finds: the runtime's
# dlopen hook must search as the program would
run collect trace -s all -o dlname.json -- "$PROGS/t-dlname"
check "dlopen by name through the program's RUNPATH: loads (exit 0)" \
	sh -c '[ "$1" = 0 ] && printf "%s" "$2" | grep -q "loaded by name"' _ "$rc" "$out"
check "... and its functions are named (libb_fn 1)" [ "$(calls dlname.json libb_fn)" = 1 ]
# --only-extract-cg (Perun's -cg): the static call graph, nothing run; the
# edges of the program's own functions are objdump's (the peer's decoding)
if "$SONDE" version --features | grep -q '^capstone yes' && command -v objdump >/dev/null 2>&1; then
	run collect trace -cg -o cg.json -- "$PROGS/t-calls"
	own='^(fib|is_even|is_odd|leaf|sized|main) '
	printf '%s\n' "$out" | grep -E "$own" | sort -u >cg.sonde
	objdump -d --no-show-raw-insn "$PROGS/t-calls" | awk '
		/^[0-9a-f]+ <.*>:$/ { f = $2; gsub(/[<>:]/, "", f) }
		/\tcall +[0-9a-f]+ </ { t = $NF; gsub(/[<>]/, "", t); sub(/\+0x[0-9a-f]+$/, "", t); print f " -> " t }' |
		grep -E "$own" | sort -u >cg.objdump
	check "--only-extract-cg: the edges of t-calls' own functions are objdump's ($(wc -l <cg.objdump) edges)" \
		all '[ "$rc" = 0 ]' '[ -s cg.objdump ]' 'cmp -s cg.sonde cg.objdump' \
		'grep -q "^fib -> fib$" cg.sonde' 'grep -q "^is_even -> is_odd$" cg.sonde' \
		'grep -q "^main -> printf@plt$" cg.sonde'
	diff cg.objdump cg.sonde | sed 's/^/# /'
	check "... and nothing was run (no profile written)" all '[ ! -e cg.json ]' 'has "$err" "nothing was run"'
else
	skip "--only-extract-cg" "capstone (libcapstone-dev) or objdump (binutils) is missing"
fi
# Perun's options for what sonde does not have: accepted, each with a note
run collect trace --stap-cache-off --watchdog --max-simultaneous-threads 8 -o noop.json -- "$PROGS/t-calls"
check "Perun's --stap-cache-off, --watchdog, --max-simultaneous-threads: accepted, a note says why each does nothing" \
	all '[ "$rc" = 0 ]' \
	"jq -e '[.stats.notes[] | select(test(\"^--(stap-cache-off|watchdog|max-simultaneous-threads) does nothing here: \"))] | length == 3' noop.json"
# Perun's -k / -z / --no-profile: the raw event log kept beside the profile
run collect trace -k -o kt.json -- "$PROGS/t-calls"
check "-k: the raw event log beside the profile, every byte the analysis read (stats.trace.log_bytes)" \
	all '[ "$rc" = 0 ]' '[ -s kt.json.events ]' \
	"[ \"\$(wc -c <kt.json.events)\" = \"\$(jq .stats.trace.log_bytes kt.json)\" ]"
check "-k: the kept log is the records, not the holes a fed log leaves (over a quarter of its bytes not zero: ~60 % in records)" \
	[ "$(tr -d '\000' <kt.json.events | wc -c)" -gt "$(($(wc -c <kt.json.events) / 4))" ]
run collect trace -z -o kz.json -- "$PROGS/t-calls"
check "-z: kept compressed (zstd), the same bytes once expanded" \
	all '[ "$rc" = 0 ]' '[ -s kz.json.events.zst ]' \
	"[ \"\$(zstd -dc kz.json.events.zst | wc -c)\" = \"\$(jq .stats.trace.log_bytes kz.json)\" ]"
run collect trace -np -o kn.json -- "$PROGS/t-calls"
check "-np (--no-profile): the raw log only, no profile, said" \
	all '[ "$rc" = 0 ]' '[ -s kn.json.events ]' '[ ! -e kn.json ]' 'has "$err" "no profile written"'
run collect trace --verbose-trace -o kv.json -- "$PROGS/t-calls"
check "--verbose-trace (Perun's -vt): one enter and one exit line per call (stats.trace.calls), and fib's 1973" \
	all '[ "$rc" = 0 ]' \
	"[ \"\$(grep -c \" enter \" kv.json.events.txt)\" = \"\$(jq .stats.trace.calls kv.json)\" ]" \
	"[ \"\$(grep -c \" exit \" kv.json.events.txt)\" = \"\$(jq .stats.trace.calls kv.json)\" ]" \
	"[ \"\$(grep -c \" exit .*t-calls+0x\$(nm \"\$PROGS/t-calls\" | sed -n 's/^0*\\([0-9a-f]*\\) T fib\$/\\1/p') \" kv.json.events.txt)\" = 1973 ]" \
	'[ ! -e kv.json.events ]'
# The calls are rebuilt while the target runs: 100 000 calls, then a second's
# sleep, so a follower of the log has them before the program ends (all but
# main's last block, which is published when main returns).
run collect trace -q -o pause.json -- "$PROGS/t-pause" 100000 1000
check "calls rebuilt while the target runs: >= 90 % of the log before it ended, leaf 100000" \
	all '[ "$rc" = 0 ]' '[ "$(calls pause.json leaf)" = 100000 ]' \
	"[ \"\$(jq '.stats.trace | .log_bytes_analysed_during_run * 10 >= .log_bytes * 9' pause.json)\" = true ]"
check "... and the analysis after it is a fraction of the analysis" \
	[ "$(jq '.stats.trace | .analysis_after_run_ns < .analysis_ns' pause.json)" = true ]
# What the follower has fed is not read again (no -k): the event log gives its
# pages back as it goes, so a long trace does not hold its whole log in memory
# (or on the disk). Seen from sonde's descriptor of the (unlinked) log during
# the pause; with -k the log keeps every byte (the checks above).
"$SONDE" collect trace -q -o fed.json -- "$PROGS/t-pause" 400000 1500 >/dev/null 2>&1 &
fsp=$!
held=0 wrote=0
for _ in $(seq 100); do
	sleep 0.05
	for fd in /proc/$fsp/fd/*; do
		case "$(readlink "$fd" 2>/dev/null)" in
		*sonde-trace-*)
			set -- $(stat -L -c '%b %B %s' "$fd" 2>/dev/null) 0 0 0
			held=$(($1 * $2)) wrote=$3
			;;
		esac
	done
	# the pause: the 400 000 calls (4.8 MB) are written and fed
	[ "$wrote" -gt 4000000 ] && [ "$held" -lt $((wrote / 4)) ] && break
done
wait "$fsp"
check "the log fed during the run gives its pages back ($held bytes held of $wrote written)" \
	all '[ "$wrote" -gt 4000000 ]' '[ "$held" -lt $((wrote / 4)) ]'
# The timeline's rows are written as the calls end; main's was open then and
# goes in its place when the profile is written.
timeline() { # PROFILE: the slices' count, main's place, depth and length, the starts in order
	jq -r '.trace as $t | ($t.functions | map(.name)) as $f | $t.slices |
		[length, ([.[] | $f[.[2]]] | index("main")), .[0][3],
		 (.[0][5] >= (.[1:] | map(.[5]) | add)),
		 ([.[] | .[4]] == ([.[] | .[4]] | sort))] | map(tostring) | join(" ")' "$1"
}
check "... its timeline: main first (depth 0, longer than every leaf together), 100000 leaves, in order of start" \
	[ "$(timeline pause.json)" = "100001 0 0 true true" ]
run collect trace -q --verbose-trace -o pausev.json -- "$PROGS/t-pause" 100000 0
check "--verbose-trace analyses after the run instead: nothing during it, the same calls" \
	all '[ "$rc" = 0 ]' '[ "$(calls pausev.json leaf)" = 100000 ]' \
	'[ "$(jq .stats.trace.log_bytes_analysed_during_run pausev.json)" = 0 ]'
# A target killed while the follower has its calls: every call recorded
# before is in the profile, main ends unfinished at its last event.
run collect trace -q -t 1 -o killed.json -- "$PROGS/t-pause" 100000 20000
check "a target killed by --timeout (exit 1): its 100000 calls are kept, main unfinished, all analysed during the run" \
	all '[ "$rc" = 1 ]' '[ "$(calls killed.json leaf)" = 100000 ]' \
	'[ "$(jq .stats.trace.unfinished killed.json)" = 1 ]' \
	"[ \"\$(jq '.stats.trace | .log_bytes_analysed_during_run * 10 >= .log_bytes * 9' killed.json)\" = true ]"
check "... main's slice, open until its last event, is first on the timeline" \
	[ "$(timeline killed.json)" = "100001 0 0 true true" ]
finish
