#!/usr/bin/python3
"""compare.py - sonde's answers against a peer's, on the same program.

  compare.py trace UFTRACE_DIR SONDE_PROFILE [--only FUNC,...] [--counts-only] [--ignore FUNC,...]
      call counts per function and per call path: `uftrace dump` of a
      `uftrace record` against `sonde export -f folded --weight calls`. --ignore
      leaves out calls one side does not record on purpose (their callees hang
      from their caller).
  compare.py memory HEAPTRACK_FILE SONDE_PROFILE TARGET [--tolerance PCT]
             [--allocations-tolerance PCT] [--temporary-slack N] [--skip FIELD,...]
      allocation calls, temporaries, peak and leaked bytes: `heaptrack_print`
      against the profile's stats.memory. Calls must be equal (or within
      --allocations-tolerance); the others within PCT % (default 0) and
      heaptrack's rounding (it prints 3 digits), temporaries also within N.

Prints what was compared, one line per difference, and exits 0 when the answers
agree, 1 when they differ, 2 when a tool's output cannot be read.

The deliberate differences, applied here and explained in docs/conformance.md:
  - a forked child's calls: uftrace keeps the parent's open frames above them,
    which its dump does not name; sonde roots them at the fork. Paths are
    compared from the first frame both know.
  - heaptrack's preloaded library is C++, so a C program under heaptrack has
    libstdc++'s emergency pool (one allocation, about 71 KiB, live from start
    to exit) that the program itself never makes; it is taken out of
    heaptrack's totals for a target that does not link libstdc++.
  - heaptrack leaves leaks out of its total whose stack passes through a
    built-in list of runtime functions ("suppressed leaks"); sonde shows them,
    so its leaked bytes are compared with heaptrack's leaked plus suppressed.
"""
import collections
import json
import re
import subprocess
import sys


def fail(msg):
    print(f"compare: {msg}", file=sys.stderr)
    sys.exit(2)


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()[:400]}")
    return r.stdout


# ---- trace ------------------------------------------------------------------------------


ENTRY = re.compile(r"^\s*[\d.]+\s+(\d+): \[(entry|exit )\] (.+)\([0-9a-f]+\) depth: (\d+)$")


def demangled(names):
    """C++ names (_Z...) demangled by c++filt, each other name as it is.

    Not uftrace's --demangle=full: it reads short C names as mangled builtin
    types (a() as "signed char", b() as "bool").
    """
    mangled = sorted({n for n in names if n.startswith("_Z")})
    if not mangled:
        return {}
    r = subprocess.run(["c++filt"], input="\n".join(mangled) + "\n", capture_output=True,
                       text=True)
    if r.returncode != 0:
        fail(f"c++filt: exit {r.returncode}: {r.stderr.strip()[:400]}")
    return dict(zip(mangled, r.stdout.splitlines()))


def uftrace_paths(data_dir):
    """Path -> calls, from uftrace's per-task records (depth gives the nesting)."""
    out = run(["uftrace", "dump", "-d", data_dir, "--no-pager", "--demangle=no"])
    names = demangled(m.group(3) for m in map(ENTRY.match, out.splitlines()) if m)
    stacks = collections.defaultdict(list)
    paths = collections.Counter()
    for line in out.splitlines():
        m = ENTRY.match(line)
        if not m:
            continue
        tid, kind, name, depth = m.group(1), m.group(2), m.group(3), int(m.group(4))
        st = stacks[tid]
        if kind == "entry":
            del st[depth:]
            while len(st) < depth:
                st.append("?")  # frames open before this task began (fork)
            st.append(names.get(name, name))
            known = [f for f in st if f != "?"]
            paths[";".join(known)] += 1
        else:
            del st[depth:]
    return paths


def sonde_paths(profile):
    out = run([SONDE, "export", profile, "-f", "folded", "--weight", "calls"])
    paths = collections.Counter()
    for line in out.splitlines():
        stack, _, n = line.rpartition(" ")
        if stack:
            paths[stack] += int(n)
    return paths


def per_function(paths):
    f = collections.Counter()
    for p, n in paths.items():
        f[p.split(";")[-1]] += n
    return f


def compare_counts(what, peer, ours, only):
    bad = 0
    keys = sorted(set(peer) | set(ours))
    for k in keys:
        if only and k.split(";")[-1] not in only:
            continue
        if peer.get(k, 0) != ours.get(k, 0):
            print(f"  {what} {k}: peer {peer.get(k, 0)}, sonde {ours.get(k, 0)}")
            bad += 1
    return bad


def without(paths, ignore):
    out = collections.Counter()
    for p, n in paths.items():
        frames = [f for f in p.split(";") if f not in ignore]
        if frames and p.split(";")[-1] not in ignore:
            out[";".join(frames)] += n
    return out


def trace(args):
    only = set()
    paths = True
    if "--only" in args:
        i = args.index("--only")
        only = set(args[i + 1].split(","))
        del args[i : i + 2]
    if "--counts-only" in args:
        args.remove("--counts-only")
        paths = False
    ignore = set()
    if "--ignore" in args:
        i = args.index("--ignore")
        ignore = set(args[i + 1].split(","))
        del args[i : i + 2]
    data_dir, profile = args
    peer, ours = uftrace_paths(data_dir), sonde_paths(profile)
    if ignore:
        # calls one side does not record on purpose: out of every path, their callees
        # hung from their caller
        peer, ours = without(peer, ignore), without(ours, ignore)
    if not peer:
        fail(f"uftrace recorded no call in {data_dir}")
    bad = compare_counts("calls of", per_function(peer), per_function(ours), only)
    if paths:
        bad += compare_counts("calls at path", peer, ours, only)
    print(
        f"  {sum(per_function(peer).values())} calls, {len(peer)} paths compared: "
        + ("the same" if not bad else f"{bad} differences")
    )
    return 1 if bad else 0


