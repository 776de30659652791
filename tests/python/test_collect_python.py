"""`sonde collect python -- python3 PROGRAM`: the program runs as python3 would
run it (argv, sys.path[0], __main__, exit status, traceback), every call is
counted as cProfile (the peer) counts it on the same program, and the profile
loads in every view."""
import json
import os
import pstats
import re
import shutil
import subprocess

import pytest

PY = "/usr/bin/python3"

PROGRAM = r'''
import asyncio, sys, threading
import sonde

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def leaf(i):
    return i * 2

def loop(n):
    return sum(leaf(i) for i in range(n))

class Shape:
    def area(self):
        return 3

def fails():
    raise ValueError("x")

def catcher():
    for _ in range(4):
        try:
            fails()
        except ValueError:
            pass

def gen(n):
    for i in range(n):
        yield i

async def tick(k):
    await asyncio.sleep(0)
    return k

async def gather():
    return await asyncio.gather(*(tick(k) for k in range(5)))

def sized(n):
    sonde.trace_size(n)
    return sum(range(n * 10000))

def worker():
    for _ in range(7):
        Shape().area()

def main():
    fib(int(sys.argv[1]))
    loop(100)
    catcher()
    list(gen(10))
    asyncio.run(gather())
    for n in (10, 20, 40, 80, 160, 320):
        sized(n)
    t = threading.Thread(target=worker, name="painter")
    t.start()
    t.join()
    print("argv", sys.argv[1:], "path0", sys.path[0], "name", __name__)

if __name__ == "__main__":
    main()
'''


def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120, **kw)


@pytest.fixture
def program(tmp_path, sonde_bin):
    """prog.py, and the environment of sonde and the interpreters: the build's
    package, and in a sanitized build the sanitizer runtimes the extension needs."""
    from conftest import target_env
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    return path, target_env()


def calls(profile, name):
    for v in profile["resource_type_map"].values():
        if v["uid"] == name:
            return v["summary"]["calls"]
    return 0


def collect(sonde_bin, tmp_path, env, *cmd, opts=()):
    out = tmp_path / "calls.json"
    r = run(sonde_bin, "collect", "python", *opts, "-o", str(out), "--", *cmd, cwd=tmp_path,
            env=env)
    return r, (json.loads(out.read_text()) if out.exists() else None)


def test_the_same_counts_as_cprofile(program, sonde_bin, tmp_path):
    """Every function of the program, called as often as cProfile says, on the
    same program run the same way (cProfile sees the main thread only, so the
    painter thread's calls are compared with the known answer)."""
    path, env = program
    r, p = collect(sonde_bin, tmp_path, env, PY, str(path), "12")
    assert r.returncode == 0, r.stderr
    peer_out = tmp_path / "peer.prof"
    r2 = run(PY, "-m", "cProfile", "-o", str(peer_out), str(path), "12", cwd=tmp_path, env=env)
    assert r2.returncode == 0, r2.stderr
    peer = {}
    for (fname, _line, name), (_cc, nc, _tt, _ct, _c) in pstats.Stats(str(peer_out)).stats.items():
        if fname == str(path) and name not in ("<module>", "<genexpr>", "worker", "area"):
            peer[name] = nc
    mine = {}
    for v in p["resource_type_map"].values():
        # a name another function shares carries its file and line ("gather
        # (prog.py:51)": asyncio has a gather too)
        short = re.sub(r" \(.*:\d+\)$", "", v["uid"]).rsplit(".", 1)[-1]
        if v.get("location") == str(path) and short in peer:
            mine[short] = v["summary"]["calls"]
    assert mine == peer
    # the known answers
    assert peer["fib"] == 465 and peer["leaf"] == 100 and peer["fails"] == 4
    assert peer["gen"] == 11  # a generator's every resumption is a call, for both
    assert calls(p, "worker") == 1 and calls(p, "Shape.area") == 7
    assert p["stats"]["dropped_events"] == 0


