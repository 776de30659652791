"""kitsune's profiler module (the seed document "Profiler API") run as its
users write it, with `kitsune` replaced by `sonde` and a small model: Debian's
torch on the CPU where it is installed, a plain callable otherwise. Each figure
is checked against a measure taken beside it (perf_counter_ns, tracemalloc).
The GPU parts (CUDA events, the CUDA allocator, streams) skip with their reason
where CUDA is absent, after checking that they give no figure then."""
import csv
import json
import time

import pytest

import sonde

try:
    import torch
except ImportError:  # the document's examples then run on a plain model
    torch = None


def _cuda():
    return torch is not None and torch.cuda.is_available()


class Plain:
    """A model without torch: each call sleeps a known time."""

    def __init__(self, ms):
        self.ms = ms

    def __call__(self, x):
        time.sleep(self.ms / 1e3)
        return x


def _setup():
    """model, input, criterion, optimizer, train_loader: torch's where it is installed."""
    if torch is None:
        class Loss:
            def backward(self):
                time.sleep(0.002)

            def item(self):
                return 0.5

        class Opt:
            def step(self):
                pass

        model = Plain(3)
        loader = [(Plain(0), i) for i in range(4)]
        return model, 1, (lambda out, target: Loss()), Opt(), loader
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    x = torch.randn(64, 256)
    y = torch.randint(0, 10, (256,))
    data = torch.randn(256, 256)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data, y), batch_size=64)
    return (model, x, torch.nn.CrossEntropyLoss(),
            torch.optim.SGD(model.parameters(), lr=0.01), loader)


def test_basic_profiling():
    from sonde.profiler import CUDATimer

    model, input, *_ = _setup()
    with pytest.warns(sonde.SondeWarning, match="synchronize not applied") if not _cuda() \
            else _nothing():
        timer = CUDATimer()

    # Time a code block
    t0 = time.perf_counter_ns()
    with timer.measure('forward_pass'):
        output = model(input)
    outer = (time.perf_counter_ns() - t0) / 1e6

    # Get elapsed time
    elapsed = timer.get_elapsed('forward_pass')
    print(f"Forward pass: {elapsed:.2f} ms")
    assert 0 < elapsed <= outer
    assert output is not None
    assert timer.synchronization.applied == _cuda()

    timer.start('kernel_launch')
    # GPU operation
    output = model(input)
    timer.stop('kernel_launch')

    elapsed = timer.get_elapsed('kernel_launch')
    assert elapsed > 0


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_memory_profiling():
    from sonde.profiler import MemoryTracker

    model, input, criterion, optimizer, dataloader = _setup()
    tracker = MemoryTracker()

    # Track memory usage
    with tracker:
        for batch in dataloader:
            output = model(batch[0])
            loss = criterion(output, batch[1])
            loss.backward()

    # Print memory report
    tracker.print_summary()
    stats = tracker.get_stats()
    if not _cuda():
        # no GPU figure: None, with the reason; the host's under its own names
        assert stats["peak_allocated"] is None and stats["peak_reserved"] is None
        assert stats["not_measured"]["peak_allocated"]
        assert stats["python_heap_peak"] is not None
        pytest.skip("GPU memory: " + stats["not_measured"]["peak_allocated"])

    # Get detailed stats
    print(f"Peak memory: {stats['peak_allocated'] / 1e9:.2f} GB")
    assert stats["peak_allocated"] > 0


def test_comprehensive_metrics():
    from sonde.profiler import MetricsCollector

    model, input, criterion, optimizer, train_loader = _setup()
    num_epochs = 2
    collector = MetricsCollector()
    loop = 0
    for epoch in range(num_epochs):
        for batch_idx, (data, target) in enumerate(train_loader):
            # Record metrics
            collector.record('batch_size', data.size(0) if torch is not None else 64)

            t0 = time.perf_counter_ns()
            with collector.measure_time('iteration'):
                output = model(data)
                loss = criterion(output, target)
                loss.backward()
                optimizer.step()
            loop += time.perf_counter_ns() - t0

            collector.record('loss', loss.item())

    # Generate report
    report = collector.generate_report()
    print(report)
    it = report["timing"]["iteration"]
    assert it["n"] == 8 and set(it) >= {"mean", "std", "min", "max"}
    # the iterations' own time, measured beside them, is at least the regions'
    assert it["total"] <= loop / 1e6
    assert report["throughput"]["samples_per_sec"] >= 8 * 64 / (loop / 1e9) * 0.999
    assert report["throughput"]["iterations_per_sec"] >= 8 / (loop / 1e9) * 0.999
    assert report["metrics"]["loss"]["n"] == 8


