#!/bin/bash
# tests/gpu/device.sh - the GPU checks for a machine with an NVIDIA GPU, CUDA,
# CUPTI, NVML and PyTorch (the device tool's machines; DEVELOPERS.md). Run
# from the repository root with sonde built in build/ (carried there), or
# with only the toolkit: what cannot run says why. Writes $OUT/gpu.log.
#   1. sonde's CUPTI and NVML declarations against NVIDIA's headers;
#   2. sonde collect gpu on tests/gpu/kernels.cu (known launches, copies) and
#      the same program under the probe's bare CUPTI counter: the counts agree;
#   3. the Python parts on torch: CUDATimer against torch.cuda.Event timing,
#      MemoryTracker on a 1 GiB tensor.
OUT=${OUT:-/tmp/sonde-gpu}; mkdir -p "$OUT"; exec > >(tee "$OUT/gpu.log") 2>&1
cd "$(dirname "$0")/../.." || exit 2
INC=$(dirname "$(find / -name cupti.h -path '*include*' 2>/dev/null | head -1)")
NVINC=$(dirname "$(find / -name nvml.h -path '*include*' 2>/dev/null | head -1)")
W=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== 1. declarations (cupti.h in $INC, nvml.h in $NVINC)"
gcc -I"$INC" -I. tests/gpu/decls.c -o "$W/decls" && "$W/decls" | grep -v '^ok'
gcc -I"$NVINC" tests/gpu/nvml-decls.c -o "$W/nvml-decls" && "$W/nvml-decls" | grep -v '^ok'
echo "== 2. collect gpu"
nvcc -O2 -o "$W/kernels" tests/gpu/kernels.cu || echo "nvcc failed"
if ! build/src/sonde --version >/dev/null 2>&1; then
	echo "SKIP: build/src/sonde does not run here: $(ldd build/src/sonde 2>&1 | grep 'not found' | tr '\n' ' ')"
else
	SONDE_RUNTIME_DIR=$PWD/build/runtime/gpu build/src/sonde collect gpu --level full \
		-o "$W/g.json" -- "$W/kernels" 100 67108864
	echo "rc $?"
	jq -c '.resources as $r | [.resource_type_map | to_entries[] | {uid: .value.uid,
		type: .value.type, amount: $r[.key].amount[0], calls: $r[.key].calls[0],
		bytes: $r[.key].bytes[0], overlapped: $r[.key].overlapped[0]}]' "$W/g.json"
	jq -c '.stats.gpu, (.gpu.spans | length), (.gpu.calls | length)' "$W/g.json"
	cp "$W/g.json" "$OUT/"
	build/src/sonde export "$W/g.json" -f perfetto -o "$OUT/g.perfetto.json"
fi
if [ -f ../shared/gpu-probe/inj.c ]; then
	LIB=$(dirname "$(find / -name 'libcupti.so*' 2>/dev/null | head -1)")
	gcc -O2 -shared -fPIC -o "$W/libinj.so" ../shared/gpu-probe/inj.c -I"$INC" \
		-L"$LIB" -lcupti -Wl,-rpath,"$LIB" &&
		CUDA_INJECTION64_PATH=$W/libinj.so "$W/kernels" 100 67108864
fi
echo "== 3. Python on torch"
PYTHONPATH=$PWD/build/python python3 - <<'PY'
import time, torch
import sonde.profiler as p
x = torch.randn(4096, 4096, device="cuda")
t = p.CUDATimer()
for _ in range(13):
    with t.measure("matmul"):
        y = x @ x
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ref = []
for _ in range(10):
    torch.cuda.synchronize(); s.record(); y = x @ x; e.record(); e.synchronize()
    ref.append(s.elapsed_time(e))
print("CUDATimer mean %.3f ms, torch.cuda.Event mean %.3f ms, ratio %.3f" % (
    t.stats("matmul").mean, sum(ref) / len(ref), t.stats("matmul").mean / (sum(ref) / len(ref))))
m = p.MemoryTracker()
m.start(); z = torch.empty(2**30, dtype=torch.uint8, device="cuda"); st = m.stop()
print("MemoryTracker peak_allocated %d (1 GiB = %d)" % (st["peak_allocated"], 2**30))
PY
rm -rf "$W"