def test_the_program_runs_as_under_python3(program, sonde_bin, tmp_path):
    path, env = program
    plain = run(PY, str(path), "5", "a b", cwd=tmp_path, env=env)
    r, p = collect(sonde_bin, tmp_path, env, PY, str(path), "5", "a b")
    assert r.returncode == 0 and plain.returncode == 0
    assert r.stdout == plain.stdout  # argv, sys.path[0] and __name__
    assert "['5', 'a b']" in plain.stdout and str(tmp_path) in plain.stdout
    t = p["trace"]
    assert p["header"]["cmd"].startswith(PY) and t["processes"][0]["exe"] == str(path)
    names = sorted(x["name"] for x in t["threads"])
    assert names == ["MainThread", "painter"]
    # the runner's own frames are not the program's
    where = {v.get("location") or "" for v in p["resource_type_map"].values()}
    assert not any(w.endswith(("sonde/run.py", "runpy.py")) for w in where)
    assert "sys.exit" not in {v["uid"] for v in p["resource_type_map"].values()}


def test_the_program_imports_its_own_modules(program, sonde_bin, tmp_path):
    """The runner loads no module the program would import itself: what is
    loaded before its first line beyond plain python3's is the collector's
    (sonde, and atexit, built in), so the program's imports of json, re,
    argparse, subprocess or threading cost what they cost without sonde (the
    runner loaded 88 modules more than python3 before, then 18 with threading
    and the 9 it imports: `python3 -m cProfile` loads 54 more). threading is
    hooked where the program imports it (test_threads_started_after_import)."""
    _path, env = program
    code = "import sys; print(' '.join(sorted(sys.modules)))"
    plain = set(run(PY, "-c", code, cwd=tmp_path, env=env).stdout.split())
    r, _p = collect(sonde_bin, tmp_path, env, PY, "-c", code)
    extra = set(r.stdout.split()) - plain
    ours = {m for m in extra if m == "sonde" or m.startswith("sonde.")}
    assert r.returncode == 0 and ours
    assert not extra & {"json", "re", "argparse", "subprocess", "inspect", "dataclasses", "csv",
                        "pickle", "tracemalloc", "ast", "warnings", "runpy"}
    assert extra - ours <= {"atexit"}, sorted(extra - ours)


def test_threads_started_after_import(program, sonde_bin, tmp_path):
    """threading imported by the program, not before it: its threads' calls are
    recorded and named, with the profile hook (C calls) and the frame evaluator
    (--no-c-calls) alike, and the import itself is in the profile."""
    _path, env = program
    prog = tmp_path / "thr.py"
    # (found first without loading it, as importlib.util.find_spec does: the hook
    # waits for the load)
    prog.write_text("import importlib.util\n"
                    "assert importlib.util.find_spec('threading')\n"
                    "import threading\n"
                    "def leaf(i):\n    return i * 2\n"
                    "def work(n):\n    return sum(leaf(i) for i in range(n))\n"
                    "ts = [threading.Thread(target=work, args=(100,), name=f'w{k}') for k in range(3)]\n"
                    "for t in ts:\n    t.start()\n"
                    "for t in ts:\n    t.join()\n")
    for opts in ((), ("--no-c-calls",)):
        r, p = collect(sonde_bin, tmp_path, env, PY, str(prog), opts=opts)
        assert r.returncode == 0, r.stderr
        assert calls(p, "leaf") == 300 and calls(p, "work") == 3, opts
        names = {t.get("name") for t in p["trace"]["threads"]}
        assert {"w0", "w1", "w2", "MainThread"} <= names, (opts, names)
        assert any(v["uid"] == "<module> (threading.py:1)" and
                   v.get("location", "").endswith("/threading.py")
                   for v in p["resource_type_map"].values()), opts


