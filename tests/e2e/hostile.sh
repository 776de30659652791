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
