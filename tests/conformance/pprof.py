#!/usr/bin/python3
"""sonde export -f pprof read back by go tool pprof (Debian's golang-go): on the
same profiles, pprof's per-function figures must be sonde's own.

  trace (cf-recurse, cf-threads): flat time = sonde show's self, cum time =
      its total (recursion counted once, as both count it), flat calls = its
      calls;
  sample (k-burn): cum samples = sonde show's samples, flat and cum CPU time =
      its self and total;
  memory (cf-alloc): total bytes and allocations = stats.memory's, in-use
      bytes and objects = its leaked bytes and blocks (by function), the
      peak_space = its peak;
  python: a function's file and line reach pprof (two helpers of one name in
      two files stay two functions);
  go tool pprof -http serves its views of the export without an error;
  the export is stable (the same bytes twice; FILE.pb and FILE.pb.gz hold the
  same protobuf), and what has no stacks, or a name pprof cannot read, is
  refused with one line;
  sonde import: perf record -g of p-shares through perf script gives each
  function perf report's share; a sample profile exported, imported and
  exported again reads the same in go tool pprof; what is neither format, a
  heap profile, and a pprof cut short are refused with one line.
"""
import csv
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SONDE = os.environ["SONDE"]
PROGS = os.environ["PROGS"]
n = 0


def tap(ok, what, detail=""):
    global n
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    for line in detail.splitlines():
        print(f"# {line}")


