"""kitsune's profiler module, as its "Profiler API" document writes it, over
sonde's own timers, metrics, memory tracker and reports:

    from sonde.profiler import CUDATimer, MemoryTracker, MetricsCollector, Reporter
    timer = CUDATimer()
    with timer.measure("forward_pass"):
        output = model(input)
    timer.get_elapsed("forward_pass")          # ms

The GPU parts read CUDA through torch where this process uses it: CUDATimer
times each region between two CUDA events (the device synchronised before it
with ``synchronize``), and
MemoryTracker's ``peak_allocated``/``peak_reserved`` are the CUDA caching
allocator's. Where CUDA is absent they say so once (a SondeWarning) and the GPU
figures are None with the reason: a CPU figure is never given a GPU name.
"""

import sys

from ._base import SondeWarning
from ._sonde import StateError
from .memory import MemoryTracker as _HostMemoryTracker
from .report import Reporter as _Reporter
from .report import analyze_bottlenecks as _analyze
from .report import build_report as _build_report
from .report import compare_runs as _compare_regions
from .timing import Metrics, Timer

__all__ = ["CUDATimer", "MemoryTracker", "MetricsCollector", "Reporter", "StreamProfiler",
           "compare_runs"]

_said = set()


def _warn_once(message):
    import warnings

    if message not in _said:
        _said.add(message)
        warnings.warn(f"sonde: {message}", SondeWarning, stacklevel=3)


