#!/bin/sh
# The target's stdin and terminal are the user's, as under the peers (heaptrack,
# uftrace, perf): a run made once reads sonde's stdin (a pipe, a file, the
# terminal); a series reads /dev/null, or --input from its start, as hyperfine
# does. At a terminal the run's group is the foreground job for the run: it can
# read the terminal and set its modes, and job control (Ctrl-Z, fg, Ctrl-C,
# a job started with &) works as it does without sonde (terminal.py drives an
# interactive bash on a pseudo-terminal).
. "$SRC/tests/e2e/lib.sh"

printf 'one\ntwo\nthree\n' >three.txt

run collect memory -q -o pipe.json -- wc -l <three.txt
check "one run: the command reads sonde's stdin (wc -l of 3 lines: $out)" [ "$out" = 3 ]
printf 'a\nb\n' | "$SONDE" collect trace -q -o piped.json -- "$PROGS/t-calls" 1 >/dev/null 2>&1
rc=$?
check "one run, stdin a pipe: exit 0" [ "$rc" = 0 ]
lines=$(printf 'a\nb\n' | "$SONDE" collect time -q -r 1 --show-output -o t1.json -- wc -l)
check "collect time -r 1: the one run reads the pipe ($lines)" [ "$lines" = 2 ]
lines=$(printf 'a\nb\n' | "$SONDE" collect time -q -r 3 --show-output -o t3.json -- wc -l | tr '\n' ' ')
check "a series of 3 runs: each reads /dev/null, not a share of the pipe ($lines)" \
	[ "$lines" = "0 0 0 " ]
lines=$(printf 'a\nb\n' | "$SONDE" collect time -q -w 1 -r 1 --show-output -o tw.json -- wc -l |
	tr '\n' ' ')
check "a warm-up and a run: /dev/null for both ($lines)" [ "$lines" = "0 0 " ]
lines=$("$SONDE" collect time -q -r 2 --show-output --input three.txt -o ti.json -- wc -l |
	tr '\n' ' ')
check "--input FILE: every run reads it from the start ($lines)" [ "$lines" = "3 3 " ]
lines=$(printf 'x\n' | "$SONDE" collect time -q -r 1 --prepare 'cat >/dev/null' --show-output \
	-o tp.json -- wc -l)
check "--prepare reads /dev/null: the pipe is left to the run ($lines)" [ "$lines" = 1 ]

if [ ! -x /usr/bin/python3 ] || ! command -v bash >/dev/null 2>&1; then
	for s in modes read stop interrupt background; do
		skip "at a terminal: $s" "no /usr/bin/python3 or bash to drive a pseudo-terminal"
	done
else
	term() { SONDE="$SONDE" timeout 120 /usr/bin/python3 "$SRC/tests/e2e/terminal.py" "$1"; }
	check "at a terminal: a target that sets the terminal's modes runs (stty sane), exit 0" \
		term modes
	check "at a terminal: the target reads a line typed there" term read
	check "at a terminal: Ctrl-Z stops the job, fg resumes it, the target reads on, exit 0" \
		term stop
	check "at a terminal: Ctrl-C interrupts the run: said, exit 130, profile written" \
		all 'term interrupt' '[ -s int.json ]'
	check "at a terminal: started with &, reading the terminal stops the job; fg goes on, exit 0" \
		term background
fi
# the progress bar on a terminal: for a series whose output sonde discards, never over a
# program's own output (the one-run collectors show it)
if command -v script >/dev/null; then
	script -qc "'$SONDE' collect memory -o bar-m.json -- '$PROGS/s-echo' hi" /dev/null >bar-m.txt 2>&1
	check "one-run collector on a terminal: the program's lines, no progress bar" \
		sh -c 'grep -q "out hi" bar-m.txt && ! grep -q "ETA" bar-m.txt'
	script -qc "'$SONDE' collect time -r 3 -o bar-t.json -- '$PROGS/s-echo' hi" /dev/null >bar-t.txt 2>&1
	check "a series on a terminal, output discarded: the bar counts its runs" grep -q "3/3 .*ETA" bar-t.txt
else
	skip "the progress bar on a terminal" "script(1) is not installed (bsdutils)"
fi
finish
