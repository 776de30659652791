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

# The timeline of a gpu profile as docs/profile-format.md describes its "gpu"
# part (written here: no GPU records one): a process per GPU, a track per
# stream, the CUDA calls on the calling thread's track; times in µs.
"$SONDE" collect time -r 1 -o t.json -- true 2>/dev/null
jq '.header.type = "gpu" | .collector_info.name = "gpu" | .gpu = {
	names: ["vecAdd(float*, float*, float*, int)", "HtoD", "cudaLaunchKernel"],
	streams: [{device: 0, context: 1, stream: 7}, {device: 0, context: 1, stream: 13},
		  {device: 1, context: 2, stream: 7}],
	spans: [[0, "kernel", 0, 1000000, 2500000, 11], [1, "memcpy", 1, 500000, 400000, 10],
		[2, "kernel", 0, 1200000, 1000, 12]],
	calls: [[4242, 4243, 2, 900000, 20000, 11]],
	ranges: [[4242, 4243, 3, 800000, 3000000]],
	memory: [[0, 100000, 1048576], [2, 200000, 4096]]}' t.json |
	jq '.gpu.names += ["epoch"]' >g.json
run export g.json -f perfetto -o perfetto.json
ev() { jq -c "[.traceEvents[] | $1]" perfetto.json; }
check "export -f perfetto of a gpu profile" [ "$rc" = 0 ]
check "a process per GPU, named once (GPU 2: its memory only)" all \
	'[ "$(ev "select(.name == \"process_name\") | .args.name")" = "[\"GPU 0\",\"GPU 1\",\"GPU 2\"]" ]' \
	'[ "$(ev "select(.name == \"thread_name\" and .pid == -100) | .args.name")" = "[\"stream 7\",\"stream 13\"]" ]'
check "the kernel on its stream's track, in µs" \
	[ "$(ev 'select(.ph == "X" and .cat == "kernel" and .pid == -100) | [.tid, .ts, .dur, .name]')" = \
	'[[8,1000,2500,"vecAdd(float*, float*, float*, int)"]]' ]
check "the copy on its own stream, the other GPU's kernel on its process" all \
	'[ "$(ev "select(.cat == \"memcpy\") | [.pid, .tid, .ts, .dur]")" = "[[-100,14,500,400]]" ]' \
	'[ "$(ev "select(.cat == \"kernel\" and .pid == -101) | [.tid, .ts, .dur]")" = "[[8,1200,1]]" ]'
check "an NVTX range on the calling thread" \
	[ "$(ev 'select(.cat == "nvtx") | [.pid, .tid, .ts, .dur, .name]')" = '[[4242,4243,800,3000,"epoch"]]' ]
check "device memory: a counter on its GPU's process" \
	[ "$(ev 'select(.ph == "C") | [.pid, .name, .ts, (.args | to_entries[0].value)]')" = \
	'[[-100,"device memory (B)",100,1048576],[-102,"device memory (B)",200,4096]]' ]
check "the CUDA call on the calling thread" \
	[ "$(ev 'select(.cat == "cuda") | [.pid, .tid, .ts, .dur, .name]')" = '[[4242,4243,900,20,"cudaLaunchKernel"]]' ]
finish
