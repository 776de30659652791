#!/bin/sh
# python-cpu-overhead.sh - the cost of recording every Python call: fib(25) and
# a loop of small calls (about 3.5 M calls), each run in a fresh interpreter,
# interleaved: plain, under sonde.CpuCollector (every call and return into
# per-thread rings, read at stop; Python calls only through the frame
# evaluator, and with C calls through the profile hook), under cProfile (the
# peer: aggregates only) and under a pure-Python sys.setprofile recorder. Each
# figure is the median over ROUNDS of the time from starting the recorder to
# having its result (sonde: stop() read the rings; cProfile: create_stats()).
# Then the whole command, as a user runs it: `python3 work.py`, `sonde collect
# python [--no-c-calls] -- python3 work.py` (profile written) and `python3 -m
# cProfile -o FILE work.py`. Target: sonde <= 100 ns per call over plain.
# Also the sampling mode at 100 Hz on ten times the work, plain and cProfile
# beside it: target <= 5 % over plain.
# Usage: bench/python-cpu-overhead.sh [BUILD] [ROUNDS] [all|calls|sampling|command]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-5}
PART=${3:-all}
[ -d "$BUILD/python/sonde" ] || { echo "python-cpu-overhead: $BUILD/python/sonde is not built (python3-dev)"; exit 3; }
SONDE=$(realpath "$BUILD/src/sonde")
PYTHONPATH=$BUILD/python exec /usr/bin/python3 - "$ROUNDS" "$SONDE" "$PART" <<'PY'
import os, statistics, subprocess, sys, tempfile, time

ROUNDS = int(sys.argv[1])
SONDE = sys.argv[2]
PART = sys.argv[3]
WORK = r'''
import sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def small(i):
    return i
def loop(n):
    for i in range(n):
        small(i)
def work():
    fib(25)
    loop(3_250_000)
CALLS = 242785 + 3_250_000 + 2
pc = time.perf_counter_ns
tt = time.thread_time_ns
'''
RUNNERS = {
    "plain": "t = pc(); work(); print(pc() - t, CALLS)",
    "sonde": ("import sonde\nc = sonde.CpuCollector(buffer=1 << 28, c_calls=False)\n"
              "t = pc(); c.start(); work(); c.stop(); print(pc() - t, CALLS)\n"
              "assert c.results['dropped'] == 0"),
    "sonde+C": ("import sonde\nc = sonde.CpuCollector(buffer=1 << 28, c_calls=True)\n"
                "t = pc(); c.start(); work(); c.stop(); print(pc() - t, CALLS)\n"
                "assert c.results['dropped'] == 0"),
    "cProfile": ("import cProfile\npr = cProfile.Profile()\n"
                 "t = pc(); pr.enable(); work(); pr.disable(); pr.create_stats(); "
                 "print(pc() - t, CALLS)"),
    "pure-Python": ("buf = []\nap = buf.append\n"
                    "def rec(f, e, a): ap((e, f.f_code, pc()))\n"
                    "t = pc(); sys.setprofile(rec); work(); sys.setprofile(None); "
                    "print(pc() - t, CALLS)"),
}
res = {k: [] for k in RUNNERS}
for _ in range(ROUNDS if PART in ("all", "calls") else 0):
    for k, code in RUNNERS.items():
        out = subprocess.run([sys.executable, "-c", WORK + code], check=True,
                             capture_output=True, text=True).stdout.split()
        res[k].append(int(out[0]))
calls = 242785 + 3_250_000 + 2
med = {k: statistics.median(v) for k, v in res.items() if v}
if med:
    print(f"python {sys.version.split()[0]}, {calls} calls, {ROUNDS} interleaved rounds (median)")
for k, v in med.items():
    extra = (v - med["plain"]) / calls
    print(f"  {k:<12} {v / 1e6:9.1f} ms  {v / med['plain']:5.2f}x plain"
          + ("" if k == "plain" else f"  {extra:6.1f} ns per call over plain"))
if med:
    s = (med["sonde"] - med["plain"]) / calls
    c = (med["cProfile"] - med["plain"]) / calls
    print(f"sonde: {s:.1f} ns per call (target <= 100), {med['sonde'] / med['cProfile']:.2f}x "
          f"cProfile's time (cProfile: {c:.1f} ns per call, aggregates only)")

