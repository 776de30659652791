#!/bin/sh
# Conformance of `sonde collect trace` with uftrace: both record the same
# program, and compare.py compares the calls of every function and of every
# call path. The instrument engine on -finstrument-functions builds (-O0 and
# -O2); the ebpf engine on -pg builds at -O2 (sibling calls, .cold parts,
# -pg's start-up functions), which uftrace reads through mcount.
# The one deliberate difference (cf-jmp) is stated where it is tested.
. "$SRC/tests/conformance/lib.sh"
need_peer uftrace

# same NAME ENGINE COMPARE-OPTIONS PROGRAM ARGS...: uftrace and sonde agree
same() {
	name=$1 engine=$2 opts=$3
	shift 3
	rm -rf ud tr.json
	if ! uftrace record --no-libcall -d ud "$@" >/dev/null 2>uftrace.err; then
		not_ok "$name: uftrace record failed"
		sed 's/^/# /' uftrace.err
		return
	fi
	# the program's functions, as uftrace --no-libcall (uftrace-corpus.py compares the
	# library calls)
	libcall=
	[ "$engine" = instrument ] && libcall=--no-libcall
	# shellcheck disable=SC2086
	if ! timeout 120 "$SONDE" collect trace -e "$engine" -s all $libcall -o tr.json -- "$@" \
		>/dev/null 2>sonde.err; then
		not_ok "$name: sonde collect trace failed"
		sed 's/^/# /' sonde.err
		return
	fi
	# shellcheck disable=SC2086
	show_cmp "$name: the same calls as uftrace" "$name: sonde and uftrace differ" \
		trace ud tr.json $opts
}

P=$PROGS
for o in "" -O2; do
	same "recursion$o" instrument "" "$P/cf-recurse$o"
	same "signal handler$o" instrument "" "$P/cf-signal$o"
	same "fork, then exec$o" instrument "" "$P/cf-fork$o"
	same "8 threads$o" instrument "" "$P/cf-threads$o" 8 5
	same "dlopen'ed library's functions by name$o" instrument "" "$P/cf-dlopen$o" "$P/libcf-plugin.so"
	# at -O2, middle() and inner() are inlined into host() and share its frame
	same "functions inlined into their caller$o" instrument "" "$P/cf-inline$o"
	check "inlined functions: none ended as if a longjmp had left it$o" \
		jq_eq tr.json .stats.trace.unwound 0
	# its first calls come from a pre-init function, before getenv works:
	# neither tool can record those, both record the rest
	same "its own malloc, set up before any constructor$o" instrument "" "$P/cf-ownmalloc$o"
done
same "C++ exceptions, templates, containers" instrument "" "$P/cf-cxx"
same "C++ exceptions, templates, containers-O2 (inlined)" instrument "" "$P/cf-cxx-O2"
same "1000 threads alive at once" instrument "" "$P/cf-threads" 1000 3

# Deliberate difference: uftrace 0.13 nests the calls made after a longjmp under
# the frames longjmp abandoned (main;jumper;deep;big_frame); sonde ends those
# frames (counted as unwound) and nests the calls under main, where they run.
# The counts per function agree; the paths are checked against the program.
for o in "" -O2; do
	same "longjmp: calls per function$o" instrument --counts-only "$P/cf-jmp$o"
	"$SONDE" export tr.json -f folded --weight calls >jmp.folded 2>/dev/null
	check "longjmp: big_frame and small_frame are main's children$o" \
		grep -qx 'main;big_frame 3' jmp.folded
	check "longjmp: nothing nests under the abandoned frames$o" \
		sh -c "test -s jmp.folded && ! grep -q 'deep;' jmp.folded"
	check "longjmp: the abandoned frames (jumper, deep; 3 times) counted as unwound$o" jq_eq tr.json .stats.trace.unwound 6
done

# A function left out (sonde --exclude, uftrace --hide on the same recording's
# program): the calls it made are its caller's, one node per function, in both.
# Deliberate difference: sonde keeps the left-out calls' own time in their
# caller's self time, so that the folded stacks still add up to the caller's
# total (e2e-trace checks that); uftrace report drops it from every self time.
rm -rf uw
if uftrace record --no-libcall -d uw "$P/t-walk" 100 4 >/dev/null 2>&1 &&
	"$SONDE" collect trace -q --exclude '^walk$' -o tw.json -- "$P/t-walk" 100 4 &&
	"$SONDE" export tw.json -f folded --weight calls >tw.folded; then
	peer=$(uftrace graph -d uw -H walk 2>/dev/null | sed -n 's/.*(\([0-9]*\)) leaf$/\1/p' | head -1)
	mine=$(sed -n 's/^main;leaf \([0-9]*\)$/\1/p' tw.folded)
	check "walk left out: leaf is main's callee, $peer calls in uftrace's graph (--hide), $mine in sonde's (--exclude)" \
		all '[ "$peer" = 500 ]' '[ "$mine" = 500 ]' '[ "$(wc -l <tw.folded)" = 2 ]'
else
	not_ok "walk left out: uftrace or sonde failed on t-walk"
fi

if ! "$SONDE" version --features | grep -q '^ebpf yes'; then
	skip "ebpf engine against uftrace on -pg builds" "this sonde is built without the ebpf engine"
elif [ "$(id -u)" != 0 ]; then
	skip "ebpf engine against uftrace on -pg builds" "the ebpf engine needs root"
elif [ ! -r /sys/kernel/btf/vmlinux ]; then
	skip "ebpf engine against uftrace on -pg builds" "the kernel has no BTF"
else
	same "ebpf: sibling calls and .cold parts (-O2 -pg)" ebpf "" "$P/cf-tail-pg" 5 cold
	same "ebpf: mutual recursion by tail calls (-O2 -pg)" ebpf "" "$P/cf-recurse-pg"
	"$SONDE" export tr.json -f folded --weight calls >pg.folded 2>/dev/null
	check "ebpf: -pg's start-up functions are not traced" \
		sh -c "test -s pg.folded && ! grep -Eq '__gmon_start__|atexit|\\.cold' pg.folded"
fi
finish
