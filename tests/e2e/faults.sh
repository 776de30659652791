#!/bin/sh
# Allocation faults (after SQLite's test_malloc and curl's torture tests): each
# command of the loaders, views and store is run once to count its allocation
# calls, then again with the 1st, 2nd, ... of them failing (tests/programs/
# failmalloc.c, preloaded): every run ends in its answer or in one clear error
# line, never in a crash, and writes nothing partial.
. "$SRC/tests/e2e/lib.sh"

SHIM="$PROGS/libfailmalloc.so"
case "${SANITIZE:-none}" in
none) ;;
*)
	skip "allocation faults" "a sanitized sonde allocates through the sanitizer, which a preloaded malloc cannot stand in for ($SANITIZE)"
	echo "1..$n"
	exit 0
	;;
esac
[ -f "$SHIM" ] || { echo "Bail out! $SHIM was not built"; exit 1; }

git init -q repo && cd repo && echo a >a && git add a && git commit -qm a || exit 1
"$SONDE" init >/dev/null
"$SONDE" collect time -q -r 5 -o t.json -- "$PROGS/s-exit"
"$SONDE" collect memory -q -o m.json -- "$PROGS/m-known"

# torture NAME OUTPUT ARGS...: OUTPUT (or -) must not exist after a failed run,
# and a run that succeeds must give the answer of the run without faults
# (stdout and OUTPUT the same): no allocation failure is swallowed into a
# shorter answer. Every call of the first 80 is made to fail, then 80 spread
# over the rest (40 and 40 for collect) under `make test-full` (TEST_FULL);
# `make test` tries fewer (12 and 12, 6 and 6); every call when
# SONDE_FAULTS_ALL is set, for a long run by hand.
# same A B: the same text, but for the time a report says it was written
# (a profile, *.json, measured again: the same fields, each list as long, but
# for its resources and warnings, which depend on the run: an extra major fault,
# a slow first run)
same() {
	case "$1" in
	*.json) [ "$(shape "$1")" = "$(shape "$2")" ] ;;
	*) [ "$(sed 's/written [0-9-]* [0-9:]* [+0-9]*//' "$1")" = "$(sed 's/written [0-9-]* [0-9:]* [+0-9]*//' "$2")" ] ;;
	esac
}
shape() {
	python3 -c '
import json, sys
def walk(x, p):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from walk(v, p + "." + k)
    elif isinstance(x, list):
        yield p + "[%d]" % len(x)
        for v in x:
            yield from walk(v, p + "[]")
    else:
        yield p
print("\n".join(sorted(set(k for k in walk(json.load(open(sys.argv[1])), "")
                          if not k.startswith((".resource", ".stats.warnings"))))))' "$1"
}
if [ -n "${TEST_FULL:-}" ]; then
	FIRST=80 SPREAD=80 FIRST_COLLECT=40
else
	FIRST=12 SPREAD=12 FIRST_COLLECT=6
fi
torture() {
	name=$1 output=$2
	shift 2
	rm -f count
	LD_PRELOAD="$SHIM" SONDE_FAIL_COUNT="$WORK/repo/count" "$SONDE" "$@" >ref.txt 2>ref.err
	rc0=$?
	total=$(cat count 2>/dev/null || echo 0)
	[ "$output" = - ] || mv "$output" ref.out 2>/dev/null
	if [ "$rc0" != 0 ] || [ "$total" -lt 10 ]; then
		not_ok "$name: runs without faults (exit $rc0, $total allocation calls counted): $(head -3 ref.err)"
		return
	fi
	bad="" k=1 tried=0
	while [ "$k" -le "$total" ]; do
		LD_PRELOAD="$SHIM" SONDE_FAIL_AT=$k "$SONDE" "$@" >fo.txt 2>fe.txt
		rc=$?
		tried=$((tried + 1))
		if [ "$rc" -ge 128 ]; then
			bad="$bad call $k: killed by signal $((rc - 128));"
		elif [ "$rc" = 0 ]; then
			same fo.txt ref.txt || bad="$bad call $k: exit 0, another answer on stdout;"
			[ "$output" = - ] || same "$output" ref.out ||
				bad="$bad call $k: exit 0, another '$output';"
		else
			[ "$(grep -c . fe.txt)" -ge 1 ] && grep -q '^sonde: ' fe.txt ||
				bad="$bad call $k: exit $rc without an error line;"
			[ "$output" = - ] || [ ! -e "$output" ] ||
				bad="$bad call $k: exit $rc left '$output';"
		fi
		[ "$output" = - ] || rm -f "$output"
		if [ "$k" -lt "$FIRST" ] || [ -n "${SONDE_FAULTS_ALL:-}" ]; then
			k=$((k + 1))
		else
			k=$((k + (total - FIRST) / SPREAD + 1))
		fi
	done
	if [ -z "$bad" ]; then
		ok "$name: $tried of $total allocation calls failed in turn: an answer or one clear error each, nothing partial"
	else
		not_ok "$name: $tried of $total allocation calls failed in turn:$bad"
	fi
}

torture "show (a time profile, its table)" - show t.json
torture "show (a memory profile)" - show m.json
torture "export -f csv -o" out.csv export t.json -f csv -o out.csv
torture "export -f folded -o (memory)" out.txt export m.json -f folded -o out.txt
torture "report -o (HTML)" r.html report t.json -o r.html
torture "show bars -o (an SVG chart)" b.svg show t.json bars -o b.svg
torture "status (the store's index)" - status
# (each of these runs a target twice: fewer of its calls, half as many)
FIRST=$FIRST_COLLECT SPREAD=$FIRST_COLLECT
torture "collect time -r 2 -o (a profile of the same shape)" c.json collect time -q -r 2 \
	-o c.json -- "$PROGS/s-exit"
finish