def sonde(*args, check=True):
    r = subprocess.run([SONDE, *args], capture_output=True, text=True, cwd=WORK)
    if check and r.returncode:
        raise SystemExit(f"Bail out! sonde {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r


def pprof_top(path, index, unit=None):
    """go tool pprof -top: {function: (flat, cum)} and the total."""
    args = ["go", "tool", "pprof", "-top", "-nodecount=100000", "-nodefraction=0",
            "-edgefraction=0", f"-sample_index={index}"]
    if unit:
        args.append(f"-unit={unit}")
    out = subprocess.run(args + [path], capture_output=True, text=True, check=True,
                         cwd=WORK).stdout
    rows, total = {}, None
    for line in out.splitlines():
        m = re.search(r"of (\d+)\S* total", line)
        if m:
            total = int(m.group(1))
        m = re.match(r"\s*(\d+)\S*\s+\S+%\s+\S+%\s+(\d+)\S*\s+\S+%\s+(.+)$", line)
        if m:
            rows[m.group(3).strip()] = (int(m.group(1)), int(m.group(2)))
    return rows, total


def sonde_functions(profile):
    # every function (-n 0): the report lists 20 by default, and a share taken over
    # those alone comes out high whenever a run has more (CI's load adds kernel frames)
    rows = csv.DictReader(io.StringIO(sonde("show", profile, "--format", "csv", "-n", "0").stdout))
    return {r["function"]: r for r in rows}


def trace_case(prog):
    name = os.path.basename(prog)
    sonde("collect", "trace", "-o", f"{name}.json", "--", prog)
    sonde("export", f"{name}.json", "-f", "pprof", "-o", f"{name}.pb.gz")
    own = sonde_functions(f"{name}.json")
    time_rows, _ = pprof_top(f"{name}.pb.gz", "time", "ns")
    call_rows, _ = pprof_top(f"{name}.pb.gz", "calls")
    bad = []
    for fn, r in own.items():
        t = time_rows.get(fn)
        c = call_rows.get(fn)
        if not t or t != (int(r["self_ns"]), int(r["total_ns"])):
            bad.append(f"{fn}: time flat/cum {t}, sonde self/total {r['self_ns']}/{r['total_ns']}")
        if not c or c[0] != int(r["calls"]):
            bad.append(f"{fn}: calls {c and c[0]}, sonde {r['calls']}")
    extra = set(time_rows) - set(own)
    if extra:
        bad.append(f"functions only pprof shows: {sorted(extra)}")
    tap(not bad and len(own) > 1,
        f"trace of {name}: go tool pprof's flat and cum time and calls are sonde's "
        f"({len(own)} functions)", "\n".join(bad))


def sample_case():
    """CPU samples of k-burn: pprof's cum samples and flat and cum CPU time are sonde's."""
    r = subprocess.run([SONDE, "collect", "sample", "-o", "smp.json", "--", f"{PROGS}/k-burn"],
                       capture_output=True, text=True, cwd=WORK)
    if r.returncode == 3:
        tap(True, "sample: CPU samples # SKIP perf_event sampling is not available here: "
            + r.stderr.strip().splitlines()[-1])
        return
    sonde("export", "smp.json", "-f", "pprof", "-o", "smp.pb.gz")
    own = sonde_functions("smp.json")
    cnt, _ = pprof_top("smp.pb.gz", "samples")
    cpu, _ = pprof_top("smp.pb.gz", "cpu", "ns")
    bad = [f"{fn}: samples cum {cnt.get(fn)}, cpu flat/cum {cpu.get(fn)}; sonde {dict(r)}"
           for fn, r in own.items()
           if not cnt.get(fn) or cnt[fn][1] != int(r["samples"]) or
           cpu.get(fn) != (int(r["self_ns"]), int(r["total_ns"]))]
    tap(not bad and own, f"sample of k-burn: pprof's samples and CPU time are sonde's "
        f"({len(own)} functions)", "\n".join(bad))


def memory_case():
    sonde("collect", "memory", "-o", "mem.json", "--", f"{PROGS}/cf-alloc")
    sonde("export", "mem.json", "-f", "pprof", "-o", "mem.pb.gz")
    st = json.load(open(os.path.join(WORK, "mem.json")))["stats"]["memory"]
    _, space = pprof_top("mem.pb.gz", "alloc_space", "B")
    _, count = pprof_top("mem.pb.gz", "alloc_objects")
    tap(space == st["allocated_bytes"] and count == st["allocations"],
        "memory of cf-alloc: pprof's total bytes and allocations are sonde's",
        f"pprof {space} B in {count}; sonde {st['allocated_bytes']} B in {st['allocations']}")
    # in use (Go's name for what a heap holds when the profile is taken): what
    # was still allocated at the end; peak_space: what each stack held at the peak
    rows, inuse = pprof_top("mem.pb.gz", "inuse_space", "B")
    _, blocks = pprof_top("mem.pb.gz", "inuse_objects")
    tap(st["leaked_bytes"] > 0 and inuse == st["leaked_bytes"] and blocks == st["leaked_blocks"],
        "memory of cf-alloc: pprof's in-use bytes and objects are sonde's leaked bytes and blocks",
        f"pprof {inuse} B in {blocks}; sonde {st['leaked_bytes']} B in {st['leaked_blocks']}")
    prof = json.load(open(os.path.join(WORK, "mem.json")))
    leakers = {r["uid_object"]["function"] for r in prof["resource_type_map"].values()
               if r.get("summary", {}).get("leaked_bytes", 0) > 0}
    flat = {f for f, (fl, _) in rows.items() if fl > 0}
    tap(flat == leakers, "memory of cf-alloc: the functions holding in-use bytes are those "
        "that leaked", f"pprof {sorted(flat)}; sonde {sorted(leakers)}")
    _, peak = pprof_top("mem.pb.gz", "peak_space", "B")
    tap(peak == st["peak_heap_bytes"], "memory of cf-alloc: pprof's peak_space is sonde's peak",
        f"pprof {peak} B; sonde {st['peak_heap_bytes']} B")


def python_case():
    for f, body in (("a.py", "def helper():\n    return sum(range(100))\n"),
                    ("b.py", "def helper():\n    return sum(range(10))\n")):
        with open(os.path.join(WORK, f), "w") as fh:
            fh.write(body)
    with open(os.path.join(WORK, "main.py"), "w") as fh:
        fh.write("import a, b\nfor _ in range(30):\n    a.helper()\n    b.helper()\n")
    env = dict(os.environ)
    if "address" in os.environ.get("SANITIZE", ""):
        # a sanitized build's runner in the interpreter needs the sanitizer
        # runtimes preloaded (as tests/python/run does); leaks are the interpreter's
        env["LD_PRELOAD"] = " ".join(
            subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True,
                           text=True).stdout.strip() for lib in ("libasan.so", "libubsan.so"))
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    r = subprocess.run([SONDE, "collect", "python", "-o", "py.json", "--", "/usr/bin/python3",
                        "main.py"], capture_output=True, text=True, cwd=WORK, env=env)
    if r.returncode:
        tap(False, "python: collect python", r.stderr)
        return
    sonde("export", "py.json", "-f", "pprof", "-o", "py.pb.gz")
    raw = subprocess.run(["go", "tool", "pprof", "-raw", "py.pb.gz"], capture_output=True,
                         text=True, cwd=WORK, check=True).stdout
    found = [ln.strip() for ln in raw.splitlines() if "helper" in ln]
    tap(any(" a.py:1" in ln for ln in found) and any(" b.py:1" in ln for ln in found),
        "python: each helper's file and line reach pprof (two functions of one name)",
        "\n".join(found[:6]))


