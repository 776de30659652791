"""sonde from Python: region timers, metrics and their reports, as sonde profiles.

    import sonde
    t = sonde.Timer(warmup=3, repeat=10)
    with t.measure("forward"):
        ...
    print(t.stats("forward"))
    sonde.Reporter(t).save_profile("run.json")   # sonde show / check / report read it
    sonde.Reporter(t).save_html("run.html")      # the report `sonde report` writes

Recording, statistics and profile files are libsonde's (the C extension
sonde._sonde), the same code the sonde command runs.
"""

from ._sonde import NotSupported, SondeError, StateError, trace_size, version
from . import counters
from .collectors import (BaseCollector, CounterCollector, MemoryCollector, Observatory,
                         TimingCollector)
from .cpu import CpuCollector
from .memory import MemoryTracker
from .report import (Comparison, Reporter, analyze_bottlenecks, compare_runs, report_html,
                     to_profile, view)
from .timing import Metrics, SondeWarning, Stats, Synchronization, Timer

__version__ = version
__all__ = [
    "BaseCollector", "CounterCollector", "CpuCollector", "MemoryCollector", "Observatory", "TimingCollector",
    "Comparison", "MemoryTracker", "Metrics", "NotSupported", "Reporter", "SondeError",
    "SondeWarning", "StateError", "Stats", "Synchronization", "Timer", "analyze_bottlenecks",
    "compare_runs", "report_html", "to_profile", "trace_size", "view", "counters",
]
