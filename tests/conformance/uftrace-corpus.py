#!/usr/bin/python3
"""uftrace-corpus.py - uftrace's own test programs (tests/data/uftrace) under
uftrace and under sonde: every function's calls and every call path must be
the same (compare.py trace), the program's library calls included (uftrace
records them at the PLT by default; sonde with -s all).

The programs are built by tests/meson.build as uftrace's test suite builds
them (its flags, -finstrument-functions, its libraries under their names),
and run here from a directory where each is t-NAME, as they name each other;
some are built with -pg as well (ufpg-NAME, the mcount entry), and run so.
Python scripts are compared with cProfile, the peer for Python (Debian's
uftrace 0.13 does not trace Python). The whole corpus is covered: a program
that is neither run nor named below with its reason fails the suite.

Where sonde deliberately differs, or the peer records nothing or misses calls,
the check says so and compares what can be compared, and the program's known
answer for the rest (docs/conformance.md).

Environment: SONDE, SRC, PROGS (the build's tests/ directory). Output: TAP.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SONDE = os.environ["SONDE"]
SRC = os.environ["SRC"]
PROGS = os.environ["PROGS"]
DATA = os.path.join(SRC, "tests", "data", "uftrace")
CMP = ["/usr/bin/python3", os.path.join(SRC, "tests", "conformance", "compare.py")]
PY = "/usr/bin/python3"
WORK = tempfile.mkdtemp(prefix="sonde-uftrace-")
n = 0

LIBS = {"lib": "libabc_test_lib.so", "libfoo": "libfoo.so", "libbar": "libbar.so",
        "libbaz": "libbaz.so", "libexcept": "libexcept.so", "libdyn1": "libdyn1.so",
        "libdyn2": "libdyn2.so"}
ARGS = {"autoargs": ["hello"]}  # as uftrace's tests run them (it reads argv[1])
NOT_RUN = {}
# Deliberate differences and the peer's own failures: (compare.py options, what is
# checked besides, in sonde's folded call paths, and why)
SETJMP = "setjmp returns twice: sonde leaves it (and getcontext, vfork, dlsym, which read " \
         "their return address or return twice) out of the library calls it records"
DIFFER = {
    "longjmp": (["--counts-only", "--ignore", "_setjmp"], {}, "uftrace nests the calls after "
                "a longjmp under the frames it abandoned; sonde ends those frames (counted as "
                "unwound); " + SETJMP),
    "longjmp2": (["--counts-only", "--ignore", "_setjmp"], {}, "as longjmp"),
    "longjmp3": (["--counts-only", "--ignore", "_setjmp"], {}, "as longjmp"),
    "ucontext": (["--counts-only", "--ignore", "getcontext,swapcontext"], {},
                 "uftrace nests a context's calls under whatever ran last; sonde keeps each "
                 "context's calls apart, and records no getcontext or swapcontext (they "
                 "return twice, or on another stack)"),
    "dlopen": (["--ignore", "dlsym"], {}, "dlsym reads its return address (RTLD_NEXT): "
               "sonde leaves it out of the library calls it records"),
    "dlopen2": (["--ignore", "dlsym"], {}, "as dlopen"),
    "backtrace": (["--ignore", "backtrace"], {}, "backtrace walks the stack through glibc's "
                  "own copy of the unwinder: sonde leaves it out of the library calls"),
    "vforkexec": (["--counts-only", "--ignore", "vfork,execl"], {"main;execl": 1},
                  "a vfork child shares its parent's memory until it calls exec: sonde "
                  "records its execl in the parent's thread, and no vfork (it returns "
                  "twice)"),
    "thread-exec": (["--ignore", "pthread_join"], {},
                    "a thread calls exec while main may be in pthread_join: uftrace loses that "
                    "call of the old image (sonde's rings hold it, when main got there first)"),
    "racycount": (["--ignore", "pthread_barrier_wait"], {"pthread_barrier_wait": 3},
                  "uftrace misses the barrier waits of the two threads (the program makes "
                  "three)"),
    "thread-tsd": (["--ignore", "free"], {"main;tsd_dtor;free": 1},
                   "uftrace misses main's free in tsd_dtor (the thread's destructor bound it)"),
    "pg-longjmp": (["--counts-only", "--ignore", "_setjmp"], {}, "as longjmp"),
    "pg-longjmp2": (["--counts-only", "--ignore", "_setjmp"], {}, "as longjmp"),
    "pg-exception5": (None, {"main": 1, "main;f()": 1, "main;f();A::A()": 1,
                             "main;f();__cxa_guard_acquire": 1, "main;f();__cxa_guard_abort": 1},
                      "uftrace 0.13 spins without end on this -pg build (an exception thrown "
                      "from a static's constructor): compared with the program's calls"),
}
NO_PEER = {"pg-exception5"}  # the peer does not finish: not run


def tap(good, what, notes=()):
    global n
    n += 1
    print(f"{'ok' if good else 'not ok'} {n} - {what}")
    for line in notes if not good else ():
        print(f"# {line}")
    sys.stdout.flush()


def skip(what, why):
    global n
    n += 1
    print(f"ok {n} - {what} # SKIP {why}")


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          cwd=WORK, timeout=120, **kw)


def folded(profile):
    r = run([SONDE, "export", profile, "-f", "folded", "--weight", "calls"])
    out = {}
    for line in r.stdout.splitlines():
        path, _, count = line.rpartition(" ")
        out[path] = out.get(path, 0) + int(count)
    return out


if not shutil.which("uftrace"):
    print("1..0 # SKIP uftrace is not installed (scripts/install-deps installs it)")
    sys.exit(0)

names = sorted(f[2:].rsplit(".", 1)[0] for f in os.listdir(DATA)
               if f.startswith("s-") and f.endswith((".c", ".cpp")))
for name, lib in LIBS.items():
    os.symlink(os.path.join(PROGS, lib), os.path.join(WORK, lib))
for name in names:
    if name not in LIBS and name not in NOT_RUN:
        os.symlink(os.path.join(PROGS, "uf-" + name), os.path.join(WORK, "t-" + name))
pg = sorted(f[5:] for f in os.listdir(PROGS) if f.startswith("ufpg-") and "." not in f)
for name in pg:
    os.symlink(os.path.join(PROGS, "ufpg-" + name), os.path.join(WORK, "t-pg-" + name))

for name in names + ["pg-" + p for p in pg]:
    if name in LIBS:
        continue  # run through the programs that load them
    if name in NOT_RUN:
        skip(f"s-{name}: not built", NOT_RUN[name])
        continue
    if not os.path.exists(os.path.join(WORK, "t-" + name)):
        tap(False, f"s-{name}: the build has no uf-{name} (tests/meson.build lists every program)")
        continue
    ud, prof = f"ud-{name}", f"tr-{name}.json"
    argv = ["./t-" + name] + ARGS.get(name, [])
    s = run([SONDE, "collect", "trace", "-e", "instrument", "-s", "all", "-q", "-o", prof, "--"] +
            argv)
    u = s if name in NO_PEER else run(["uftrace", "record", "-d", ud] + argv)
    if (s.returncode == 0) != (u.returncode == 0):
        tap(False, f"s-{name}: sonde's target exits {s.returncode}, under uftrace "
            f"{u.returncode}", [s.stderr.strip()[:300]])
        continue
    opts, known, why = DIFFER.get(name, ([], {}, ""))
    notes, good = [], True
    if opts is not None:
        c = run(CMP + ["trace", os.path.join(WORK, ud), os.path.join(WORK, prof)] + opts,
                env=dict(os.environ, SONDE=SONDE))
        if c.returncode != 0 and name not in NO_PEER:
            # both recorded again, once: uftrace loses a thread's last records now
            # and then (s-thread-exit's printf before pthread_exit, on a loaded
            # machine); a difference that is sonde's shows again
            first = c.stdout.strip().splitlines()[-3:]
            shutil.rmtree(os.path.join(WORK, ud), ignore_errors=True)
            s = run([SONDE, "collect", "trace", "-e", "instrument", "-s", "all", "-q", "-o",
                     prof, "--"] + argv)
            u = run(["uftrace", "record", "-d", ud] + argv)
            c = run(CMP + ["trace", os.path.join(WORK, ud), os.path.join(WORK, prof)] + opts,
                    env=dict(os.environ, SONDE=SONDE))
            notes.append("the first recordings differed, both recorded again: " +
                         " / ".join(first))
        good = c.returncode == 0
        notes += c.stdout.strip().splitlines()[-8:] + c.stderr.strip().splitlines()[-3:]
    if known:
        mine = folded(prof)
        got = {k: sum(v for p, v in mine.items() if p == k or p.endswith(";" + k))
               if ";" not in k else mine.get(k, 0) for k in known}
        if got != known:
            good = False
            notes.append(f"known calls {known}, sonde {got}")
    what = f"s-{name}: the same calls as uftrace's"
    if why:
        what = f"s-{name}: {why}" + ("; the rest as uftrace's" if opts is not None else "")
    tap(good, what, notes)
    if good and notes and notes[0].startswith("the first recordings"):
        print(f"# {notes[0]}")  # said even when the second agreed

# ---- the Python scripts, against cProfile ---------------------------------------------------
pys = sorted(f for f in os.listdir(DATA) if f.startswith("s-") and f.endswith(".py"))
# a sanitized build's extension needs the sanitizer runtimes preloaded into the
# interpreter (as tests/python/run does), and leaks are the interpreter's own
PYENV = dict(os.environ)
if "address" in os.environ.get("SANITIZE", ""):
    libs = [subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True,
                           text=True).stdout.strip() for lib in ("libasan.so", "libubsan.so")]
    PYENV["LD_PRELOAD"] = " ".join(libs)
    PYENV["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
shutil.copy(os.path.join(DATA, "mymod.py"), WORK)
for f in pys:
    shutil.copy(os.path.join(DATA, f), WORK)
    script = os.path.join(WORK, f)
    peer_out = os.path.join(WORK, f + ".prof")
    p = run([PY, "-m", "cProfile", "-o", peer_out, script])
    s = run([SONDE, "collect", "python", "-q", "-o", f + ".json", "--", PY, script], env=PYENV)
    if s.returncode != p.returncode:
        tap(False, f"{f}: exits {s.returncode} under sonde, {p.returncode} under cProfile",
            [s.stderr.strip()[:300]])
        continue
    import json
    import pstats

    with open(os.path.join(WORK, f + ".json"), encoding="utf-8") as fh:
        prof = json.load(fh)
    mine = {}
    for v in prof["resource_type_map"].values():
        base = os.path.basename(v.get("location", ""))
        if base in (f, "mymod.py"):
            name = v["uid"].split(" (")[0]
            if name != "<module>":
                mine[(base, name)] = mine.get((base, name), 0) + v["summary"]["calls"]
    if not os.path.exists(peer_out):
        # os._exit(): cProfile writes its output at exit, so it writes nothing
        known = {(f, "a"): 1, (f, "b"): 1, (f, "c"): 1}
        tap(mine == known, f"{f}: the script leaves with os._exit, so cProfile writes nothing; "
            "sonde's calls are the script's (a, b, c once each)", [f"sonde {mine}"])
        continue
    peer = {}
    for (fname, _line, name), (_cc, nc, *_rest) in pstats.Stats(peer_out).stats.items():
        base = os.path.basename(fname)
        if base in (f, "mymod.py") and name != "<module>":
            peer[(base, name)] = peer.get((base, name), 0) + nc
    tap(mine == peer and bool(peer), f"{f}: the same calls as cProfile's",
        [f"cProfile {sorted(peer.items())}", f"sonde {sorted(mine.items())}"])
print(f"1..{n}")
