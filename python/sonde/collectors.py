"""Collectors with one protocol, registered by name and run together.

Every collector has ``start()``, ``stop() -> dict``, ``reset()``,
``get_results()`` and is a context manager. States: idle -> collecting ->
stopped (``reset()`` returns to idle); a call out of order raises StateError, and
a collector that cannot work here raises NotSupported at ``start`` with the
reason. ``Observatory.profile`` runs several on one function or command and
writes one sonde profile per collector.
"""

import json
import os
import resource
import shlex
import subprocess
import sys
import threading
import time

from . import _sonde
from ._base import StartStop
from ._sonde import NotSupported, StateError

_PAGE = os.sysconf("SC_PAGE_SIZE")
_TICK = os.sysconf("SC_CLK_TCK")


class BaseCollector(StartStop):
    """Subclass and implement _start() and _stop() -> dict (and _reset())."""

    name = "base"
    #: the profile's header.type, and the units of its resources' types
    profile_type = "python"
    units = {}

    def __init__(self):
        self._state = "idle"
        self._results = None
        self.target_pid = os.getpid()
        self.target_name = "python"

    # the protocol ---------------------------------------------------------------------------
    def start(self):
        if self._state == "collecting":
            raise StateError(f"collector '{self.name}' is collecting already")
        if self._state == "stopped":
            raise StateError(f"collector '{self.name}' has stopped: reset() it first")
        self._start()
        self._state = "collecting"

    def stop(self):
        if self._state != "collecting":
            raise StateError(f"collector '{self.name}' was not started")
        self._results = self._stop()
        self._state = "stopped"
        return self._results

    def reset(self):
        if self._state == "collecting":
            raise StateError(f"collector '{self.name}' is collecting: stop() it first")
        self._reset()
        self._results = None
        self._state = "idle"

    def get_results(self):
        if self._results is None:
            raise StateError(f"collector '{self.name}' has no results: it has not stopped")
        return self._results

    @property
    def state(self):
        return self._state

    def __exit__(self, *exc):
        if self._state == "collecting":
            self.stop()
        return False

    # for subclasses ---------------------------------------------------------------------------
    def _start(self):
        raise NotImplementedError

    def _stop(self):
        raise NotImplementedError

    def _reset(self):
        pass

    def resources(self, results):
        """[(uid, type, subtype, {column: [values]})] of the results, for a profile."""
        return []


_PRECISION = {"ns": 1, "us": 1_000, "ms": 1_000_000}


class TimingCollector(BaseCollector):
    """Wall and CPU time of the block. ``precision``: the unit results are given
    in (ns, us, ms; the profile keeps ns). ``clock``: monotonic or perf_counter
    (on Linux both read CLOCK_MONOTONIC; the name is recorded)."""

    name = "timing"
    profile_type = "time"
    units = {"time": "ns"}

    def __init__(self, precision="ns", clock="monotonic"):
        super().__init__()
        if precision not in _PRECISION:
            raise ValueError(f"precision is one of {', '.join(_PRECISION)}")
        if clock not in ("monotonic", "perf_counter"):
            raise ValueError("clock is monotonic or perf_counter")
        self.precision, self.clock = precision, clock
        self._read = time.monotonic_ns if clock == "monotonic" else time.perf_counter_ns

    def _start(self):
        self._cpu0 = self._cpu()
        self._t0 = self._read()

    def _cpu(self):
        if self.target_pid == os.getpid():
            return time.process_time_ns()
        r = resource.getrusage(resource.RUSAGE_CHILDREN)  # the command, once reaped
        return int((r.ru_utime + r.ru_stime) * 1e9)

    def _stop(self):
        ns = self._read() - self._t0
        cpu = self._cpu() - self._cpu0
        d = _PRECISION[self.precision]
        return {"wall": ns / d if d > 1 else ns, "cpu": cpu / d if d > 1 else cpu,
                "unit": self.precision, "clock": self.clock, "wall_ns": ns, "cpu_ns": cpu}

    def resources(self, r):
        return [(self.target_name, "time", "real", {"amount": [r["wall_ns"]]}),
                (self.target_name, "time", "cpu", {"amount": [r["cpu_ns"]]})]


