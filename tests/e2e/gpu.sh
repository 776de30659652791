#!/bin/sh
# sonde collect gpu where there is no GPU: CI's machines and this project's
# development machines have no NVIDIA driver (some have a CUDA toolkit: its
# headers and CUPTI, no libcuda.so.1). The collector must run nothing and say
# what is missing in one line (exit 3); its options are checked as any
# collector's. What it records on a GPU is checked on one (tests/gpu/), its
# decoding and analysis by unit-gpu, its declarations by gpu-decls.
. "$SRC/tests/e2e/lib.sh"

if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
	skip "collect gpu refuses without a driver" "this machine has an NVIDIA driver"
else
	run collect gpu -o g.json -- sh -c 'echo ran > ran.txt'
	check "no driver: exit 3" [ "$rc" = 3 ]
	check "one line naming the missing driver" all \
		'[ "$(printf "%s\n" "$err" | wc -l)" = 1 ]' \
		'has "$err" "gpu: <not supported>: no NVIDIA driver here (libcuda.so.1: not found)"'
	check "nothing run, nothing written" all '[ ! -e ran.txt ]' '[ ! -e g.json ]'
	run collect time+gpu -o tg.json -- true
	check "joined with another collector: the same refusal" all '[ "$rc" = 3 ]' \
		'has "$err" "no NVIDIA driver here"'
fi
run collect gpu --level everything -- true
check "an unknown level: exit 2, the choices named" all '[ "$rc" = 2 ]' \
	'has "$err" "kernel"' 'has "$err" "full"'
run collect gpu --help
check "--help names its options" all '[ "$rc" = 0 ]' 'has "$out" "--level LEVEL"' \
	'has "$out" "--cupti PATH"' 'has "$out" "--ring-mib N"'
run collect --help
check "collect --help lists gpu" has "$out" "power, gpu, external"
finish
