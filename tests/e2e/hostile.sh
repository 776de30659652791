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
finish