def _proc_sample(pid):
    """(rss bytes, cpu ns) of a process from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            rss = int(f.read().split()[1]) * _PAGE
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) * 1_000_000_000 // _TICK
        return rss, cpu
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


class MemoryCollector(BaseCollector):
    """Resident memory (and CPU time, ``track_cpu``) of the target process,
    sampled every ``sample_interval`` seconds from /proc: the peak and the timeline."""

    name = "memory"
    profile_type = "process"
    units = {"memory": "B", "time": "ns"}

    def __init__(self, track_cpu=True, sample_interval=0.01):
        super().__init__()
        if sample_interval <= 0:
            raise ValueError("sample_interval is a positive number of seconds")
        self.track_cpu, self.sample_interval = track_cpu, sample_interval

    def _start(self):
        if not os.path.exists(f"/proc/{self.target_pid}/statm"):
            raise NotSupported(f"/proc/{self.target_pid}/statm cannot be read: "
                               "no procfs here")
        self._rows = []
        self._t0 = time.monotonic_ns()
        self._halt = threading.Event()
        self._sample()
        self._thread = threading.Thread(target=self._run, name="sonde-memory-collector",
                                        daemon=True)
        self._thread.start()

    def _sample(self):
        s = _proc_sample(self.target_pid)
        if s:
            self._rows.append((time.monotonic_ns() - self._t0, s[0], s[1]))

    def _run(self):
        while not self._halt.wait(self.sample_interval):
            self._sample()

    def _stop(self):
        self._halt.set()
        self._thread.join()
        self._sample()
        rows = self._rows
        out = {"samples": len(rows), "interval_s": self.sample_interval,
               "peak_rss": max((r[1] for r in rows), default=None),
               "timeline": [{"t_ns": t, "rss": rss, **({"cpu_ns": c} if self.track_cpu else {})}
                            for t, rss, c in rows]}
        if self.track_cpu:
            out["cpu_ns"] = rows[-1][2] - rows[0][2] if rows else None
        return out

    def _reset(self):
        self._rows = []

    def resources(self, r):
        tl = r["timeline"]
        res = [(self.target_name, "memory", "rss",
                {"amount": [p["rss"] for p in tl], "timestamp": [p["t_ns"] for p in tl]})]
        if self.track_cpu:
            res.append((self.target_name, "time", "cpu",
                        {"amount": [p["cpu_ns"] for p in tl], "timestamp": [p["t_ns"] for p in tl]}))
        return res


class CounterCollector(BaseCollector):
    """The counter service counting the block (this thread, as a counted region):
    software events and derived metrics here, hardware ones where a PMU exists.
    What could not be counted is None with the reason (``not_counted``), never 0."""

    name = "counters"
    profile_type = "counters"
    units = {}

    def __init__(self, counters=None, agent=0, group=None):
        super().__init__()
        from . import counters as _c

        self._counters = _c
        names = list(counters) if counters is not None else []
        for g in ([group] if isinstance(group, str) else list(group or ())):
            names += [n for n in _c.group(g) if n not in names]
        if not names:
            names = ["task-clock", "page-faults", "context-switches"]
        self.config = _c.Config(names, agent=agent)

    def _start(self):
        if self.target_pid != os.getpid():
            raise NotSupported("CounterCollector counts this process's block; for a command "
                               "use `sonde collect counters -- CMD`")
        self._region = self._counters.region(self.target_name, self.config)
        self._region.__enter__()

    def _stop(self):
        self._region.__exit__(None, None, None)
        return {"values": dict(self._region.values),
                "not_counted": dict(self._region.not_counted),
                "units": {n: self._counters.info(n)["unit"] for n in self.config.counters},
                "duration_ns": self._region.duration_ns}

    def resources(self, r):
        return [(self.target_name, "counter", n, {"amount": [v]})
                for n, v in r["values"].items() if v is not None]


class Observatory:
    """Collectors registered by name, run together on one function or command."""

    def __init__(self):
        self._registry = {"timing": TimingCollector, "memory": MemoryCollector,
                          "counters": CounterCollector}

    def register_collector(self, name, cls):
        if not (isinstance(cls, type) and issubclass(cls, BaseCollector)):
            raise TypeError("a collector is a subclass of sonde.BaseCollector")
        if not name or not isinstance(name, str):
            raise ValueError("a collector's name is a non-empty str")
        self._registry[name] = cls

    def collectors(self):
        return sorted(self._registry)

    def profile(self, target, collectors=("timing",), args=(), output_dir=".", params=None):
        """Run target (a callable, or a command as a list or a string) once with
        every named collector; write one profile per collector into output_dir.
        Returns {name: (results, profile path)}."""
        params = params or {}
        unknown = [c for c in collectors if c not in self._registry]
        if unknown:
            raise KeyError(f"no collector named {', '.join(map(repr, unknown))}; "
                           f"registered: {', '.join(self.collectors())}")
        cols = {n: self._registry[n](**params.get(n, {})) for n in collectors}
        if callable(target):
            label = getattr(target, "__qualname__", repr(target))
            argv = [label]
            for c in cols.values():
                c.target_name = label
            started = []
            try:
                for c in cols.values():
                    c.start()
                    started.append(c)
                target(*args)
            finally:
                for c in reversed(started):
                    c.stop()
        else:
            argv = shlex.split(target) if isinstance(target, str) else list(target)
            label = " ".join(argv)
            proc = subprocess.Popen(argv)
            started = []
            try:
                for c in cols.values():
                    c.target_pid, c.target_name = proc.pid, label
                    c.start()
                    started.append(c)
                proc.wait()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                for c in reversed(started):
                    c.stop()
        out = {}
        stamp = time.strftime("%Y-%m-%d-%H-%M-%S")
        base = os.path.basename(argv[0]) if argv else "python"
        for n, c in cols.items():
            path = os.path.join(output_dir, f"{base}-{n}-{stamp}.json")
            _sonde.save_profile(json.dumps(_profile_of(c, n, label, argv)), path)
            out[n] = (c.get_results(), path)
        return out


def _profile_of(c, name, label, argv):
    rtm, res = {}, {}
    for i, (uid, typ, sub, cols) in enumerate(c.resources(c.get_results())):
        key = f"{uid}#{i}"
        rtm[key] = {"uid": uid, "type": typ, "subtype": sub}
        n = len(cols["amount"])
        res[key] = {"order": list(range(1, n + 1)), **cols}
    return {
        "format_version": 1, "origin": None,
        "header": {"type": c.profile_type, "cmd": label, "args": list(argv), "workload": "",
                   "units": dict(c.units)},
        "collector_info": {"name": name, "params": {}},
        "machine": {},
        "metadata": {"source": {"api": "python", "class": type(c).__name__,
                                "python": sys.version.split()[0], "pid": os.getpid()}},
        "stats": {"notes": [], "warnings": []},
        "resource_type_map": rtm, "resources": res, "models": [], "postprocessors": [],
    }
