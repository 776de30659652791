#!/bin/sh
# python-overhead.sh - the cost of one `with t.measure(name):` region and one
# `m.record(name, value)` of the Python binding, against what a Python user
# would write without sonde, in the same interpreter, interleaved:
#   - two bare time.perf_counter_ns() calls (the floor of timing a region),
#   - a pure-Python context manager around perf_counter_ns (a class with
#     __enter__/__exit__ appending to a list),
#   - appending (time, value) to a dict of lists (a pure-Python record).
# Each figure is the median over ROUNDS of the per-iteration time of a loop of
# N iterations minus an empty loop of N. Targets: a region <= 1.5x two bare
# perf_counter_ns() calls; record <= 100 ns.
# Usage: bench/python-overhead.sh [BUILD] [N] [ROUNDS]
set -eu
BUILD=${1:-build}
N=${2:-1000000}
ROUNDS=${3:-7}
[ -d "$BUILD/python/sonde" ] || { echo "python-overhead: $BUILD/python/sonde is not built (python3-dev)"; exit 3; }
PYTHONPATH=$BUILD/python exec /usr/bin/python3 - "$N" "$ROUNDS" <<'PY'
import statistics, sys, time
import sonde

N, ROUNDS = int(sys.argv[1]), int(sys.argv[2])
pc = time.perf_counter_ns


class PyRegion:
    __slots__ = ("rows", "t")

    def __init__(self, rows):
        self.rows = rows

    def __enter__(self):
        self.t = pc()
        return self

    def __exit__(self, *exc):
        self.rows.append(pc() - self.t)
        return False


def empty(n):
    for _ in range(n):
        pass


def bare(n):
    for _ in range(n):
        a = pc()
        b = pc()


def py_region(n):
    r = PyRegion([])
    for _ in range(n):
        with r:
            pass


def sonde_region(n):
    t = sonde.Timer()
    for _ in range(n):
        with t.measure("r"):
            pass


def py_record(n):
    d = {}
    for i in range(n):
        d.setdefault("loss", []).append((pc(), 0.5))


def sonde_record(n):
    m = sonde.Metrics()
    rec = m.record
    for i in range(n):
        rec("loss", 0.5)


def per_iter(fn, base):
    t0 = pc()
    fn(N)
    return (pc() - t0) / N - base


cases = [("two bare perf_counter_ns()", bare), ("pure-Python context manager", py_region),
         ("sonde: with t.measure(name)", sonde_region), ("pure-Python dict append", py_record),
         ("sonde: m.record(name, value)", sonde_record)]
res = {name: [] for name, _ in cases}
for _ in range(ROUNDS):
    t0 = pc()
    empty(N)
    base = (pc() - t0) / N
    for name, fn in cases:
        res[name].append(per_iter(fn, base))
med = {k: statistics.median(v) for k, v in res.items()}
print(f"python {sys.version.split()[0]}, N = {N}, {ROUNDS} interleaved rounds "
      f"(median ns per iteration, the empty loop subtracted)")
for name, _ in cases:
    print(f"  {name:<32} {med[name]:8.1f} ns")
floor = med["two bare perf_counter_ns()"]
print(f"  region: sonde / two perf_counter_ns = {med['sonde: with t.measure(name)'] / floor:.2f}"
      f" (target <= 1.5); pure Python / two perf_counter_ns = "
      f"{med['pure-Python context manager'] / floor:.2f}")
print(f"  record: sonde {med['sonde: m.record(name, value)']:.1f} ns (target <= 100 ns); "
      f"pure Python {med['pure-Python dict append']:.1f} ns")
PY
