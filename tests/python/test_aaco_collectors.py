"""aaco's collectors module (the seed document "API Reference: Collectors
Module") run as its users write it, with `aaco` replaced by `sonde` and a small
model object: every example, each figure checked against a measure taken
beside it (perf_counter_ns, /proc, getrusage, cProfile). GPU parts have no GPU
here: their figures must be None with a reason, never a CPU figure."""
import cProfile
import json
import os
import pstats
import resource
import subprocess
import threading
import time

import pytest

import sonde


class Model:
    """The documents' `model`: run() does a known amount of work."""

    def __init__(self, sleep_s=0.02):
        self.sleep_s = sleep_s

    def step(self):
        return sum(range(2000))

    def run(self):
        for _ in range(5):
            self.step()
        time.sleep(self.sleep_s)


model = Model()


def test_timing_collector():
    from sonde.collectors import TimingCollector

    collector = TimingCollector(
        precision="ns",  # 'ns', 'us', 'ms'
        clock="monotonic"  # 'monotonic', 'perf_counter'
    )

    # Collect timing
    t0 = time.perf_counter_ns()
    with collector:
        model.run()
    outer = time.perf_counter_ns() - t0

    timing = collector.get_results()
    assert 20_000_000 <= timing["wall"] <= outer
    assert timing.wall == timing["wall"]  # results are attributes too
    ms = TimingCollector(precision="ms")
    t0 = time.perf_counter_ns()
    with ms:
        model.run()
    assert 20 <= ms.get_results()["wall"] <= (time.perf_counter_ns() - t0) / 1e6


def test_counter_collector_gpu_counters_are_none_with_the_reason():
    from sonde.collectors import CounterCollector

    collector = CounterCollector(
        device_id=0,
        counters=[
            "GRBM_COUNT",
            "GRBM_GUI_ACTIVE",
            "SQ_WAVES",
            "TA_BUSY_CU_SUM"
        ]
    )

    # Available counter groups
    groups = CounterCollector.available_counters()
    print(groups)
    assert isinstance(groups, dict) and groups
    assert all(isinstance(v, list) and v for v in groups.values())
    with pytest.warns(sonde.SondeWarning, match="GPU agent"):
        with collector:
            model.run()
    r = collector.get_results()
    assert set(r["values"]) == {"GRBM_COUNT", "GRBM_GUI_ACTIVE", "SQ_WAVES", "TA_BUSY_CU_SUM"}
    assert all(v is None for v in r["values"].values())  # never a number not measured
    assert all("GPU agent" in why for why in r["not_counted"].values())


def _calls(fn, name):
    """cProfile's count of calls of the function named name while fn runs."""
    prof = cProfile.Profile()
    prof.runcall(fn)
    st = pstats.Stats(prof).stats
    return sum(v[1] for k, v in st.items() if k[2] == name)


def test_trace_collector(tmp_path):
    from sonde.collectors import TraceCollector

    collector = TraceCollector(
        device_id=0,
        trace_level="kernel",  # 'api', 'kernel', 'full'
        output_format="perfetto"
    )

    # Run with tracing
    collector.start()
    model.run()
    with pytest.warns(sonde.SondeWarning, match="GPU kernels"):
        traces = collector.stop()

    # Export to Perfetto
    traces.export(tmp_path / "trace.perfetto")
    assert traces.kernels is None and "GPU" in traces.reasons["kernels"]
    doc = json.loads((tmp_path / "trace.perfetto").read_text())
    assert doc["traceEvents"] == []  # no kernels: nothing drawn in their place

    # the Python calls ("api"): as many as cProfile counts
    api = TraceCollector(trace_level="api")
    api.start()
    model.run()
    traces = api.stop()
    traces.export(tmp_path / "api.perfetto")
    events = json.loads((tmp_path / "api.perfetto").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    steps = [e for e in events if e.get("ph") in ("X", "B") and "step" in e.get("name", "")]
    assert len(steps) == _calls(model.run, "step") == 5


def test_memory_collector(tmp_path):
    from sonde.collectors import MemoryCollector

    collector = MemoryCollector(
        track_gpu=True,
        track_cpu=True,
        sample_interval=0.01
    )

    held = []

    def grow():
        b = bytearray(64 << 20)
        b[::4096] = b"x" * len(b[::4096])
        held.append(b)

    with pytest.warns(sonde.SondeWarning, match="GPU memory"):
        collector.start()
    time.sleep(0.03)
    grow()
    with open("/proc/self/statm") as f:
        rss_mb = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    time.sleep(0.03)
    memory_data = collector.collect()
    print(f"Peak GPU: {memory_data.gpu_peak_mb} MB")
    print(f"Peak CPU: {memory_data.cpu_peak_mb} MB")
    assert memory_data.cpu_peak_mb >= rss_mb - 1  # the RSS read beside it, while held
    assert memory_data.gpu_peak_mb is None and memory_data.reasons["gpu_peak_mb"]
    # collect() with no start: a window of its own
    again = MemoryCollector(sample_interval=0.01).collect(duration=0.05)
    assert again.samples >= 3 and again.cpu_peak_mb > 0
    held.clear()


def test_power_collector():
    from sonde.collectors import PowerCollector

    collector = PowerCollector(
        device_id=0,
        sample_interval=0.001
    )

    power_data = collector.collect()
    print(f"Average: {power_data.average_watts} W")
    print(f"Peak: {power_data.peak_watts} W")
    if not power_data.sources:
        # no meter here: no figure, and the reason
        assert power_data.average_watts is None and power_data.peak_watts is None
        assert "powercap" in power_data.reasons["average_watts"]
        pytest.skip("no power meter on this machine (RAPL, hwmon or a GPU): "
                    + power_data.reasons["average_watts"])
    assert 0 < power_data.average_watts <= power_data.peak_watts


def test_ebpf_collector():
    from sonde.collectors import EBPFCollector

    collector = EBPFCollector(
        probes=["sched", "irq", "syscall"]
    )
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(20):  # each sleep gives the CPU up: a voluntary switch
        time.sleep(0.001)

    # Scheduler interference index
    sii = collector.scheduler_interference_index()

    # Context switches during measurement
    context_switches = collector.context_switches()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    assert 20 <= context_switches <= (ru1.ru_nvcsw + ru1.ru_nivcsw) - (ru0.ru_nvcsw + ru0.ru_nivcsw) + 5
    assert 0.0 <= sii < 1.0

    # this thread and a busy process on one CPU: it waits for the CPU about half the
    # time, which its own clocks tell independently (1 - its CPU time / the wall time)
    c = EBPFCollector(probes=["sched"])
    cpu = sorted(os.sched_getaffinity(0))[0]
    mask = os.sched_getaffinity(0)
    hog = subprocess.Popen(["taskset", "-c", str(cpu), "/usr/bin/python3", "-c",
                            "import time\nt = time.monotonic() + 3\nwhile time.monotonic() < t: pass"])
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.1)  # the hog is running
        with c:
            w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            while time.perf_counter_ns() - w0 < 600_000_000:
                pass
            wall, mine = time.perf_counter_ns() - w0, time.thread_time_ns() - c0
    finally:
        os.sched_setaffinity(0, mask)
        hog.kill()
        hog.wait()
    r = c.get_results()
    clocks = 1 - mine / wall
    print(f"scheduler interference index {r['scheduler_interference_index']:.3f}, "
          f"from the thread's clocks {clocks:.3f}")
    assert clocks > 0.2  # the setup held: the CPU was shared (about half; more on a busy machine)
    assert abs(r["scheduler_interference_index"] - clocks) < 0.1
    assert r["scheduler_interference_index"] == c.scheduler_interference_index()
    assert r["involuntary_context_switches"] > 0