def stability():
    a = subprocess.run([SONDE, "export", "cf-recurse.json", "-f", "pprof"], cwd=WORK,
                       capture_output=True).stdout
    r1 = subprocess.run([SONDE, "export", "cf-recurse.json", "-f", "pprof", "-o", "x1.pb"],
                        cwd=WORK)
    r2 = subprocess.run([SONDE, "export", "cf-recurse.json", "-f", "pprof", "-o", "x2.pb"],
                        cwd=WORK)
    r3 = subprocess.run([SONDE, "export", "cf-recurse.json", "-f", "pprof", "-o", "x3.pb.gz"],
                        cwd=WORK)
    raw = [gzip.open(os.path.join(WORK, f)).read() for f in ("x1.pb", "x2.pb", "x3.pb.gz")]
    tap(not (r1.returncode or r2.returncode or r3.returncode) and raw[0] == raw[1] == raw[2]
        and gzip.decompress(a) == raw[0],
        "the export is stable: twice the same protobuf, FILE.pb, FILE.pb.gz and stdout alike")


def http_case():
    """go tool pprof -http serves the export's every view (graph, top, flame graph,
    peek, source) with no error of its own."""
    import socket
    import time
    import urllib.request

    smp = os.path.exists(os.path.join(WORK, "smp.pb.gz"))
    path = os.path.join(WORK, "smp.pb.gz" if smp else "cf-recurse.pb.gz")
    hottest = "burn" if smp else "main"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(os.path.join(WORK, "http.log"), "w+")
    srv = subprocess.Popen(["go", "tool", "pprof", f"-http=127.0.0.1:{port}", "-no_browser",
                            path], stdout=log, stderr=subprocess.STDOUT, cwd=WORK)
    codes, body = {}, ""
    try:
        for _ in range(300):  # up to 30 s for it to listen
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/ui/top", timeout=5).read()
                break
            except OSError:
                if srv.poll() is not None:
                    break
                time.sleep(0.1)
        for view in ("", "top", "flamegraph", "peek", "source"):
            try:
                r = urllib.request.urlopen(f"http://127.0.0.1:{port}/ui/{view}", timeout=30)
                codes[view or "graph"] = r.status
                if view == "top":
                    body = r.read().decode("utf-8", "replace")
            except OSError as e:
                codes[view or "graph"] = getattr(e, "code", str(e))
    finally:
        srv.terminate()
        srv.wait()
    log.seek(0)
    said = [ln for ln in log.read().splitlines()
            if re.search(r"(?i)error|failed|malformed", ln)]
    tap(all(c == 200 for c in codes.values()) and not said and hottest in body,
        "go tool pprof -http serves every view of the export, and says no error",
        f"{codes}\n" + "\n".join(said))


def perf_case():
    """perf record -g of p-shares, read by perf script, imported: each function's share
    of the samples is the one perf report --stdio gives (the same samples)."""
    if not shutil.which("perf"):
        tap(True, "import of perf script # SKIP perf is not installed (linux-perf)")
        return
    rec = subprocess.run(["perf", "record", "-q", "-g", "-e", "cpu-clock", "-F", "999", "-o",
                          "perf.data", "--", f"{PROGS}/p-shares", "100"], cwd=WORK,
                         capture_output=True, text=True)
    if rec.returncode:
        tap(True, "import of perf script # SKIP perf record is refused here: "
            + (rec.stderr.strip().splitlines() or ["?"])[-1])
        return
    with open(os.path.join(WORK, "perf.txt"), "w") as fh:
        subprocess.run(["perf", "script", "-i", "perf.data"], cwd=WORK, stdout=fh, check=True,
                       stderr=subprocess.DEVNULL)
    r = sonde("import", "perf.txt", "-o", "imp.json", check=False)
    if r.returncode:
        tap(False, "import of perf script: sonde import", r.stderr)
        return
    rep = subprocess.run(["perf", "report", "-i", "perf.data", "--stdio", "--no-children",
                          "--sort", "sym", "-g", "none", "--percent-limit", "0"], cwd=WORK,
                         capture_output=True, text=True, check=True).stdout
    theirs = {}
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(\S+)", line)
        if m:
            theirs[m.group(2)] = theirs.get(m.group(2), 0) + float(m.group(1))
    own = sonde_functions("imp.json")
    total = sum(int(r["self_ns"]) for r in own.values())
    ours = {fn: 100.0 * int(r["self_ns"]) / total for fn, r in own.items()} if total else {}
    bad = [f"{fn}: perf {pct:.2f} %, sonde {ours.get(fn, 0):.2f} %"
           for fn, pct in theirs.items() if pct >= 1 and abs(pct - ours.get(fn, 0)) > 0.5]
    top = max(theirs, key=theirs.get) if theirs else None
    # perf.data itself: read through perf script, the same profile
    sonde("import", "perf.data", "-o", "imp-data.json")
    direct = {fn: r["self_ns"] for fn, r in sonde_functions("imp-data.json").items()}
    if direct != {fn: r["self_ns"] for fn, r in own.items()}:
        bad.append("sonde import perf.data differs from the import of perf script's output")
    tap(not bad and top == "hot" and max(ours, key=ours.get) == "hot",
        f"import of perf script (perf record -g of p-shares): each function's share is perf "
        f"report's (hot {theirs.get('hot', 0):.1f} %, warm {theirs.get('warm', 0):.1f} %)",
        "\n".join(bad))