# ---- memory -----------------------------------------------------------------------------

UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}


def size(text):
    m = re.match(r"([\d.]+)([KMG]?)B?$", text)
    if not m:
        fail(f"heaptrack_print: cannot read the size '{text}'")
    return float(m.group(1)) * UNITS[m.group(2)]


def heaptrack_numbers(path):
    out = run(["heaptrack_print", "-f", path, "-a", "-T", "-p", "-n", "1000", "-s", "0"])
    n = {}
    for key, pat in (
        ("allocations", r"^calls to allocation functions: (\d+)"),
        ("temporary", r"^temporary memory allocations: (\d+)"),
        ("peak", r"^peak heap memory consumption: (\S+)"),
        ("leaked", r"^total memory leaked: (\S+)"),
        ("suppressed", r"^suppressed leaks: (\S+)"),
    ):
        m = re.search(pat, out, re.M)
        if m:
            n[key] = int(m.group(1)) if key in ("allocations", "temporary") else size(m.group(1))
        elif key != "suppressed":
            fail(f"heaptrack_print: no '{key}' in its summary")
    n.setdefault("suppressed", 0)
    # the blocks of the listings: "N <what> ... from" and the frames under it
    pool = {"allocations": 0, "temporary": 0, "peak": 0}
    for m in re.finditer(
        r"^(\S+) (calls to allocation functions|temporary allocations|peak memory consumed)"
        r".*from:?\n((?:.+\n)+?)\n",
        out,
        re.M,
    ):
        frames = m.group(3).splitlines()
        first = next((f for f in frames if f.strip().startswith("in ")), "")
        if "libstdc++.so" in first:
            kind = {"calls": "allocations", "temporary": "temporary", "peak": "peak"}[
                m.group(2).split()[0]
            ]
            pool[kind] += size(m.group(1)) if kind == "peak" else int(m.group(1))
            if kind == "peak":
                pool["peak_rounding"] = pool.get("peak_rounding", 0) + rounding(size(m.group(1)))
    return n, pool


def rounding(v):
    """Half a unit of the last digit heaptrack_print shows of a size (3 significant)."""
    return 10 ** (len(str(int(v))) - 3) / 2 if v >= 1000 else 0


def links_libstdcxx(target):
    r = subprocess.run(["ldd", target], capture_output=True, text=True)
    return "libstdc++" in r.stdout


def option(args, name, default):
    """The value of --NAME in args (taken out), or default."""
    if name not in args:
        return default
    i = args.index(name)
    v = float(args[i + 1])
    del args[i : i + 2]
    return v


def memory(args):
    tol = option(args, "--tolerance", 0.0) / 100
    calls_tol = option(args, "--allocations-tolerance", 0.0) / 100
    temp_slack = option(args, "--temporary-slack", 0.0)
    skip = set()
    if "--skip" in args:
        i = args.index("--skip")
        skip = set(args[i + 1].split(","))
        del args[i : i + 2]
    path, profile, target = args
    ht, pool = heaptrack_numbers(path)
    pool_rounding = pool.pop("peak_rounding", 0)
    if not links_libstdcxx(target):
        for k in pool:
            ht[k] -= pool[k]
    else:
        pool_rounding = 0
    with open(profile) as f:
        m = json.load(f)["stats"]["memory"]
    ours = {
        "allocations": m["allocations"],
        "temporary": m["temporary_allocations"],
        "peak": m["peak_heap_bytes"],
        "leaked": m["leaked_bytes"],
    }
    peer = dict(ht)
    peer["leaked"] = ht["leaked"] + ht["suppressed"]
    bad = 0
    for k in ("allocations", "temporary", "peak", "leaked"):
        if k in skip:
            print(f"  {k}: heaptrack {peer[k]:.0f}, sonde {ours[k]} (not compared)")
            continue
        # heaptrack prints sizes with 2 decimals (76.59K): half a unit of its last digit
        slack = calls_tol * peer[k] if k == "allocations" else tol * max(peer[k], 1)
        if k == "temporary":
            slack += temp_slack
        if k in ("peak", "leaked"):
            # the rounding of heaptrack's figure, and of the pool taken out of it
            slack += rounding(ht[k] + (pool["peak"] if k == "peak" and pool_rounding else 0))
            slack += pool_rounding if k == "peak" else 0
        ok = abs(peer[k] - ours[k]) <= slack
        print(f"  {k}: heaptrack {peer[k]:.0f}, sonde {ours[k]}" + ("" if ok else "  <- differs"))
        bad += not ok
    return 1 if bad else 0


SONDE = "sonde"

if __name__ == "__main__":
    import os

    SONDE = os.environ.get("SONDE", "sonde")
    if len(sys.argv) < 2 or sys.argv[1] not in ("trace", "memory"):
        fail("usage: compare.py trace|memory ...")
    sys.exit(trace(sys.argv[2:]) if sys.argv[1] == "trace" else memory(sys.argv[2:]))
