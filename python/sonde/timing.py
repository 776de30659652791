"""Region timers and metric series.

The recording is libsonde's (the C extension): entering and leaving a region
reads sonde's monotonic clock and appends to the calling thread's buffer,
without a lock. Everything here reads those buffers afterwards.
"""

import math
import os
import sys
import warnings
from dataclasses import dataclass

from . import _sonde
from ._base import SondeWarning
from ._sonde import StateError

NS_PER_MS = 1e6


@dataclass(frozen=True)
class Stats:
    """Summary of one region's durations (ms) or one series' values.

    ``ci95`` is the 95 % confidence interval of the mean (Student's t), ``outliers``
    counts values more than ten robust standard deviations from the median (the
    rule hyperfine uses). ``std`` and ``ci95`` are None with fewer than two values.
    """

    name: str
    n: int
    mean: float
    std: float
    min: float
    max: float
    median: float
    ci95: tuple
    outliers: int
    unit: str = "ms"
    warmup: int = 0

    @classmethod
    def of(cls, name, values, unit="ms", scale=1.0, warmup=0):
        s = _sonde.summarize([v / scale for v in values])

        def num(x):
            return None if x is None or math.isnan(x) else x

        lo, hi = s["ci95"]
        ci = None if num(lo) is None else (lo, hi)
        return cls(name, s["n"], s["mean"], num(s["std"]), s["min"], s["max"], s["median"],
                   ci, s["outliers"], unit, warmup)

    def __str__(self):
        std = "-" if self.std is None else f"{self.std:.4g}"
        ci = "-" if self.ci95 is None else f"[{self.ci95[0]:.4g}, {self.ci95[1]:.4g}]"
        return (f"{self.name}: {self.mean:.4g} ± {std} {self.unit} (n = {self.n}, "
                f"median {self.median:.4g}, min {self.min:.4g}, max {self.max:.4g}, "
                f"95% CI {ci}, {self.outliers} outliers)")


@dataclass
class Synchronization:
    """Whether regions wait for a device before reading the clock."""

    requested: bool
    applied: bool
    reason: str = ""

    def as_dict(self):
        return {"requested": self.requested, "applied": self.applied, "reason": self.reason}


# A device backend registers a callable here (sonde.timing.device_synchronize);
# none ships yet, so a request to synchronise is recorded as not applied.
device_synchronize = None


def _synchronization(requested):
    if not requested:
        return Synchronization(False, False, "not requested")
    if device_synchronize is None:
        reason = "no device backend is loaded: regions time the CPU side only"
        warnings.warn(f"sonde: synchronize=True not applied: {reason}", SondeWarning,
                      stacklevel=3)
        return Synchronization(True, False, reason)
    return Synchronization(True, True, getattr(device_synchronize, "__name__", "device"))


def _script():
    """The running script's path; "" for python3 -c and the interactive prompt."""
    arg0 = sys.argv[0] if sys.argv else ""
    return os.path.abspath(arg0) if arg0 and os.path.isfile(arg0) else ""


class _Recording(_sonde.Recorder):
    """What Timer and Metrics share: regions, series, and where they came from."""

    def __init__(self, warmup=0):
        super().__init__(warmup=warmup)
        self.created_by = {
            "api": "python",
            "class": type(self).__name__,
            "script": _script(),
            "argv": list(sys.argv),
            "python": sys.version.split()[0],
            "pid": os.getpid(),
        }
        self.sizes = {}

    def durations(self, name, include_warmup=False):
        """Durations of a region in ns, in end-time order (warm-up left out)."""
        return [e - s for s, e, _d, _t, w in self.samples().get(name, [])
                if include_warmup or not w]

    def _stats(self, name):
        rows = self.samples().get(name)
        if rows:
            kept = [e - s for s, e, _d, _t, w in rows if not w]
            warm = len(rows) - len(kept)
            if not kept:
                raise StateError(f"region '{name}' ran {warm} times, all of them warm-up "
                                 f"(warmup={self.warmup})")
            return Stats.of(name, kept, "ms", NS_PER_MS, warm)
        vals = self.values().get(name)
        if vals:
            return Stats.of(name, [v for _t, v, _tid in vals], "")
        raise KeyError(f"no region or series named '{name}'")

    def stats(self, name=None):
        """Stats of one region (ms) or series; without a name, a dict of all."""
        if name is not None:
            return self._stats(name)
        out = {}
        for n in self.names:
            try:
                out[n] = self._stats(n)
            except StateError:
                pass
        return out

    def get_elapsed(self, name):
        """The last duration of a region, in ms (warm-up included: it is the last)."""
        rows = self.samples().get(name)
        if not rows:
            raise KeyError(f"region '{name}' has not ended yet")
        s, e = rows[-1][0], rows[-1][1]
        return (e - s) / NS_PER_MS

    def record_size(self, name, samples):
        """Say that region `name` processed `samples` items (for throughput)."""
        self.sizes[name] = self.sizes.get(name, 0) + samples


class Timer(_Recording):
    """Time named regions.

    >>> t = Timer(warmup=3, repeat=10)
    >>> with t.measure("forward"):
    ...     model(x)
    >>> t.stats("forward")

    ``warmup``: leading samples of each region left out of its statistics.
    ``repeat``: how many timed runs ``time()`` makes after its warm-up.
    ``synchronize``: wait for the device before reading the clock. With no
    device backend loaded it is recorded as not applied (and warned about once).
    """

    def __init__(self, warmup=0, repeat=10, synchronize=False):
        if repeat < 1:
            raise ValueError("repeat is at least 1")
        super().__init__(warmup=warmup)
        self.repeat = repeat
        self.synchronization = _synchronization(synchronize)

    # measure, start and stop are the C recorder's: region(name) is the context manager
    measure = _sonde.Recorder.region

    def time(self, fn, *args, name=None, **kwargs):
        """Call fn(*args, **kwargs) warmup + repeat times in a region; its Stats."""
        name = name or getattr(fn, "__qualname__", None) or repr(fn)
        region = self.region(name)
        for _ in range(self.warmup + self.repeat):
            with region:
                fn(*args, **kwargs)
        return self.stats(name)

    def __repr__(self):
        return f"<sonde.Timer warmup={self.warmup} repeat={self.repeat} regions={self.names}>"


class Metrics(_Recording):
    """Named values and timed regions, for a report.

    ``record(name, value)`` appends a value; ``with measure_time(name):`` times a
    region (ms in reports).
    """

    def __init__(self, warmup=0):
        super().__init__(warmup=warmup)
        self.synchronization = _synchronization(False)

    measure_time = _sonde.Recorder.region

    def regions(self):
        return [n for n, rows in self.samples().items() if rows]

    def series(self):
        return [n for n, rows in self.values().items() if rows]

    def generate_report(self):
        """The report as a dict (the JSON Reporter.save_json writes)."""
        from .report import build_report

        return build_report(self)

    def analyze_bottlenecks(self):
        """Which top-level region dominates; see sonde.report.analyze_bottlenecks."""
        from .report import analyze_bottlenecks

        return analyze_bottlenecks(self)

    def __repr__(self):
        return f"<sonde.Metrics names={self.names}>"