def test_custom_reporter(tmp_path):
    from sonde.profiler import MetricsCollector, Reporter

    collector = MetricsCollector()
    for _ in range(3):
        collector.record('batch_size', 32)
        with collector.measure_time('forward_pass'):
            time.sleep(0.004)
        with collector.measure_time('backward_pass'):
            time.sleep(0.006)

    # Create reporter
    reporter = Reporter(collector)

    # Generate different report formats
    reporter.save_json(tmp_path / 'metrics.json')
    reporter.save_html(tmp_path / 'report.html')
    reporter.save_csv(tmp_path / 'metrics.csv')

    # Print summary
    reporter.print_summary()

    # the document's JSON structure
    doc = json.loads((tmp_path / 'metrics.json').read_text())
    for name, ms in (("forward_pass", 4), ("backward_pass", 6)):
        t = doc["timing"][name]
        assert set(t) >= {"mean", "std", "min", "max"}
        assert ms <= t["min"] <= t["mean"] <= t["max"]
    assert set(doc["memory"]) >= {"peak_allocated", "peak_reserved"}
    assert set(doc["throughput"]) >= {"samples_per_sec", "iterations_per_sec"}
    html = (tmp_path / 'report.html').read_text()
    assert "forward_pass" in html and "<svg" in html
    rows = list(csv.DictReader(open(tmp_path / 'metrics.csv')))
    assert {r["name"] for r in rows} >= {"forward_pass", "backward_pass", "batch_size"}


def test_identifying_bottlenecks():
    from sonde.profiler import MetricsCollector

    model, input, criterion, _opt, dataloader = _setup()
    dataloader = iter(dataloader)
    collector = MetricsCollector()
    t = {}

    # Profile different components
    t0 = time.perf_counter_ns()
    with collector.measure_time('data_loading'):
        data = next(dataloader)
    t["data_loading"] = time.perf_counter_ns() - t0

    t0 = time.perf_counter_ns()
    with collector.measure_time('forward'):
        output = model(data[0])
    t["forward"] = time.perf_counter_ns() - t0
    loss = criterion(output, data[1])

    t0 = time.perf_counter_ns()
    with collector.measure_time('backward'):
        loss.backward()
    t["backward"] = time.perf_counter_ns() - t0

    # Analyze bottlenecks
    analysis = collector.analyze_bottlenecks()
    print(f"Bottleneck: {analysis['bottleneck']}")
    # the region perf_counter_ns saw take longest, unless two are within 10 %
    longest = max(t, key=t.get)
    others = [v for k, v in t.items() if k != longest]
    if max(others) < 0.9 * t[longest]:
        assert analysis["bottleneck"] == longest


def test_comparing_configurations():
    from sonde.profiler import MetricsCollector, compare_runs

    def profile_training(ms):
        m = MetricsCollector()
        for _ in range(5):
            with m.measure_time("iteration"):
                time.sleep(ms / 1e3)
        return m

    # Run 1: Baseline
    metrics1 = profile_training(8)

    # Run 2: With Kitsune
    metrics2 = profile_training(4)

    # Compare
    comparison = compare_runs(metrics1, metrics2)
    print(f"Speedup: {comparison['speedup']:.2f}x")
    a, b = sum(metrics1.durations("iteration")), sum(metrics2.durations("iteration"))
    # the ratio of the two runs' own durations (how far sleeps overshoot is the machine's)
    assert abs(comparison["speedup"] - a / b) < 1e-9 * a / b + 0.001
    assert set(comparison["regions"]) == {"iteration"}

    # Best practice 3: dicts with a time
    baseline_metrics, kitsune_metrics = {"time": 10.0}, {"time": 4.0}
    speedup = baseline_metrics['time'] / kitsune_metrics['time']
    assert compare_runs(baseline_metrics, kitsune_metrics)["speedup"] == speedup


def test_end_to_end_nesting():
    from sonde.profiler import CUDATimer

    model, input, criterion, optimizer, dataloader = _setup()
    dataloader = iter(dataloader)
    timer = CUDATimer(synchronize=False)
    with timer.measure('full_iteration'):
        with timer.measure('data_loading'):
            data = next(dataloader)

        with timer.measure('forward'):
            output = model(data[0])
        loss = criterion(output, data[1])

        with timer.measure('backward'):
            loss.backward()

        with timer.measure('optimizer'):
            optimizer.step()
    inner = sum(timer.get_elapsed(n) for n in ("data_loading", "forward", "backward",
                                                 "optimizer"))
    assert inner <= timer.get_elapsed("full_iteration")


def test_stream_profiling():
    from sonde.profiler import StreamProfiler

    profiler = StreamProfiler(num_streams=4)
    with profiler:
        pass
    profiler.print_stream_efficiency()
    e = profiler.efficiency()
    assert e["overlap"] is None and e["reason"]
    assert all(s["busy_ms"] is None for s in e["streams"].values())
    pytest.skip("streams: " + e["reason"])
