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

# The rest is imported when first asked for (PEP 562): `sonde collect python`
# loads the CPU collector before the program's first line, and each module it
# loads is one whose import the program then finds done (_base.py).
_LAZY = {
    "counters": None, "profiler": None, "collectors": None,
    "BaseCollector": "collectors", "CounterCollector": "collectors",
    "MemoryCollector": "collectors", "Observatory": "collectors",
    "TimingCollector": "collectors", "TraceCollector": "collectors",
    "PowerCollector": "collectors", "SystemCollector": "collectors",
    "EBPFCollector": "collectors", "Results": "collectors", "Traces": "collectors",
    "CpuCollector": "cpu", "TraceBuffer": "cpu",
    "MemoryTracker": "memory",
    "Comparison": "report", "Reporter": "report", "analyze_bottlenecks": "report",
    "compare_runs": "report", "report_html": "report", "to_profile": "report", "view": "report",
    "Metrics": "timing", "SondeWarning": "_base", "Stats": "timing",
    "Synchronization": "timing", "Timer": "timing",
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'sonde' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module("." + (_LAZY[name] or name), __name__)
    value = mod if _LAZY[name] is None else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__version__ = version
__all__ = [
    "BaseCollector", "CounterCollector", "CpuCollector", "EBPFCollector", "MemoryCollector",
    "Observatory", "PowerCollector", "Results", "SystemCollector", "TimingCollector",
    "TraceBuffer", "TraceCollector", "Traces",
    "Comparison", "MemoryTracker", "Metrics", "NotSupported", "Reporter", "SondeError",
    "SondeWarning", "StateError", "Stats", "Synchronization", "Timer", "analyze_bottlenecks",
    "compare_runs", "report_html", "to_profile", "trace_size", "view", "counters",
]
