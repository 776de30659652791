#!/bin/sh
# Signals and processes: SIGINT mid-series, timeouts, leftovers; no zombie or orphan.
. "$SRC/tests/e2e/lib.sh"

# interrupt SIGNAL SECONDS ERRFILE SONDE-ARGS...: run sonde in the background, send it
# SIGNAL after SECONDS, wait; its status goes to $rc, its stderr to ERRFILE
interrupt() {
	sig=$1 after=$2 errfile=$3
	shift 3
	"$SONDE" "$@" >/dev/null 2>"$errfile" &
	pid=$!
	sleep "$after"
	kill "-$sig" $pid
	wait $pid
	rc=$?
}

# SIGINT after a few runs: the profile keeps the completed runs, exit 130
interrupt INT 0.75 int.err collect time -q -r 50 -o int.json -- "$PROGS/s-sleep" 100
check "SIGINT: exit 130" [ "$rc" = 130 ]
check "SIGINT: says interrupted" grep -q "interrupted by Interrupt after" int.err
check "SIGINT: profile written" [ -f int.json ]
check "SIGINT: marked interrupted" jq_eq int.json .stats.interrupted true
check "SIGINT: completed runs kept" jq_eq int.json '.stats.runs >= 3 and .stats.runs < 50' true
check "SIGINT: runs match the amounts" jq_eq int.json \
	'.stats.runs == (.resources | to_entries[0].value.amount | length)' true
check "SIGINT: warning recorded" jq_eq int.json '[.stats.warnings[].code] | index("interrupted") != null' true
# (this run's target only: other tests run s-sleep at the same time)
check "SIGINT: no s-sleep left" [ -z "$(pgrep -fx "$PROGS/s-sleep 100" || true)" ]
check "SIGINT: profile matches the schema" validate int.json

# a target that ignores SIGINT and SIGTERM: killed 5 s after (as timeout -k does),
# or at once on a second signal; never waited on forever
# (a sleep of a length no other process on the machine has: this script's pid in it)
DEAF_SLEEP="sleep 60.$$"
printf '%s\n' "trap \"\" INT TERM; $DEAF_SLEEP" >deaf.sh
start=$(date +%s)
interrupt INT 0.5 deaf.err collect time -q -r 1 -o deaf.json -- sh deaf.sh
end=$(date +%s)
check "a target deaf to SIGINT: sonde still ends, exit 130 ($((end - start)) s)" \
	sh -c '[ "$0" = 130 ] && [ "$1" -lt 20 ]' "$rc" "$((end - start))"
check "... the profile is written" [ -f deaf.json ]
"$SONDE" collect time -q -r 1 -o deaf2.json -- sh deaf.sh >/dev/null 2>&1 &
pid=$!
sleep 0.5
start=$(date +%s)
kill -INT $pid
sleep 0.2
kill -INT $pid
wait $pid
rc=$?
end=$(date +%s)
check "a second SIGINT kills a deaf target at once ($((end - start)) s)" \
	sh -c '[ "$0" = 130 ] && [ "$1" -lt 3 ]' "$rc" "$((end - start))"
# (the exact command line: a shell elsewhere whose script says the same is not the target's)
check "... no sleep left behind" [ -z "$(pgrep -x -f "$DEAF_SLEEP" || true)" ]

# --timeout kills the whole group, records it, stops the series
start=$(date +%s%N)
run collect time -q -r 3 -t 0.3 -o to.json -- "$PROGS/s-sleep" 5000
end=$(date +%s%N)
check "timeout: exit 1" [ "$rc" = 1 ]
check "timeout: says timed out" has "$err" "timed out"
check "timeout: killed promptly" [ $(((end - start) / 1000000)) -lt 3000 ]
check "timeout: recorded" jq_eq to.json .stats.timed_out true
check "timeout: signal 9 recorded" jq_eq to.json .stats.exit_status.signal 9
check "timeout: warning" jq_eq to.json '[.stats.warnings[].code] | index("timed-out") != null' true

# a target that leaves a child behind: killed and reaped, and said so
run collect time -q -r 2 -o orphan.json -- "$PROGS/s-orphan"
check "leftover: exit 0" [ "$rc" = 0 ]
check "leftover: counted" jq_eq orphan.json .stats.leftover_processes 2
check "leftover: warned" jq_eq orphan.json '[.stats.warnings[].code] | index("leftover-processes") != null' true
check "leftover: nothing left running" [ -z "$(pgrep -f "$PROGS/s-orphan" || true)" ]

# a run that is not measured by the series when the user stops it early
interrupt TERM 0.3 early.err collect time -q -r 3 -o early.json -- "$PROGS/s-sleep" 2000
check "SIGTERM in the first run: exit 130" [ "$rc" = 130 ]
check "SIGTERM in the first run: 0 runs, profile written" jq_eq early.json .stats.runs 0
check "SIGTERM: target gone" [ -z "$(pgrep -f "$PROGS/s-sleep 2000" || true)" ]
finish
