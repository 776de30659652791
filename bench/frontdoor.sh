#!/bin/sh
# frontdoor.sh: what a new user waits for. A fresh clone of this repository's
# HEAD, then `make run` and `make test` in it, each timed (wall seconds), with
# the steps each built and the tests' closing line. Nothing else should run on
# the machine meanwhile: make test's figure is the machine's to give.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/sonde-frontdoor.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
git clone -q "$SRC" "$WORK/sonde"
cd "$WORK/sonde"
t0=$(date +%s.%N)
make run >run.log 2>&1
t1=$(date +%s.%N)
make test >test.log 2>&1 || true
t2=$(date +%s.%N)
steps_run=$(grep -o '^\[[0-9]*/[0-9]*\]' run.log | tail -1)
steps_test=$(grep -o '^\[[0-9]*/[0-9]*\]' test.log | tail -1)
printf '%-10s %9s  %s\n' "step" "wall (s)" "what"
printf '%-10s %9.1f  %s\n' "make run" "$(echo "$t1 - $t0" | bc)" "built ${steps_run:-nothing} steps; $(grep -c '^== ' run.log) examples profiled"
printf '%-10s %9.1f  %s\n' "make test" "$(echo "$t2 - $t1" | bc)" "built ${steps_test:-nothing} more steps; $(tail -1 test.log)"
echo "compiler warnings: $(cat run.log test.log | grep -cE '^[^ ]+:[0-9]+:[0-9]+: warning:' || true)"