def _cuda():
    """torch when this process can use CUDA through it; else (None, why)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None, "torch is not loaded in this process: no CUDA device is read through it"
    try:
        if not torch.cuda.is_available():
            return None, "CUDA is not available here (torch.cuda.is_available() is False)"
    except Exception as e:
        return None, f"CUDA could not be queried: {e}"
    return torch, None


class CUDATimer(Timer):
    """Named regions timed on the GPU, as kitsune's CUDATimer: where CUDA is
    present each region records a CUDA event at its start and one at its end
    (``torch.cuda.Event(enable_timing=True)``), and its duration is the time
    between them on the device (``elapsed_time``), read when first asked for;
    with ``synchronize`` (the default) the device is synchronised before the
    start event too, so a region holds only the work it launched. The host's
    times are kept as well (``host_durations``). kitsune's defaults: warm-up
    3, repeat 10. Without CUDA the regions time the host side, and the timer
    says so (a warning, and ``synchronization.applied`` False with the
    reason)."""

    def __init__(self, synchronize=True, warmup=3, repeat=10):
        torch, why = _cuda()
        if synchronize and torch is not None:
            import sonde.timing as t

            if t.device_synchronize is None:
                t.device_synchronize = torch.cuda.synchronize
        super().__init__(warmup=warmup, repeat=repeat, synchronize=synchronize and torch is not None)
        if torch is None:
            from .timing import Synchronization

            self.synchronization = Synchronization(bool(synchronize), False, why)
            _warn_once(f"CUDATimer: no CUDA events, synchronize not applied: {why}; regions "
                       "time the host side")
        self._torch = torch
        self._sync = bool(synchronize)
        self._events = {}  # name -> [(start, end)], in the order the regions ended
        self._open = {}    # name -> [start events of the regions open now]
        self._gpu_ns = {}  # name -> durations read so far (ns)

    @property
    def uses_events(self):
        """True where regions are timed with CUDA events."""
        return self._torch is not None

    def measure(self, name):
        if self._torch is None:
            return Timer.measure(self, name)
        return _Evented(self, name)

    def start(self, name):
        if self._torch is not None:
            if self._sync:
                self._torch.cuda.synchronize()
            ev = self._torch.cuda.Event(enable_timing=True)
            ev.record()
            self._open.setdefault(name, []).append(ev)
        return Timer.start(self, name)

    def stop(self, name):
        if self._torch is not None and self._open.get(name):
            ev = self._torch.cuda.Event(enable_timing=True)
            ev.record()
            self._events.setdefault(name, []).append((self._open[name].pop(), ev))
        return Timer.stop(self, name)

    def _resolve(self, name):
        """The GPU durations of name's regions (ns), each read once (waiting
        for its end event)."""
        pairs = self._events.get(name, [])
        got = self._gpu_ns.setdefault(name, [])
        for start, end in pairs[len(got):]:
            end.synchronize()
            got.append(round(start.elapsed_time(end) * 1e6))
        return got

    def host_durations(self, name, include_warmup=False):
        """The host's durations of name's regions (ns)."""
        return Timer.durations(self, name, include_warmup)

    def durations(self, name, include_warmup=False):
        if self._torch is None or name not in self._events:
            return Timer.durations(self, name, include_warmup)
        d = self._resolve(name)
        return list(d) if include_warmup else d[self.warmup:]

    def _stats(self, name):
        if self._torch is None or name not in self._events:
            return Timer._stats(self, name)
        from .timing import Stats

        d = self._resolve(name)
        kept = d[self.warmup:]
        if not kept:
            raise StateError(f"region '{name}' ran {len(d)} times, all of them warm-up "
                             f"(warmup={self.warmup})")
        return Stats.of(name, kept, "ms", 1e6, len(d) - len(kept))

    def get_elapsed(self, name):
        """The last duration of a region, in ms: on the GPU where CUDA is present."""
        if self._torch is None or not self._events.get(name):
            return Timer.get_elapsed(self, name)
        return self._resolve(name)[-1] / 1e6


class _Evented:
    """A region between two CUDA events (the device synchronised first when asked)."""

    def __init__(self, timer, name):
        self.timer, self.name = timer, name

    def __enter__(self):
        self.timer.start(self.name)
        return self

    def __exit__(self, *exc):
        self.timer.stop(self.name)
        return False


class MemoryTracker(_HostMemoryTracker):
    """GPU memory, as kitsune tracks it: ``get_stats()['peak_allocated']`` and
    ``['peak_reserved']`` are the CUDA caching allocator's peaks over the block
    (bytes), ``get_allocation_timeline()`` adds its allocated and reserved bytes
    to each sample. The host side (Python heap, RSS) stays under its own names
    (``python_heap_peak``, ``rss_*``). Without CUDA the GPU figures are None
    with the reason."""

    def __init__(self, track_allocations=True, track_timeline=True, interval=100, device=0,
                 **kw):
        super().__init__(track_allocations=track_allocations, track_timeline=track_timeline,
                         interval=interval, **kw)
        self.device = device

    def start(self):
        self._torch, self._why = _cuda()
        if self._torch is None:
            _warn_once(f"MemoryTracker: GPU memory not measured: {self._why}")
        else:
            self._torch.cuda.reset_peak_memory_stats(self.device)
        return super().start()

    def _sample(self):
        super()._sample()
        if self._torch is not None and self._timeline:
            c = self._torch.cuda
            self._timeline[-1]["gpu_allocated"] = c.memory_allocated(self.device)
            self._timeline[-1]["gpu_reserved"] = c.memory_reserved(self.device)

    def stop(self):
        stats = super().stop()
        stats["python_heap_peak"] = stats.pop("peak_allocated", None)
        nm = stats.setdefault("not_measured", {})
        if "peak_allocated" in nm:
            nm["python_heap_peak"] = nm.pop("peak_allocated")
        if self._torch is not None:
            c = self._torch.cuda
            stats["peak_allocated"] = c.max_memory_allocated(self.device)
            stats["peak_reserved"] = c.max_memory_reserved(self.device)
        else:
            stats["peak_allocated"] = stats["peak_reserved"] = None
            nm["peak_allocated"] = nm["peak_reserved"] = self._why
        return stats

    def print_summary(self, file=None):
        s = self.get_stats()
        file = file or sys.stdout

        def gib(b):
            return "not measured" if b is None else f"{b / 2**30:.3f} GiB"

        def mib(b):
            return "-" if b is None else f"{b / 2**20:.2f} MiB"

        why = "" if s["peak_allocated"] is not None else \
            f" ({s['not_measured']['peak_allocated']})"
        print(f"GPU memory: peak allocated {gib(s['peak_allocated'])}, peak reserved "
              f"{gib(s['peak_reserved'])}{why}", file=file)
        print(f"host: Python heap peak {mib(s.get('python_heap_peak'))}; RSS "
              f"{mib(s['rss_start'])} -> {mib(s['rss_end'])}", file=file)


class MetricsCollector(Metrics):
    """kitsune's MetricsCollector: ``record(name, value)``, ``with
    measure_time(name):``, ``generate_report()`` (its JSON structure:
    timing, memory, throughput) and ``analyze_bottlenecks()`` (``bottleneck``:
    the top-level region taking the most time)."""

    def generate_report(self):
        return _kitsune_report(self)

    def analyze_bottlenecks(self):
        a = _analyze(self)
        a["bottleneck"] = a["dominant"]
        return a


def _kitsune_report(rec):
    """sonde's report with kitsune's keys: throughput's totals at its top level,
    as well as per region."""
    r = _build_report(rec)
    per = r["throughput"]
    total_s = sum(d["total"] for d in r["timing"].values()) / 1e3
    top = {}
    # the regions that are not inside another: their time is the run's
    outer = {n: d for n, d in r["timing"].items() if rec.samples().get(n) and
             all(depth == 0 for _s, _e, depth, _t, _w in rec.samples()[n])}
    secs = sum(d["total"] for d in outer.values()) / 1e3
    if secs > 0:
        its = max((d["n"] for d in outer.values()), default=0)
        top["iterations_per_sec"] = its / secs
        sizes = sum(rec.sizes.get(n, 0) for n in outer)
        batch = rec.values().get("batch_size")
        if sizes:
            top["samples_per_sec"] = sizes / secs
        elif batch:
            top["samples_per_sec"] = sum(v for _t, v, _tid in batch) / secs
        else:
            top["samples_per_sec"] = None
            r.setdefault("not_measured", {})["samples_per_sec"] = (
                "no sample count: record('batch_size', n) or record_size(region, n)")
    r["throughput"] = {**top, "regions": per}
    r["total_time_s"] = total_s
    return r


class Reporter(_Reporter):
    """kitsune's Reporter: save_json (kitsune's structure), save_html, save_csv,
    print_summary."""

    def report(self):
        return _kitsune_report(self.recording)


def compare_runs(a, b, method="auto", alpha=0.05):
    """kitsune's comparison of run b against run a: ``speedup`` (a's time over b's,
    over the top-level regions both ran: > 1, b is faster), with each region's
    own Comparison (sonde check's test) under ``regions``. a and b are Timers,
    MetricsCollectors, profile dicts or paths, or dicts with a ``time``."""
    if isinstance(a, dict) and isinstance(b, dict) and "time" in a and "time" in b \
            and "resource_type_map" not in a:
        return {"speedup": a["time"] / b["time"], "regions": {}}
    regions = _compare_regions(a, b, method=method, alpha=alpha)
    ta = sum(c.baseline_ms * c.n_baseline for c in regions.values())
    tb = sum(c.target_ms * c.n_target for c in regions.values())
    return {"speedup": ta / tb if tb else None, "baseline_ms": ta, "target_ms": tb,
            "regions": regions}


class StreamProfiler:
    """Per-stream busy time and overlap of CUDA streams (kitsune's). It needs
    CUDA's activity records (the GPU backend, CUPTI), which this build has not
    got: where CUDA is absent or no backend runs, ``efficiency()`` gives None
    for every figure with the reason, and ``print_stream_efficiency()`` says so."""

    def __init__(self, num_streams=4):
        self.num_streams = num_streams
        self._why = None

    def __enter__(self):
        torch, why = _cuda()
        self._why = why or ("per-stream busy time needs CUDA's activity records (CUPTI), "
                            "which this process does not load: run the script under "
                            "`sonde collect gpu`, whose profile gives each stream's busy and "
                            "overlapped time")
        _warn_once(f"StreamProfiler: streams not measured: {self._why}")
        return self

    def __exit__(self, *exc):
        return False

    def efficiency(self):
        return {"streams": {i: {"busy_ms": None, "overlap": None}
                            for i in range(self.num_streams)},
                "overlap": None, "reason": self._why}

    def print_stream_efficiency(self, file=None):
        file = file or sys.stdout
        print(f"stream efficiency: not measured ({self._why})", file=file)

