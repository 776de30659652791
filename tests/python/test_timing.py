"""Region timers and metrics: known answers, checked against time.perf_counter_ns
(the clock Python users trust) on the same regions."""
import threading
import time

import pytest

import sonde


def test_sleep_region_measures_50ms():
    t = sonde.Timer()
    a = time.perf_counter_ns()
    with t.measure("sleep"):
        time.sleep(0.05)
    outer = (time.perf_counter_ns() - a) / 1e6
    ms = t.get_elapsed("sleep")
    # at least the sleep, and no more than the clock around it says (a loaded
    # machine may wake the sleeper late: that is time the region took)
    assert 50.0 <= ms <= outer, (ms, outer)


def test_agrees_with_perf_counter_ns():
    """The same region timed by perf_counter_ns around it: sonde's duration lies
    inside the outer pair and within 0.2 ms of it."""
    t = sonde.Timer()
    for d in (0.001, 0.005, 0.02):
        a = time.perf_counter_ns()
        with t.measure("r"):
            time.sleep(d)
        b = time.perf_counter_ns()
        ns = t.durations("r")[-1]
        assert ns <= b - a
        assert (b - a) - ns < 200_000, (b - a, ns)
        assert ns >= d * 1e9


def test_warmup_excluded():
    t = sonde.Timer(warmup=3)
    for i in range(8):
        with t.measure("step"):
            time.sleep(0.1 if i < 3 else 0.002)  # slow warm-up runs
    s = t.stats("step")
    assert s.n == 5 and s.warmup == 3
    assert s.max < 50.0, s  # none of the 100 ms warm-up runs
    assert len(t.durations("step", include_warmup=True)) == 8


def test_stats_fields():
    t = sonde.Timer()
    for _ in range(10):
        with t.measure("x"):
            time.sleep(0.002)
    s = t.stats("x")
    assert s.unit == "ms" and s.n == 10
    assert s.min <= s.median <= s.max
    assert s.ci95[0] <= s.mean <= s.ci95[1]
    assert s.std is not None and s.std >= 0
    assert isinstance(s.outliers, int)
    assert "ms" in str(s)


def test_nested_regions_nest():
    t = sonde.Timer()
    with t.measure("outer"):
        time.sleep(0.002)
        with t.measure("inner"):
            time.sleep(0.005)
    rows = t.samples()
    (o_start, o_end, o_depth, _, _), = rows["outer"]
    (i_start, i_end, i_depth, _, _), = rows["inner"]
    assert (o_depth, i_depth) == (0, 1)
    assert o_start <= i_start and i_end <= o_end
    assert t.get_elapsed("outer") > t.get_elapsed("inner") >= 5.0


def test_start_stop_and_state_errors():
    t = sonde.Timer()
    t.start("a")
    time.sleep(0.003)
    t.stop("a")
    assert t.get_elapsed("a") >= 3.0
    with pytest.raises(sonde.StateError):
        t.stop("a")  # stopped already
    with pytest.raises(sonde.StateError):
        t.stop("never")  # never started
    with pytest.raises(RuntimeError):  # StateError is a RuntimeError too
        t.stop("never")
    with pytest.raises(KeyError):
        t.stats("nothing")


def test_time_runs_warmup_plus_repeat():
    calls = []
    t = sonde.Timer(warmup=2, repeat=5)
    s = t.time(lambda: calls.append(time.sleep(0.001)), name="f")
    assert len(calls) == 7
    assert s.n == 5 and s.warmup == 2
    assert s.mean >= 1.0


def test_threads_recorded_per_thread_and_merged():
    t = sonde.Timer()
    region = t.measure("work")

    def worker():
        for _ in range(50):
            with region:
                time.sleep(0.0002)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    rows = t.samples()["work"]
    assert len(rows) == 200
    assert len({tid for *_x, tid, _w in rows}) == 4
    ends = [e for _s, e, *_ in rows]
    assert ends == sorted(ends)  # merged in end-time order
    # one thread's open region is not another's
    t.start("mine")
    err = []
    th = threading.Thread(target=lambda: err.append(_raises(lambda: t.stop("mine"))))
    th.start()
    th.join()
    assert err == [True]
    t.stop("mine")


def _raises(fn):
    try:
        fn()
    except sonde.StateError:
        return True
    return False


def test_synchronize_not_applied_is_said():
    with pytest.warns(sonde.SondeWarning, match="not applied"):
        t = sonde.Timer(synchronize=True)
    assert t.synchronization.requested and not t.synchronization.applied
    assert "no device backend" in t.synchronization.reason


def test_metrics_record_and_measure_time():
    m = sonde.Metrics()
    for i in range(4):
        m.record("loss", 1.0 / (i + 1))
        with m.measure_time("step"):
            time.sleep(0.001)
    s = m.stats("loss")
    assert s.n == 4 and s.max == 1.0 and s.min == 0.25
    assert m.stats("step").n == 4
    with pytest.raises(TypeError):
        m.record("loss", "high")
    with pytest.raises(TypeError):
        m.record(3, 1.0)


def test_metrics_from_threads():
    m = sonde.Metrics()

    def worker(k):
        for i in range(1000):
            m.record("v", k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    vals = [v for _t, v, _tid in m.values()["v"]]
    assert len(vals) == 3000 and sorted(set(vals)) == [0, 1, 2]


def test_bottlenecks():
    m = sonde.Metrics()
    # 30 ms against 15 ms: far apart beside what a loaded machine adds to a sleep
    for _ in range(8):
        with m.measure_time("forward"):
            time.sleep(0.030)
        with m.measure_time("backward"):
            time.sleep(0.010)
            with m.measure_time("inner"):  # nested: not a top-level region
                time.sleep(0.005)
    b = m.analyze_bottlenecks()
    assert b["dominant"] == "forward" and b["next"] == "backward"
    assert [r["name"] for r in b["ranking"]] == ["forward", "backward"]
    assert 0.55 < b["share"] < 0.75
    assert b["significant"] is True and b["test"]["method"] == "welch"
    assert abs(sum(r["share"] for r in b["ranking"]) - 1.0) < 1e-9


def test_gc_frees_timer_and_regions():
    import gc
    import weakref

    t = sonde.Timer()
    with t.measure("x"):
        pass
    w = weakref.ref(t)
    del t
    gc.collect()
    assert w() is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_metrics_refuse_a_value_json_cannot_hold(bad):
    # JSON has no NaN or infinity: recorded, it made a profile no reader takes
    m = sonde.Metrics()
    with pytest.raises(ValueError, match="finite"):
        m.record("x", bad)
    m.record("x", 1.5)
    assert [v for _t, v, _tid in m.values()["x"]] == [1.5]


@pytest.mark.parametrize("name,why", [("a\x00b", "NUL"), ("\udc80x", "lone surrogate")])
def test_a_name_a_profile_cannot_hold_is_refused(name, why):
    # a NUL made a profile no loader takes; a lone surrogate is no UTF-8
    t = sonde.Timer()
    with pytest.raises(ValueError, match=why):
        with t.measure(name):
            pass
    with pytest.raises(ValueError, match=why):
        sonde.Metrics().record(name, 1.0)
    assert t.names == [] and t.open_regions() == []
