#!/bin/sh
# The trace collector's ebpf engine, on a real kernel: uprobes and uretprobes on
# the same programs as the instrument engine's tests (their hooks are glibc's
# empty ones here), with the same known answers; USDT pairs; sizes from
# sonde_trace_size() and --size-arg; sampling, depth, rules; the errors.
. "$SRC/tests/e2e/lib.sh"
. "$SRC/tests/e2e/trace-lib.sh"

if ! "$SONDE" version --features | grep -q '^ebpf yes'; then
	echo "1..0 # SKIP this sonde is built without the ebpf engine (libbpf-dev, clang, bpftool)"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP the ebpf engine needs root"
	exit 0
fi
if [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "1..0 # SKIP the kernel has no BTF (/sys/kernel/btf/vmlinux)"
	exit 0
fi

# ---- known counts, as with the instrument engine -------------------------------------------
run collect trace -e ebpf -o calls.json -- "$PROGS/t-calls"
check "collect trace -e ebpf exits 0" [ "$rc" = 0 ]
check "profile matches the schema" validate calls.json
check "the engine is recorded" jq_eq calls.json .stats.trace.engine ebpf
check "the report is printed" has "$err" "calls 2090 in 1 thread(s) of 1 process(es)"
check "fib(15): 1973 calls" [ "$(calls calls.json fib)" = 1973 ]
check "mutual recursion: is_even 6, is_odd 5" [ "$(calls calls.json is_even),$(calls calls.json is_odd)" = "6,5" ]
check "leaf 100, main 1, nothing unmatched or lost" \
	[ "$(calls calls.json leaf),$(calls calls.json main),$(jq '.stats.trace.unmatched_exits + .stats.trace.lost' calls.json)" = "100,1,0" ]
check "fib is called by main and by fib" [ "$(parent calls.json fib)" = "fib,main" ]
check "sonde_trace_size, probed: sizes 10..50" [ "$(jq -c '.resources["sized#0"]["structure-unit-size"]' calls.json)" = "[10,20,30,40,50]" ]
check "probe cost calibrated per kind of first instruction" \
	[ "$(jq '.stats.trace.probe_hit_ns.emulated > 0 and .stats.trace.probe_hit_ns.single_stepped > 0 and .stats.trace.estimated_cost_ns > 0' calls.json)" = true ]
check "exclusive <= amount in every row" \
	[ "$(jq '[.resources[] | [.amount, .exclusive] | transpose[] | .[1] <= .[0]] | all' calls.json)" = true ]
run export calls.json --format perfetto -o calls.trace.json
check "perfetto: one slice per call, properly nested" \
	[ "$(jq '[.traceEvents[] | select(.ph == "X")] | length' calls.trace.json)" = 2090 ]
check "perfetto: slices nest properly" nested calls.trace.json

# ---- sizes, sampling, depth, rules ------------------------------------------------------------
run collect trace -e ebpf -q --size-arg fib:1 -o x.json -- "$PROGS/t-calls"
check "--size-arg fib:1: fib's sizes are its argument, 0..15" \
	[ "$(jq -c '.resources["fib#0"]["structure-unit-size"] | unique | [first, last, length]' x.json)" = "[0,15,16]" ]
run collect trace -e ebpf -q -g 10 -o x.json -- "$PROGS/t-calls"
check "-g 10: every 10th call (fib 198, leaf 10)" [ "$(calls x.json fib),$(calls x.json leaf)" = "198,10" ]
check "-g 10: the rest counted as sampled out" [ "$(jq '.stats.trace.sampled_out + .stats.trace.calls' x.json)" = 2090 ]
run collect trace -e ebpf -q --depth 2 -o x.json -- "$PROGS/t-calls"
check "--depth 2: main and its callees (108 calls)" jq_eq x.json .stats.trace.calls 108
run collect trace -e ebpf -q -s custom -F leaf -o x.json -- "$PROGS/t-calls"
check "custom -F leaf: only leaf" [ "$(jq -c '[.resource_type_map[].uid]' x.json)" = '["leaf"]' ]

# ---- threads, fork, longjmp, signals, exceptions --------------------------------------------
run collect trace -e ebpf -q -o threads.json -- "$PROGS/t-threads"
check "threads: 4000 calls of work in 4 threads, 5 threads" \
	[ "$(calls threads.json work),$(jq '[.resources["work#0"].thread[]] | unique | length' threads.json),$(jq .stats.trace.threads threads.json)" = "4000,4,5" ]
run collect trace -e ebpf -q -s custom -F work -o many.json -- "$PROGS/t-threads" 5000 2
check "5000 threads alive at once: all 10000 calls of work recorded, none left out" \
	[ "$(calls many.json work),$(jq '.stats.notes | length' many.json)" = "10000,0" ]
# a daemon still running when sonde stops: its 5 calls wait in its thread's batch,
# which sonde sends when it stops (te_flush), not at the daemon's exit 3 s later
run collect trace -e ebpf -q -s custom -F work -o daemon.json -- "$PROGS/h-daemon" "$WORK/d.ms" 5 300 3000
check "a daemon alive when sonde stops: its 5 calls of work, all recorded" \
	[ "$rc,$(calls daemon.json work)" = "0,5" ]
run collect trace -e ebpf -q -o fork.json -- "$PROGS/t-fork"
check "fork: 10 calls in the child, 5 in the parent" [ "$(calls fork.json in_child),$(calls fork.json in_parent)" = "10,5" ]
check "fork + exec: 3 processes followed" jq_eq fork.json .stats.trace.processes 3
check "fork: the child's inherited main is not its own (one main per image: t-fork's, t-calls')" \
	[ "$(jq '[.resource_type_map[] | select(.uid == "main") | .summary.calls] | @csv' fork.json)" = '"1,1"' ]
check "fork + exec: the exec'ed t-calls is followed (fib 10: 177 calls, 7 leaves)" \
	[ "$(calls fork.json fib),$(calls fork.json leaf)" = "177,7" ]
run collect trace -e ebpf -q -o exec.json -- "$PROGS/s-exec" "$PROGS/t-calls"
check "exec of another program: followed, exit 0" [ "$rc" = 0 ]
check "exec of another program: its calls are all there (fib 1973, leaf 100)" \
	[ "$(calls exec.json fib),$(calls exec.json leaf)" = "1973,100" ]
check "exec of another program: main of both programs" [ "$(calls exec.json main)" = 2 ]
run collect trace -e ebpf -q -o jmp.json -- "$PROGS/t-jmp"
check "longjmp: a, b, c end unwound" [ "$(jq .stats.trace.unwound jmp.json),$(calls jmp.json a),$(calls jmp.json c)" = "3,1,1" ]
check "longjmp: after() is outer's callee, not c's" [ "$(parent jmp.json after)" = outer ]
check "signal handler: 3 calls of in_handler under handler" [ "$(calls jmp.json in_handler),$(parent jmp.json in_handler)" = "3,handler" ]
run collect trace -e ebpf -q -o cxx.json -- "$PROGS/t-cxx"
check "C++ exceptions: refused before the run (exit 3), not aborted during it" [ "$rc" = 3 ]
check "... with one line naming the ways out" \
	sh -c "[ \"\$(printf '%s\n' \"\$1\" | grep -c .)\" = 1 ] && printf '%s' \"\$1\" | grep -q 'can throw C++ exceptions.*-e instrument.*-s custom -F FUNC'" _ "$err"
check "... and no profile" [ ! -e cxx.json ]
run collect trace -e ebpf -s custom -F main -o cxx.json -- "$PROGS/t-cxx"
check "C++ with chosen functions (-s custom -F main): runs, with a note" \
	sh -c '[ "$1" = 0 ] && printf "%s" "$2" | grep -q "can throw C++ exceptions"' _ "$rc" "$err"

# ---- USDT probes ------------------------------------------------------------------------------
run collect trace -e ebpf -s custom -u work -u 'load#loaded' -u 'sonde:tick' -o usdt.json -- "$PROGS/t-usdt"
check "USDT: collect exits 0" [ "$rc" = 0 ]
check "USDT: work pairs with work_end by name, 5 calls" [ "$(calls usdt.json sonde:work)" = 5 ]
check "USDT: load#loaded pairs explicitly, 3 calls" [ "$(calls usdt.json sonde:load)" = 3 ]
check "USDT: tick alone is 4 points of no duration" \
	[ "$(calls usdt.json sonde:tick),$(jq '.resource_type_map[] | select(.uid == "sonde:tick") | .summary.max' usdt.json)" = "4,0" ]
check "USDT: the tracer set tick's semaphore" has "$out" "tick enabled 4"
check "USDT: a pair's time is measured" [ "$(jq '.resource_type_map[] | select(.uid == "sonde:work") | .summary.min > 0' usdt.json)" = true ]

# ---- errors -----------------------------------------------------------------------------------
run collect trace -e ebpf -u nosuchprobe -o x2.json -- "$PROGS/t-usdt"
check "an unknown USDT probe: exit 2, one line" [ "$rc,$(printf '%s\n' "$err" | wc -l)" = "2,1" ]
check "... naming it" has "$err" "no USDT probe 'nosuchprobe'"
run collect trace -e ebpf -u 'a#b#c#d' -o x2.json -- "$PROGS/t-usdt"
check "a malformed -u spec: exit 2" [ "$rc" = 2 ]
run collect trace -e ebpf --size-arg fib:9 -o x2.json -- "$PROGS/t-calls"
check "--size-arg beyond the 6th argument: exit 2" [ "$rc" = 2 ]
run collect trace -e ebpf --size-arg nosuch:1 -o x2.json -- "$PROGS/t-calls"
check "--size-arg of an unknown function: exit 2, and no profile" all \
	'[ "$rc" = 2 ]' \
	'[ ! -e x2.json ]'
if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$SONDE" collect trace -e ebpf -o /tmp/x2.json -- "$PROGS/t-calls" \
		>/dev/null 2>"$WORK/.err"
	rc=$?
	check "not root: exit 3" [ "$rc" = 3 ]
	check "... and one line saying it needs root" has "$(cat "$WORK/.err")" "needs root"
else
	skip "not root: exit 3" "setpriv cannot drop to an unprivileged user here"
	skip "... and one line saying it needs root" "setpriv cannot drop to an unprivileged user here"
fi
run collect trace -o x2.json -- "$PROGS/s-exit" 0
check "a program without the hooks is traced with uprobes" \
	[ "$rc,$(jq -r .stats.trace.engine x2.json),$(calls x2.json main)" = "0,ebpf,1" ]
# ---- --with-usdt: every marker of the binary, paired as -u pairs them ---------------------
run collect trace -e ebpf -s custom --with-usdt -o wu.json -- "$PROGS/t-usdt"
check "--with-usdt: work (paired with work_end) 5, load 3, loaded 3, tick 4, and no work_end of its own" \
	all '[ "$rc" = 0 ]' \
	"[ \"\$(calls wu.json sonde:work),\$(calls wu.json sonde:load),\$(calls wu.json sonde:loaded),\$(calls wu.json sonde:tick),\$(calls wu.json sonde:work_end)\" = 5,3,3,4,0 ]"
run collect trace -e ebpf --with-usdt --no-usdt -o x6.json -- "$PROGS/t-usdt"
check "--with-usdt with --no-usdt: exit 2" [ "$rc" = 2 ]

# ---- -d: a probe on one instruction (Perun's dynamic probes) ------------------------------
# fib's second instruction, as objdump (the peer) decodes the program, runs once
# a call: 1973 hits; an offset inside that instruction is refused
if command -v objdump >/dev/null 2>&1 && "$SONDE" version --features | grep -q '^capstone yes'; then
	insns=$(objdump -d --no-show-raw-insn "$PROGS/t-calls" |
		sed -n '/^[0-9a-f]* <fib>:$/,/^$/p' | sed -n 's/^ *\([0-9a-f]*\):.*/\1/p')
	first=$(echo "$insns" | sed -n 1p)
	second=$(echo "$insns" | sed -n 2p)
	third=$(echo "$insns" | sed -n 3p)
	off=$((0x$second - 0x$first))
	run collect trace -e ebpf -s custom -d "fib+$off" -o dyn.json -- "$PROGS/t-calls"
	check "-d fib+$off (objdump's second instruction): 1973 hits, one a call of fib" \
		all '[ "$rc" = 0 ]' "[ \"\$(calls dyn.json probe:fib+$(printf 0x%x $off))\" = 1973 ]"
	run collect trace -e ebpf -s custom -d "0x$second#10" -o dyn10.json -- "$PROGS/t-calls"
	check "-d 0xADDRESS#10: the same instruction, every 10th hit (198 of 1973)" \
		all '[ "$rc" = 0 ]' "[ \"\$(calls dyn10.json probe:fib+$(printf 0x%x $off))\" = 198 ]"
	run collect trace -e ebpf -s custom -d "t-calls#fib+$off#10" -o dynp.json -- "$PROGS/t-calls"
	check "-d t-calls#fib+$off#10: the program named by its name as LIB (Perun's users' spelling), 198 hits" \
		all '[ "$rc" = 0 ]' "[ \"\$(calls dynp.json probe:fib+$(printf 0x%x $off))\" = 198 ]"
	if [ $((0x$third - 0x$second)) -gt 1 ]; then
		run collect trace -e ebpf -s custom -d "fib+$((off + 1))" -o x3.json -- "$PROGS/t-calls"
		check "-d inside an instruction: refused (exit 2), nothing run" \
			all '[ "$rc" = 2 ]' 'has "$err" "not the start of an instruction"' '[ ! -e x3.json ]'
	else
		skip "-d inside an instruction" "fib's second instruction is one byte long"
	fi
else
	skip "-d probes" "objdump (binutils) or capstone (libcapstone-dev) is missing"
fi
# A stripped program: its functions from its separate debug file, as gdb finds
# it (.gnu_debuglink beside it here; the build id under /usr/lib/debug for
# Debian's -dbgsym packages); static functions too, by name
if command -v objcopy >/dev/null && command -v strip >/dev/null; then
	cat >st.c <<'EOF2'
static int __attribute__((noinline)) twice(int x) { return 2 * x + (x & 1); }
int never(int x);
int never(int x) { return x + 1; }
int main(int argc, char **argv)
{
	int s = 0;

	(void)argv;
	for (int i = 0; i < 7; i++)
		s += twice(i + argc);
	return s == 12345;
}
EOF2
	cc -O1 -g -fno-inline -o st st.c && objcopy --only-keep-debug st st.debug &&
		strip --strip-all st && objcopy --add-gnu-debuglink=st.debug st
	run collect trace -e ebpf -o st.json -- ./st
	check "stripped, with its debug file: its static function traced by name (twice 7, main 1)" \
		all '[ "$rc" = 0 ]' '[ "$(calls st.json twice),$(calls st.json main)" = "7,1" ]'
	run collect trace -e ebpf -s custom -F never -o st3.json -- ./st
	check "a probed function never called: the profile's note says none was, and why that can be" \
		all '[ "$rc" = 0 ]' 'has "$(jq -r ".stats.notes | join(\" \")" st3.json)" "none of the 1 functions probed was called"'
	printf 'not the debug file' >st.debug
	run collect trace -e ebpf -o st2.json -- ./st
	check "... a debug file of another build is not read: nothing to probe (exit 2)" \
		all '[ "$rc" = 2 ]' 'has "$err" "no function to probe"'
else
	skip "stripped, with its debug file" "objcopy or strip (binutils) is missing"
	skip "... a debug file of another build is not read" "objcopy or strip (binutils) is missing"
fi
run collect trace -e ebpf -s custom -d nosuchfunc -o x4.json -- "$PROGS/t-calls"
check "-d on a function that does not exist: exit 2, named" \
	all '[ "$rc" = 2 ]' 'has "$err" "no function named nosuchfunc"'
run collect trace -d fib -o x5.json -- "$PROGS/t-calls"
check "-d with the instrument engine: refused, exit 3, says to use -e ebpf" \
	all '[ "$rc" != 0 ]' 'has "$err" "needs the ebpf engine"'
finish
