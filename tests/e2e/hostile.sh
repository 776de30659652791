#!/bin/sh
# End to end: targets that attack sonde. h-scribble writes over the rings it
# shares with sonde (the header with the geometry, the descriptors, the data)
# while both collectors record it: sonde must end with its documented exit
# code and one line saying what happened, never with a signal, and never copy
# where the target's numbers point.
. "$(dirname "$0")/lib.sh"

for c in memory trace; do
	run collect $c -o "h-$c.json" -- "$PROGS/h-scribble" 6
	check "$c: a target that scribbles over its rings does not crash sonde (exit $rc)" [ "$rc" -lt 128 ]
	check "$c: exit 0, the target's own status" [ "$rc" = 0 ]
	check "$c: one line says the target wrote over the rings" has "$err" "the target wrote over the header of the rings"
	check "$c: the profile is written and valid" validate "h-$c.json"
done
# Profiles whose call data is cyclic or deep: refused with one line, or folded
run collect trace -q -o calls.json -- "$PROGS/t-calls"
jq '.trace.contexts[1][1] = .trace.contexts[2][0] | .trace.contexts[2][1] = .trace.contexts[1][0]' \
	calls.json >cyc.json
NOT_LOADABLE="cyc.json" # (made so: finish does not count it)
for c in "show cyc.json graph" "show cyc.json flamegraph -o f.svg" "show calls.json diff cyc.json -o d.svg" \
	"export cyc.json --format folded" "report cyc.json -o r.html"; do
	# shellcheck disable=SC2086
	run $c
	check "cyclic contexts: '$c' exits 1 with one line" \
		sh -c '[ "$0" = 1 ] && [ "$(printf "%s\n" "$1" | grep -c .)" = 1 ]' "$rc" "$err"
done
check "... saying so" has "$err" "trace.contexts form a cycle"
run collect trace -q -o deep.json -- "$PROGS/t-deep" 100000
check "a 100 000-deep recursion is recorded" [ "$(jq '.stats.trace.calls' deep.json)" -gt 100000 ]
for c in "show deep.json graph" "export deep.json --format folded" "show deep.json flamegraph -o f.svg" \
	"report deep.json -o r.html"; do
	# shellcheck disable=SC2086
	timeout 60 "$SONDE" $c >deep.out 2>deep.err
	rc=$?
	check "100 000 deep: '$c' ends (exit $rc), output under 4 MB" \
		sh -c '[ "$0" = 0 ] && [ "$(wc -c <deep.out)" -lt 4000000 ]' "$rc"
done
"$SONDE" export deep.json --format folded >deep.folded
check "100 000 deep: folded stacks stop at 512 frames, the rest in one frame" \
	grep -q '\[99490 deeper frames\] [0-9]' deep.folded

# Names with terminal controls (an OSC that retitles the window, a C1 CSI): on
# a terminal they are shown, not obeyed; into a pipe they pass byte for byte.
jq '.trace.functions[1].name = "is\u001b]0;pwned\u0007_even\u009b31m" | .header.cmd = "evil\u001b[2J"' \
	calls.json >esc.json
if command -v script >/dev/null; then
	script -qec "'$SONDE' show esc.json graph" /dev/null >tty.out 2>&1
	check "a terminal gets no escape character from names" sh -c '! grep -q "$(printf "\033")" tty.out'
	check "... and sees them shown: \\x1b]0;pwned\\x07 and \\u009b" \
		grep -qF 'is\x1b]0;pwned\x07_even\u009b31m' tty.out
	script -qec "'$SONDE' show esc.json" /dev/null >tty.out 2>&1
	check "the command line in a table header too" grep -qF 'evil\x1b[2J' tty.out
else
	skip "names with terminal controls" "no script(1) to give sonde a terminal"
fi
"$SONDE" show esc.json graph >pipe.out
check "into a pipe, names pass unchanged" grep -q "$(printf "is\033]0;pwned\007_even")" pipe.out