def roundtrip():
    """sample profile -> pprof -> sonde import -> pprof: go tool pprof reads the same."""
    if not os.path.exists(os.path.join(WORK, "smp.pb.gz")):
        tap(True, "export, import, export # SKIP no sample profile here")
        return
    sonde("import", "smp.pb.gz", "-o", "back.json")
    sonde("export", "back.json", "-f", "pprof", "-o", "back.pb.gz")
    a = pprof_top("smp.pb.gz", "cpu", "ns")
    b = pprof_top("back.pb.gz", "cpu", "ns")
    c = pprof_top("smp.pb.gz", "samples")
    d = pprof_top("back.pb.gz", "samples")
    tap(a == b and c == d and a[1],
        f"export, import, export: the same per-function CPU time and samples "
        f"({len(a[0])} functions, {c[1]} samples)",
        "" if a == b else f"first {sorted(a[0].items())[:5]}\nagain {sorted(b[0].items())[:5]}")


def import_refusals():
    with open(os.path.join(WORK, "junk.bin"), "wb") as fh:
        fh.write(bytes(range(256)) * 4)
    r = sonde("import", "junk.bin", check=False)
    tap(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
        "import of neither format: exit 2, one line", r.stderr)
    r = sonde("import", "mem.pb.gz", check=False)
    tap(r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1 and "time" in r.stderr,
        "import of a heap profile (pprof of bytes): exit 3, one line", r.stderr)
    with open(os.path.join(WORK, "cut.pb"), "wb") as fh:
        # inside its first field (sample_type's length says more bytes follow)
        fh.write(gzip.open(os.path.join(WORK, "x1.pb")).read()[:3])
    r = sonde("import", "cut.pb", check=False)
    tap(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
        "import of a pprof cut short: exit 2, one line", f"exit {r.returncode}: {r.stderr}")


def refusals():
    sonde("collect", "time", "-r", "1", "-o", "t.json", "--", "/bin/true")
    r = sonde("export", "t.json", "-f", "pprof", check=False)
    tap(r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1 and "no stacks" in r.stderr,
        "a profile without stacks: exit 3, one line", r.stderr)
    r = sonde("export", "cf-recurse.json", "-f", "pprof", "-o", "x.pb.zst", check=False)
    tap(r.returncode == 2 and "gzip" in r.stderr and not os.path.exists(
        os.path.join(WORK, "x.pb.zst")), "a .zst name: exit 2, nothing written", r.stderr)


if not shutil.which("go"):
    print("1..0 # SKIP go tool pprof is not installed (golang-go: scripts/install-deps)")
    sys.exit(0)
WORK = tempfile.mkdtemp(prefix="sonde-pprof-")
os.environ.setdefault("GOCACHE", os.path.join(WORK, ".gocache"))
os.environ.setdefault("HOME", WORK)
try:
    trace_case(f"{PROGS}/cf-recurse")
    trace_case(f"{PROGS}/cf-threads")
    sample_case()
    memory_case()
    python_case()
    stability()
    refusals()
    http_case()
    perf_case()
    roundtrip()
    import_refusals()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
print(f"1..{n}")