def test_names_as_cprofile_gives_them(sonde_bin, tmp_path):
    """Two functions of one name are two rows, told apart by file and line as
    cProfile tells them (a.py:1(helper), b.py:1(helper)); a built-in method is
    named by the class that defines it, whatever it was first called on (cProfile:
    <method 'setdefault' of 'dict' objects>, after enum's _EnumDict called it)."""
    from conftest import target_env
    env = target_env()
    (tmp_path / "a.py").write_text("def helper():\n    return 1\n")
    (tmp_path / "b.py").write_text("def helper():\n    return 2\n")
    prog = tmp_path / "main.py"
    prog.write_text("import a, b, enum\n"
                    "class E(enum.Enum):\n    X = 1\n    Y = 2\n"
                    "d = {}\n"
                    "for i in range(5):\n"
                    "    a.helper(); b.helper(); b.helper()\n"
                    "    d.setdefault(i, 0)\n")
    peer_out = tmp_path / "peer.prof"
    r = run(PY, "-m", "cProfile", "-o", str(peer_out), str(prog), cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    peer = {}
    for (fname, line, name), (_cc, nc, _tt, _ct, _c) in pstats.Stats(str(peer_out)).stats.items():
        if name == "helper":
            peer[f"helper ({os.path.basename(fname)}:{line})"] = nc
        m = re.match(r"<method '(\w+)' of '(\w+)' objects>", name)
        if m and m.group(1) == "setdefault":
            peer[f"{m.group(2)}.{m.group(1)}"] = nc
    r, p = collect(sonde_bin, tmp_path, env, PY, str(prog))
    assert r.returncode == 0, r.stderr
    uids = {v["uid"] for v in p["resource_type_map"].values()}
    assert peer.keys() <= uids, (peer, sorted(u for u in uids if "helper" in u or "setdefault" in u))
    assert {k: calls(p, k) for k in peer if "helper" in k} == {
        "helper (a.py:1)": 5, "helper (b.py:1)": 10} == {k: v for k, v in peer.items() if "helper" in k}
    assert not any(u.endswith("_EnumDict.setdefault") for u in uids)


def test_module_command_stdin_and_shebang(program, sonde_bin, tmp_path):
    path, env = program
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("import sys\ndef m():\n    return len(sys.argv)\n"
                                     "print('mod', sys.argv[1:], m())\n")
    r, p = collect(sonde_bin, tmp_path, env, PY, "-m", "pkg", "x")
    assert r.returncode == 0 and "mod ['x'] 2" in r.stdout and calls(p, "m") == 1
    r, p = collect(sonde_bin, tmp_path, env, PY, "-B", "-X", "dev", "-uc",
                   "import sys\ndef c():\n    return sys.flags.dev_mode\nprint('c', c(), sys.argv)",
                   "y")
    assert r.returncode == 0 and "c True ['-c', 'y']" in r.stdout and calls(p, "c") == 1
    (tmp_path / "in.py").write_text("def s():\n    pass\ns()\ns()\n")
    r, p = collect(sonde_bin, tmp_path, env, PY, "-", opts=("--input", "in.py"))
    assert r.returncode == 0 and calls(p, "s") == 2
    script = tmp_path / "tool"
    script.write_text(f"#!{PY}\nimport sys\ndef t():\n    return 1\nt()\nsys.exit(3)\n")
    script.chmod(0o755)
    r, p = collect(sonde_bin, tmp_path, env, str(script))
    assert r.returncode != 0 and "exited with status 3" in r.stderr  # the program's status
    assert calls(p, "t") == 1 and p["trace"]["processes"][0]["exe"] == str(script)


def test_exceptions_exit_and_os_exit(program, sonde_bin, tmp_path):
    path, env = program
    code = "def g():\n    return 1 / 0\ng()\n"
    plain = run(PY, "-c", code, cwd=tmp_path, env=env)
    r, p = collect(sonde_bin, tmp_path, env, PY, "-c", code)
    # the traceback python3 prints: the runner's frames are not in it
    assert plain.stderr in r.stderr and "run.py" not in r.stderr
    assert "exited with status 1" in r.stderr and calls(p, "g") == 1
    r, p = collect(sonde_bin, tmp_path, env, PY, "-c",
                   "import os\ndef h():\n    os._exit(4)\nh()\n")
    assert "exited with status 4" in r.stderr and calls(p, "h") == 1  # written before _exit


def test_a_crash_keeps_what_was_recorded(program, sonde_bin, tmp_path):
    """The events go to sonde as they happen: a program killed by SIGKILL (no exit
    handler runs) or by SIGSEGV keeps the calls it made."""
    _path, env = program
    for sig in ("SIGKILL", "SIGSEGV"):
        code = (f"import os, signal, threading\ndef f():\n    return 1\n"
                f"def g():\n    for _ in range(5):\n        f()\n"
                f"t = threading.Thread(target=g, name='helper')\nt.start()\nt.join()\n"
                f"for _ in range(3):\n    f()\nos.kill(os.getpid(), signal.{sig})\n")
        r, p = collect(sonde_bin, tmp_path, env, PY, "-c", code)
        assert "signal" in r.stderr, r.stderr  # the program's end is said
        assert calls(p, "f") == 8 and calls(p, "g") == 1, sig
        assert "helper" in {t["name"] for t in p["trace"]["threads"]}
        assert p["stats"]["trace"]["python"]["runs_without_data"] == 0


def test_bad_commands_one_line(sonde_bin, tmp_path, program):
    _path, env = program
    for cmd, says in ((["/bin/true"], "is not a Python interpreter"),
                      ([PY], "no program to run"), ([PY, "-c"], "-c needs its argument"),
                      ([PY, "--version"], "runs no program")):
        r, p = collect(sonde_bin, tmp_path, env, *cmd)
        assert r.returncode == 2 and p is None, (cmd, r.stderr)
        lines = [x for x in r.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and says in lines[0], (cmd, r.stderr)
    r, _ = collect(sonde_bin, tmp_path, env, PY, "-c", "pass", opts=("--filter", "(["))
    assert r.returncode == 2 and "--filter" in r.stderr
    r, _ = collect(sonde_bin, tmp_path, dict(env, SONDE_PYTHON_DIR="/nonexistent"), PY, "-c",
                   "pass")
    assert r.returncode == 3 and "package was not found" in r.stderr
    # an interpreter that cannot import the package (another CPython): said, with versions
    fake = tmp_path / "other" / "sonde"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('_sonde is built for another Python')")
    (fake / "run.py").write_text("")
    r, p = collect(sonde_bin, tmp_path, dict(env, SONDE_PYTHON_DIR=str(fake.parent)), PY, "-c",
                   "pass")
    assert r.returncode == 3 and (p is None or p["stats"]["trace"]["calls"] == 0)
    assert "could not start in " + PY in r.stderr and "built for another Python" in r.stderr


def test_runs_filter_sizes_and_every_view(program, sonde_bin, tmp_path):
    path, env = program
    r, p = collect(sonde_bin, tmp_path, env, PY, str(path), "10", opts=("-r", "2"))
    assert r.returncode == 0, r.stderr
    assert len(p["trace"]["processes"]) == 2 and calls(p, "fib") == 2 * 177
    f = tmp_path / "calls.json"
    assert json.loads(f.read_text())["resources"]["sized#0"]["structure-unit-size"][:6] == \
        [10, 20, 40, 80, 160, 320]
    if os.geteuid() == 0:  # merged with system calls, the sizes stay with their calls
        r, p2 = collect(sonde_bin, tmp_path, env, PY, str(path), "10", opts=("--syscalls",))
        assert p2["resources"]["sized#0"]["structure-unit-size"][:6] == [10, 20, 40, 80, 160, 320]
        assert calls(p2, "fib") == 177 and calls(p2, "syscall:clone3") == 1
        r, p = collect(sonde_bin, tmp_path, env, PY, str(path), "10", opts=("-r", "2"))
    # time grows linearly with the size given: the linear model fits (the best by R²
    # may be one that nests it, quadratic or power, within noise). A run that the
    # tests beside it slowed at one size fits worse (0.70 once): three runs at most
    for _try in range(3):
        r = run(sonde_bin, "postprocess", str(f), "regression", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        lin = [m for m in json.loads(f.read_text())["models"]
               if m["uid"] == "sized" and m["model"] == "linear"]
        if lin and lin[0]["r_square"] > 0.8:
            break
        r, p = collect(sonde_bin, tmp_path, env, PY, str(path), "10", opts=("-r", "2"))
        assert r.returncode == 0, r.stderr
    assert lin and lin[0]["r_square"] > 0.8, lin  # 0.97-0.999 idle
    assert lin[0]["coeffs"][1]["value"] > 0  # and grows
    for view in ("report", "graph"):
        r = run(sonde_bin, "show", str(f), view, cwd=tmp_path)
        assert r.returncode == 0 and "<module>" in r.stdout, (view, r.stderr)
    r = run(sonde_bin, "show", str(f), "flamegraph", "-o", str(tmp_path / "f.svg"))
    assert r.returncode == 0 and "sized" in (tmp_path / "f.svg").read_text()
    r = run(sonde_bin, "export", "--format", "perfetto", str(f), "-o", str(tmp_path / "t.json"))
    assert r.returncode == 0, r.stderr
    trace = json.loads((tmp_path / "t.json").read_text())
    tracks = {e["args"]["name"] for e in trace["traceEvents"]
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    assert {"MainThread", "painter"} <= tracks
    r, p = collect(sonde_bin, tmp_path, env, PY, str(path), "10",
                   opts=("--filter", "^(fib|main)$", "--no-c-calls"))
    names = {v["uid"] for v in p["resource_type_map"].values()}
    assert names == {"fib", "main"} and p["stats"]["trace"]["filtered"] > 0
    assert not any(re.match(r"builtins\.", n) for n in names)


def test_syscalls_counted_as_strace_counts_them(program, sonde_bin, tmp_path):
    """The peer: strace -c counts the same program's system calls."""
    if os.geteuid() != 0:
        pytest.skip("system calls need root (or kernel.perf_event_paranoid -1)")
    if not shutil.which("strace"):
        pytest.skip("strace is not installed (scripts/install-deps installs it)")
    _path, env = program
    prog = tmp_path / "io.py"
    prog.write_text("import os\nfd = os.open(os.devnull, os.O_WRONLY)\n"
                    "def writer(n):\n    for _ in range(n):\n        os.write(fd, b'x')\n"
                    "def asker(n):\n    for _ in range(n):\n        os.getppid()\n"
                    "writer(400)\nasker(150)\n")
    summary = tmp_path / "strace.txt"
    r = run("strace", "-f", "-c", "-o", str(summary), "-e", "trace=write,getppid", PY, str(prog),
            env=env)
    assert r.returncode == 0, r.stderr
    peer = {}
    for line in summary.read_text().splitlines():
        f = line.split()
        if len(f) >= 5 and f[-1] in ("write", "getppid"):
            peer[f[-1]] = int(f[3])
    for opts in (("--syscalls",), ("--syscalls", "--no-c-calls")):
        r, p = collect(sonde_bin, tmp_path, env, PY, str(prog), opts=opts)
        assert r.returncode == 0, r.stderr
        mine = {n: calls(p, "syscall:" + n) for n in peer}
        assert mine == peer == {"write": 400, "getppid": 150}, opts
        assert p["stats"]["trace"]["syscalls"]["lost"] == 0


def test_threads_beyond_the_rings(program, sonde_bin, tmp_path):
    """4 200 threads one after another, against 4 096 rings: each gives its ring back
    when it ends, so every call is recorded."""
    _path, env = program
    prog = tmp_path / "threads.py"
    prog.write_text("import threading\ndef f():\n    return 1\nfor _ in range(4200):\n"
                    "    t = threading.Thread(target=f)\n    t.start()\n    t.join()\n")
    r, p = collect(sonde_bin, tmp_path, env, PY, str(prog), opts=("--no-c-calls", "--ring-mib", "1"))
    assert r.returncode == 0, r.stderr
    assert calls(p, "f") == 4200 and p["stats"]["dropped_events"] == 0
    assert len(p["trace"]["threads"]) == 4201