# sampling at 100 Hz: the same work, repeated for about two seconds (a sample costs
# per second, not per call). Every setting runs in one interpreter, in turns, each
# round's order rotated: a fresh interpreter per run moved plain runs by +-10 % here
# (its memory layout), more than sampling costs. Each figure is the run's time
# against the plain run of its own round, then the median of those ratios. The
# default trigger (a task-clock whose signal makes the main thread read its own
# stack at its next check) runs beside the hand-over other threads use (the thread
# hands the GIL over and waits for the sampler) and the two that leave the thread
# running until the sampler asks (the same task-clock's signal to the sampler; a
# POSIX CPU timer's): what the exact sample point costs.
REPEAT = 10
SAMPLING = WORK + f"""
import os, statistics, cProfile, sonde
KS = ["plain", "sonde sampling 100 Hz", "sonde task-clock", "sonde task-clock-sampler",
      "sonde cpu-timer-sampler", "cProfile"]
res = {{k: [] for k in KS}}
wait = {{k: [] for k in KS}}
vol = {{k: [] for k in KS}}
def switches():  # the thread's voluntary context switches: it waited for something
    for line in open("/proc/thread-self/status"):
        if line.startswith("voluntary_ctxt_switches"):
            return int(line.split()[1])
samples = []
for rnd in range({ROUNDS}):
    for k in KS[rnd % len(KS):] + KS[:rnd % len(KS)]:
        c = pr = None
        if k.startswith("sonde"):
            os.environ["SONDE_PY_SAMPLE_TRIGGER"] = k.split()[1] if k.count(" ") == 1 else ""
            c = sonde.CpuCollector(mode="sampling", hz=100)
        elif k == "cProfile":
            pr = cProfile.Profile()
        t = pc()
        if c: c.start()
        if pr: pr.enable()
        u = tt(); v = switches()
        for _ in range({REPEAT}): work()
        w = pc() - t - (tt() - u); v = switches() - v
        if c: c.stop()
        if pr: pr.disable(); pr.create_stats()
        res[k].append(pc() - t)
        n = c.results["samples"] if c else 1
        if k == "sonde sampling 100 Hz": samples.append(n)
        wait[k].append(w / max(n, 1))
        vol[k].append(v / max(n, 1))
print(repr((res, wait, vol, samples)))
"""
res, waits, vol, samples = ({}, {}, {}, []) if PART not in ("all", "sampling") else eval(
    subprocess.run([sys.executable, "-c", SAMPLING], check=True, capture_output=True,
                   text=True).stdout)
med = {k: statistics.median(v) for k, v in res.items() if v}
paired = {k: statistics.median(a / b for a, b in zip(v, res["plain"])) for k, v in res.items() if v}
if med:
    print(f"sampling: the work {REPEAT} times, {ROUNDS} rounds in one interpreter, "
          f"{statistics.median(samples):.0f} samples a run")
    for k, v in med.items():
        print(f"  {k:<26} {v / 1e6:9.1f} ms  {paired[k]:5.3f}x its round's plain (median)")
    ov = paired["sonde sampling 100 Hz"] - 1
    print(f"sonde sampling at 100 Hz: {100 * ov:+.1f} % over plain (target <= 5 %)")
    # what a sample costs the thread: its wall time less its CPU time (the waits for
    # the sampler, and this VM's own stalls: see plain's), and the times it went to
    # sleep for it (a hand-over of the GIL is one), per sample
    print("the thread's wait (wall less CPU), median per sample:" + "".join(
        f"  {k.replace('sonde ', '')} {statistics.median(v) / 1e3:.0f} us"
        for k, v in waits.items() if v and k not in ("plain", "cProfile"))
        + f"  (plain, whole run: {statistics.median(waits['plain']) / 1e3:.0f} us)")
    print("the thread's voluntary switches, median per sample:" + "".join(
        f"  {k.replace('sonde ', '')} {statistics.median(v):.2f}"
        for k, v in vol.items() if v and k not in ("plain", "cProfile"))
        + f"  (plain, whole run: {statistics.median(vol['plain']):.0f})")
if PART not in ("all", "command"):
    sys.exit(0)

# the whole command: start, run, profile written
tmp = tempfile.mkdtemp(prefix="sonde-bench-")
prog = os.path.join(tmp, "work.py")
with open(prog, "w") as f:
    f.write(WORK + "work()\n")
out = os.path.join(tmp, "out")
CMDS = {
    "python3": [sys.executable, prog],
    "sonde collect python --no-c-calls": [SONDE, "-q", "collect", "python", "--no-c-calls",
                                          "--ring-mib", "256", "-o", out + ".json", "--",
                                          sys.executable, prog],
    "sonde collect python": [SONDE, "-q", "collect", "python", "--ring-mib", "256", "-o",
                             out + ".json", "--", sys.executable, prog],
    "python3 -m cProfile -o": [sys.executable, "-m", "cProfile", "-o", out + ".prof", prog],
}
wall = {k: [] for k in CMDS}
for _ in range(ROUNDS):
    for k, cmd in CMDS.items():
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=tmp)
        wall[k].append(time.perf_counter() - t)
w = {k: statistics.median(v) for k, v in wall.items()}
print(f"whole command, {ROUNDS} interleaved rounds (median wall time, profile written)")
for k, v in w.items():
    extra = (v - w["python3"]) * 1e9 / calls
    print(f"  {k:<34} {v * 1e3:8.1f} ms  {v / w['python3']:5.2f}x"
          + ("" if k == "python3" else f"  {extra:6.1f} ns per call"))
for f in os.listdir(tmp):
    os.unlink(os.path.join(tmp, f))
os.rmdir(tmp)
PY
