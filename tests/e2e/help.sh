#!/bin/sh
# Every command has --help; version lists the parts built in.
. "$SRC/tests/e2e/lib.sh"

for c in init collect status add rm log show export version utils; do
	run "$c" --help
	check "$c --help: exit 0 and usage" sh -c "[ $rc = 0 ] && printf '%s' \"\$1\" | grep -q 'usage: sonde $c'" _ "$out"
done
run collect time --help
check "collect --help lists common options" has "$out" "--repeat N"
run --help
check "sonde --help lists commands" has "$out" "collect"
check "sonde --help lists exit codes" has "$out" "3 unsupported"
run help show
check "sonde help show" has "$out" "usage: sonde show"
run version --features
check "version --features" has "$out" "collector:time yes"
check "version --features: unit tests part" has "$out" "unit-tests"
check "version --features: the GPU collector says it has not yet run on a GPU" \
	has "$out" "collector:gpu yes (not yet run on a GPU"
finish