def test_system_collector():
    from sonde.collectors import SystemCollector

    collector = SystemCollector(sample_interval=0.05)
    stop = time.monotonic() + 0.4

    def burn():
        while time.monotonic() < stop:
            pass

    with collector:
        burn()
    r = collector.get_results()
    # this process alone kept one CPU busy: at least most of one CPU's share
    assert r.cpu_utilization >= 0.8 / os.cpu_count()
    assert r.cpu_utilization <= r.cpu_utilization_peak <= 1.0
    with open("/proc/meminfo") as f:
        total_mb = int(f.readline().split()[1]) / 1024
    assert 0 < r.memory_used_peak_mb < total_mb
    assert r.context_switches > 0 and r.samples >= 4


# The custom collector, exactly as the document writes it
from sonde.collectors import BaseCollector  # noqa: E402


class MyCollector(BaseCollector):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def start(self):
        """Start collection."""
        pass

    def stop(self) -> dict:
        """Stop collection and return data."""
        return {}

    def reset(self):
        """Reset collector state."""
        pass


def test_custom_collector_through_observatory(tmp_path, sonde_bin):
    from sonde import Observatory

    obs = Observatory()
    obs.register_collector("my_collector", MyCollector)

    session = obs.profile(
        model=model.run,
        collectors=["timing", "my_collector"],
        output_dir=tmp_path,
    )
    assert session["my_collector"][0] == {}
    assert session["timing"][0]["wall_ns"] >= 20_000_000
    for _name, (_r, path) in session.items():
        show = subprocess.run([sonde_bin, "show", path], capture_output=True, text=True)
        assert show.returncode == 0, show.stderr
    # the protocol's states hold for the overriding subclass too
    c = MyCollector()
    with pytest.raises(sonde.StateError):
        c.stop()
    c.start()
    assert c.stop() == {} and c.get_results() == {} and c.state == "stopped"
    c.reset()
    assert c.state == "idle"


def test_observatory_onnx_model_says_what_is_missing():
    from sonde import Observatory

    obs = Observatory()
    try:
        import onnxruntime  # noqa: F401
        pytest.skip("onnxruntime is installed: the missing-module path does not apply")
    except ImportError:
        pass
    with pytest.raises(sonde.NotSupported, match="ONNX Runtime"):
        obs.profile(model="model.onnx", collectors=["timing"])


def test_observatory_torch_module(tmp_path):
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    from sonde import Observatory

    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    x = torch.randn(32, 64)
    obs = Observatory()
    t0 = time.perf_counter_ns()
    out = obs.profile(model=net, inputs=x, collectors=["timing", "memory", "system"],
                      output_dir=tmp_path)
    outer = time.perf_counter_ns() - t0
    assert 0 < out["timing"][0]["wall_ns"] <= outer
    assert out["memory"][0]["cpu_peak_mb"] > 0