# Targets that outlive their recording. h-daemon's daemon makes 3 000 000
# allocations in instrumented calls (about 0.2 s alone): once sonde stops
# reading, because the run is over or because sonde was killed, the runtime must
# stop recording and get out of the way, not wait on a reader that will never
# come (which took 20 s and more).
wait_file() { i=0; while [ ! -s "$1" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; }
for c in memory trace; do
	rm -f "d-$c.ms"
	# (the target lingers 0.2 s: a daemon still in its group when it exits is killed)
	run collect $c -q -o "d-$c.json" -- "$PROGS/h-daemon" "$WORK/d-$c.ms" 3000000 200
	check "$c: a daemonising target: exit 0 ($rc${err:+: $err})" [ "$rc" = 0 ]
	check "$c: a daemonising target: a valid profile" validate "d-$c.json"
	wait_file "d-$c.ms"
	check "$c: the daemon, unrecorded after the run, runs on at its own pace ($(cat "d-$c.ms" 2>/dev/null) ms < 5000 ms)" \
		sh -c '[ -s "$0" ] && [ "$(cat "$0")" -lt 5000 ]' "d-$c.ms"
	rm -f "k-$c.ms"
	"$SONDE" collect $c -q -o "k-$c.json" -- "$PROGS/h-daemon" "$WORK/k-$c.ms" 3000000 1500 >/dev/null 2>&1 &
	sleep 0.5
	kill -9 $!
	wait $! 2>/dev/null
	wait_file "k-$c.ms"
	check "$c: sonde killed while the daemon records: it runs on at its own pace ($(cat "k-$c.ms" 2>/dev/null) ms < 5000 ms)" \
		sh -c '[ -s "$0" ] && [ "$(cat "$0")" -lt 5000 ]' "k-$c.ms"
done
# What sonde started dies with sonde (PR_SET_PDEATHSIG): no orphan runs on
for c in time memory counters; do
	"$SONDE" collect $c -q -o "o-$c.json" -- "$PROGS/s-sleep" 7321 >/dev/null 2>&1 &
	sleep 0.5
	before=$(pgrep -fc "^[^ ]*s-sleep 7321")
	kill -9 $!
	wait $! 2>/dev/null
	sleep 0.3
	check "$c: sonde killed: its target ($before running) is gone with it" \
		sh -c '[ "$0" = 1 ] && ! pgrep -f "^[^ ]*s-sleep 7321" >/dev/null' "$before"
done

# A target under ulimit -v (100 MB here; m-known needs 3 MB alone): the
# runtime maps the rings its threads use, not the whole area (2 GB and more),
# so the target is recorded where it runs natively.
if command -v prlimit >/dev/null; then
	run collect memory -q -o ulimit.json -- prlimit --as=100000000 "$PROGS/m-known"
	check "ulimit -v: the run works (exit $rc)" [ "$rc" = 0 ]
	check "ulimit -v: both processes are recorded (prlimit and the target)" \
		jq_eq ulimit.json .stats.memory.processes 2
else
	skip "ulimit -v" "no prlimit(1)"
fi

# sonde killed mid-run leaves no temporary file: the captured output is an
# unnamed file until it is published, the trace rules live in a memfd.
mkdir -p kill9
TMPDIR=$WORK/kill9 "$SONDE" collect time -q -r 100000 --capture-output -o kill9/p.json -- "$PROGS/s-echo" hi \
	>/dev/null 2>&1 &
pid=$!
TMPDIR=$WORK/kill9 "$SONDE" collect trace -q -s custom -F work -o kill9/t.json -- \
	"$PROGS/h-daemon" "$WORK/kill9.ms" 1 5000 >/dev/null 2>&1 &
pid2=$!
sleep 1
kill -9 $pid $pid2
wait $pid $pid2 2>/dev/null
check "sonde killed: no temporary left ($(ls -A kill9 | tr '\n' ' '))" [ -z "$(ls -A kill9)" ]

# A setuid target ignores LD_PRELOAD: nothing can be recorded, and it is said
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	d=$(mktemp -d /tmp/sonde-suid-XXXXXX)
	chmod 777 "$d"
	cp "$PROGS/m-known" "$d/" && chmod 4755 "$d/m-known"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$SONDE" collect memory -o "$d/s.json" \
		-- "$d/m-known" >/dev/null 2>suid.err
	rc=$?
	check "setuid target: the run works (exit $rc)" [ "$rc" = 0 ]
	check "setuid target: 'nothing was recorded' is said" grep -q "nothing was recorded" suid.err
	rm -rf "$d"
else
	skip "setuid target" "needs root (a setuid copy run by another user)"
fi

# Another user's link where sonde writes, in a shared sticky directory (/tmp):
# a name sonde chose never replaces an entry, and a named file (-o) does not
# follow another user's link there (the kernel's rule, whatever
# fs.protected_symlinks says), so root is never made to replace a file of the
# planter's choosing. Needs root (to own a link as another user).
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	mkdir -p shared && chmod 1777 shared
	printf 'precious\n' >victim
	ln -s "$WORK/victim" shared/sonde-report.html && chown -h nobody shared/sonde-report.html
	(cd shared && "$SONDE" report "$WORK/calls.json" >../rep.out 2>&1)
	check "report's default name beside a planted link: written beside it, the link's target untouched" \
		all 'grep -qx precious victim' 'grep -q "report: sonde-report-1.html" rep.out' \
		'grep -q "<html" shared/sonde-report-1.html'
	ln -s "$WORK/victim" shared/calls-flamegraph.svg && chown -h nobody shared/calls-flamegraph.svg
	if command -v script >/dev/null; then
		cp calls.json shared/calls.json
		script -qec "cd '$WORK/shared' && '$SONDE' show calls.json flamegraph" /dev/null >svg2.out 2>&1
		check "show's SVG name on a terminal beside a planted link: calls-flamegraph-1.svg, the target untouched" \
			all 'grep -qx precious victim' 'grep -q "calls-flamegraph-1.svg written" svg2.out' \
			'grep -q "<svg" shared/calls-flamegraph-1.svg'
	else
		skip "show's SVG name beside a planted link" "script(1) is not installed"
	fi
	ln -s "$WORK/victim" shared/out.html && chown -h nobody shared/out.html
	run report calls.json -o shared/out.html
	check "-o through another user's link in a sticky world-writable directory: refused (exit 1), the target untouched" \
		all '[ "$rc" = 1 ]' 'has "$err" "Permission denied"' 'grep -qx precious victim'
	ln -s "$WORK/created-by-link" shared/dangling.html && chown -h nobody shared/dangling.html
	run report calls.json -o shared/dangling.html
	check "... a dangling one too: nothing created where it points" \
		all '[ "$rc" = 1 ]' '[ ! -e created-by-link ]'
	ln -s "$WORK/mine.html" shared/own.html
	run report calls.json -o shared/own.html
	check "... but one's own link there is followed (the file it names is written, the link kept)" \
		all '[ "$rc" = 0 ]' '[ -L shared/own.html ]' 'grep -q "<html" mine.html'
	ln -s "$WORK/shared/out.html" chain.html
	run report calls.json -o chain.html
	check "... and a chain of links is checked link by link (the planted one refused)" \
		all '[ "$rc" = 1 ]' 'grep -qx precious victim'
else
	skip "links planted by another user" "needs root and a user 'nobody'"
fi

# A full disk under the event log: the target neither hangs nor crawls, the
# recording stops there, the profile keeps what was written, and what was lost
# is said.
if [ "$(id -u)" = 0 ] && mkdir full && mount -t tmpfs -o size=2m tmpfs full 2>/dev/null; then
	TMPDIR=$WORK/full run collect memory -o full.json -- timeout 60 "$PROGS/m-many" 2000000
	umount full
	check "full disk: the run ends, exit 0 (not the 60 s timeout: $rc)" [ "$rc" = 0 ]
	check "full disk: said in one line" has "$err" "the event log could not be written (No space left on device)"
	check "full disk: what was written is kept" [ "$(jq .stats.memory.allocations full.json)" -gt 0 ]
	check "full disk: the recording stopped, the target went on, and how long is said" \
		has "$err" "recording stopped [0-9.]* s into run 1 and the target ran its last [0-9.]* s unrecorded"
	check "full disk: the target's events after that are not in the profile" \
		[ "$(jq .stats.memory.allocations full.json)" -lt 2000000 ]
else
	skip "full disk" "mounting a small tmpfs needs root"
fi
finish
