"""The Python CPU collector: exact calls against known answers and against
cProfile (the peer) on the same program, chaining, threads, asyncio,
exceptions, generators, full rings, fork, and its profile in every view."""
import asyncio
import cProfile
import json
import os
import pstats
import subprocess
import sys
import threading
import warnings

import pytest

import sonde


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def leaf(i):
    return i * 2


def loop(n):
    s = 0
    for i in range(n):
        s += leaf(i)
    return s


def outer():
    return inner() + inner() + inner()


def inner():
    return 1


def calls(profile, name):
    for k, v in profile["resource_type_map"].items():
        if v["uid"] == name:
            return v["summary"]["calls"]
    return 0


def collect(fn, *args, **kw):
    c = sonde.CpuCollector(**kw)
    with c:
        fn(*args)
    return c, c.profile("test")


def test_exact_calls_recursion_and_loop():
    c, p = collect(lambda: (fib(15), loop(1000)))
    assert calls(p, "fib") == 1973
    assert calls(p, "leaf") == 1000
    assert calls(p, "loop") == 1
    assert c.results["dropped"] == 0 and c.results["lost"] == 0
    t = p["stats"]["trace"]
    assert t["engine"] == "python" and t["unfinished"] == 0


@pytest.mark.parametrize("c_calls", [True, False], ids=["profile-hook", "frame-evaluator"])
def test_same_counts_as_cprofile(c_calls):
    """The peer: cProfile's ncalls per function, on the same program, with either
    engine: the profile hook (C calls too) and the frame evaluator (Python only)."""
    def program():
        fib(16)
        loop(2000)
        outer()

    pr = cProfile.Profile()
    pr.runcall(program)
    st = pstats.Stats(pr).stats
    peer = {name: nc for (_f, _l, name), (_cc, nc, _tt, _ct, _c) in st.items()
            if name in ("fib", "leaf", "loop", "outer", "inner")}
    _c, p = collect(program, c_calls=c_calls)
    mine = {n: calls(p, n) for n in peer}
    assert mine == peer and peer["fib"] == 3193
    assert p["stats"]["trace"]["unmatched_exits"] == 0  # frames entered before start: not returns
    # the profile names the hook that recorded it
    assert p["stats"]["trace"]["python"]["hook"] == (
        "C profile function" if c_calls else "frame evaluator")


def test_nesting_in_the_call_graph():
    _c, p = collect(outer)
    edges = json.loads(sonde.view(p, "graph", format="json"))
    e = [x for x in edges if x["caller"] == "outer" and x["callee"] == "inner"]
    assert len(e) == 1 and e[0]["calls"] == 3


