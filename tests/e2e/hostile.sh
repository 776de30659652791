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

# A full disk under the event log: the target neither hangs nor crawls, the
# profile keeps what was written, and what was lost is counted and said.
if [ "$(id -u)" = 0 ] && mkdir full && mount -t tmpfs -o size=2m tmpfs full 2>/dev/null; then
	TMPDIR=$WORK/full run collect memory -q -o full.json -- timeout 60 "$PROGS/m-many" 2000000
	umount full
	check "full disk: the run ends, exit 0 (not the 60 s timeout: $rc)" [ "$rc" = 0 ]
	check "full disk: said in one line" has "$err" "the event log could not be written (No space left on device)"
	check "full disk: what was written is kept" [ "$(jq .stats.memory.allocations full.json)" -gt 0 ]
	check "full disk: the rest is counted as dropped" [ "$(jq .stats.dropped_events full.json)" -gt 0 ]
else
	skip "full disk" "mounting a small tmpfs needs root"
fi
finish