def test_chained_profile_function_sees_every_event():
    seen = []

    def mine(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "fib":
            seen.append(1)

    sys.setprofile(mine)
    try:
        _c, p = collect(fib, 12)
        assert sys.getprofile() is mine  # put back at stop
    finally:
        sys.setprofile(None)
    assert len(seen) == calls(p, "fib") == 465


@pytest.mark.parametrize("c_calls", [True, False], ids=["profile-hook", "frame-evaluator"])
def test_threads_running_and_started_later(c_calls):
    go = threading.Event()
    res = []

    def early():
        go.wait()
        res.append(fib(10))

    t0 = threading.Thread(target=early, name="early")
    t0.start()
    c = sonde.CpuCollector(c_calls=c_calls)
    c.start()
    go.set()
    ts = [threading.Thread(target=fib, args=(10,), name=f"w{i}") for i in range(4)]
    for t in ts:
        t.start()
    for t in ts + [t0]:
        t.join()
    c.stop()
    p = c.profile("threads")
    assert calls(p, "fib") == 5 * 177
    names = {t["name"] for t in p["trace"]["threads"]}
    assert {"early", "w0", "w3"} <= names
    assert len({t["tid"] for t in p["trace"]["threads"]}) >= 6
    assert threading.getprofile() is None and sys.getprofile() is None


@pytest.mark.parametrize("c_calls", [True, False], ids=["profile-hook", "frame-evaluator"])
def test_asyncio_tasks(c_calls):
    async def job(i):
        await asyncio.sleep(0)
        return leaf(i)

    async def main():
        return await asyncio.gather(*(job(i) for i in range(10)))

    pr = cProfile.Profile()
    pr.runcall(asyncio.run, main())
    peer = sum(v[1] for k, v in pstats.Stats(pr).stats.items() if k[2] == "job")
    _c, p = collect(asyncio.run, main(), c_calls=c_calls)
    assert calls(p, "leaf") == 10
    # a coroutine that suspends once is resumed once: two calls each, as cProfile counts
    assert calls(p, "test_asyncio_tasks.<locals>.job") == peer == 20


@pytest.mark.parametrize("c_calls", [True, False], ids=["profile-hook", "frame-evaluator"])
def test_exceptions_and_generators(c_calls):
    def thrower():
        raise ValueError("x")

    def catcher():
        for _ in range(5):
            try:
                thrower()
            except ValueError:
                pass

    def gen():
        yield 1
        yield 2
        yield 3

    _c, p = collect(lambda: (catcher(), list(gen())), c_calls=c_calls)
    assert calls(p, "test_exceptions_and_generators.<locals>.thrower") == 5
    # each resumption of a generator is a call (cProfile counts them the same way)
    assert calls(p, "test_exceptions_and_generators.<locals>.gen") == 4
    assert p["stats"]["trace"]["unfinished"] == 0


def test_full_ring_drops_oldest_and_counts():
    c = sonde.CpuCollector(buffer=4096, c_calls=False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with c:
            loop(5000)
    assert any("dropped" in str(x.message) for x in w)
    r = c.results
    assert r["dropped"] > 0
    assert r["events"] + r["dropped"] >= 2 * 5001
    ev = c.events()
    assert len(ev) == r["events"] <= 4096 // 16
    # the newest survive: the last events are loop's last leaf calls and its return
    assert ev[-1]["event"] == "return"
    p = c.profile("full")
    assert p["stats"]["dropped_events"] == r["dropped"]
    assert any(x["code"] == "ring-full" for x in p["stats"]["warnings"])


def test_states():
    c = sonde.CpuCollector()
    assert c.state == "idle"
    with pytest.raises(sonde.StateError):
        c.stop()
    with pytest.raises(sonde.StateError):
        c.get_thread_local_buffer()
    c.start()
    assert c.state == "collecting"
    with pytest.raises(sonde.StateError):
        c.start()
    leaf(1)
    mine = c.get_thread_local_buffer()
    assert any(e["function"] == "leaf" and e["event"] == "call" for e in mine)
    assert all(e["thread"] == threading.get_native_id() for e in mine)
    c.stop()
    assert c.state == "finalized"
    with pytest.raises(sonde.StateError):
        c.start()
    with pytest.raises(ValueError):
        sonde.CpuCollector(buffer=1000)


def test_fork_child_does_not_write_into_the_parents_rings():
    c = sonde.CpuCollector()
    with c:
        pid = os.fork()
        if pid == 0:
            fib(12)
            os._exit(0)
        _, st = os.waitpid(pid, 0)
        fib(5)
    assert os.waitstatus_to_exitcode(st) == 0
    p = c.profile("fork")
    assert calls(p, "fib") == 15
    assert pid not in {e["thread"] for e in c.events()}


def test_profile_in_every_view(sonde_bin, tmp_path):
    c, _p = collect(lambda: (fib(12), outer()))
    path = tmp_path / "cpu.json"
    c.save_profile(path, cmd="test-cpu")
    run = lambda *a: subprocess.run([sonde_bin, *a], capture_output=True, text=True)
    r = run("show", str(path), "report", "-f", "json")
    assert r.returncode == 0, r.stderr
    fns = {f["function"]: f["calls"] for f in json.loads(r.stdout)["functions"]}
    assert fns["fib"] == 465 and fns["inner"] == 3
    assert run("show", str(path), "graph").returncode == 0
    assert run("show", str(path), "flamegraph", "-o", str(tmp_path / "f.svg")).returncode == 0
    r = run("export", str(path), "--format", "perfetto")
    assert r.returncode == 0 and json.loads(r.stdout)["traceEvents"]
    assert run("check", str(path), str(path)).returncode == 0


def syscalls_permitted():
    return os.geteuid() == 0 or open("/proc/sys/kernel/perf_event_paranoid").read().strip() == "-1"


@pytest.mark.parametrize("c_calls", [True, False], ids=["profile-hook", "frame-evaluator"])
def test_syscalls_nested_in_their_caller(c_calls):
    if not syscalls_permitted():
        pytest.skip("system calls need root or kernel.perf_event_paranoid -1")

    def writer(fd, n):
        for _ in range(n):
            os.write(fd, b"x")

    def asker(n):
        for _ in range(n):
            os.getppid()

    fd = os.open(os.devnull, os.O_WRONLY)
    try:
        c = sonde.CpuCollector(c_calls=c_calls, syscalls=True)
        with c:
            writer(fd, 300)
            asker(200)
            t = threading.Thread(target=asker, args=(50,))
            t.start()
            t.join()
    finally:
        os.close(fd)
    p = c.profile("sc")
    assert calls(p, "syscall:write") == 300 and calls(p, "syscall:getppid") == 250
    assert c.results["syscalls_lost"] == 0 and c.results["syscalls_not_recorded"] is None
    edges = json.loads(sonde.view(p, "graph", format="json"))
    callers = {(e["caller"], e["callee"]): e["calls"] for e in edges
               if e["callee"].startswith("syscall:")}
    inner = ("posix.write", "posix.getppid") if c_calls else (
        "test_syscalls_nested_in_their_caller.<locals>.writer",
        "test_syscalls_nested_in_their_caller.<locals>.asker")
    assert callers[(inner[0], "syscall:write")] == 300
    assert callers[(inner[1], "syscall:getppid")] == 250
    # sonde's own (claiming a thread's ring opens its area) are not the program's, which
    # opens nothing (starting a thread makes its own: clone3, mmap, gettid...)
    assert calls(p, "syscall:openat") == 0 and calls(p, "syscall:clone3") == 1


def test_syscalls_not_permitted_are_said(tmp_path):
    """Without the privilege: a warning that says why, and the calls recorded without them."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run a probe as nobody")
    d = os.path.dirname(os.path.abspath(sonde.__file__))
    while d != "/":  # nobody must reach the build's package
        if not os.stat(d).st_mode & 0o001:
            pytest.skip(f"{d} is not searchable by nobody, who runs the probe")
        d = os.path.dirname(d)
    code = ("import os, warnings, sonde\nwarnings.simplefilter('always')\n"
            "c = sonde.CpuCollector(syscalls=True)\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    with c:\n        os.getppid()\n"
            "print(c.results['syscalls_not_recorded'], '|', len(w), '|', c.results['events'])\n")
    from conftest import SANITIZER_PRELOAD
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(sonde.__file__)))
    if SANITIZER_PRELOAD:
        env["LD_PRELOAD"] = SANITIZER_PRELOAD
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd="/", timeout=60)
    assert r.returncode == 0, r.stderr
    why, nwarn, events = (x.strip() for x in r.stdout.split("|"))
    assert "root" in why and int(nwarn) == 1 and int(events) >= 2


def test_threads_beyond_the_rings_keep_recording():
    """1 024 rings, 1 200 threads started one after another: an ended thread gives its
    ring back, and a thread that finds none drains the rings first; nothing is lost."""
    def f():
        return 1

    c = sonde.CpuCollector(buffer=1 << 22, c_calls=False)
    with c:
        for _ in range(1200):
            t = threading.Thread(target=f)
            t.start()
            t.join()
    p = c.profile("threads")
    assert calls(p, "test_threads_beyond_the_rings_keep_recording.<locals>.f") == 1200
    assert c.results["lost"] == 0 and c.results["dropped"] == 0
    assert len(p["trace"]["threads"]) == 1201


def test_a_displaced_hook_is_said():
    """The program's own sys.setprofile takes sonde's hook's place: the calls
    after it are not recorded, and stop says so (it ended recording silently:
    1 973 of 10 042 calls, nothing said)."""
    def mine(frame, event, arg):
        pass

    c = sonde.CpuCollector()
    c.start()
    fib(10)
    sys.setprofile(mine)
    fib(10)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c.stop()
    finally:
        sys.setprofile(None)
    said = [str(x.message) for x in w if issubclass(x.category, sonde.SondeWarning)]
    assert any("replaced sonde's profile hook" in m and "mine" in m for m in said), said
    assert c.results["hook_displaced"] == 1
    # and a collector left alone says nothing
    c = sonde.CpuCollector()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with c:
            fib(10)
    assert c.results["hook_displaced"] == 0
    assert not [x for x in w if "profile hook" in str(x.message)]
