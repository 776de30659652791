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


class Results(dict):
    """A collector's results: a dict whose keys are also attributes
    (``memory_data.cpu_peak_mb`` is ``memory_data["cpu_peak_mb"]``). A value that
    could not be measured is None, and ``reasons`` says why."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"no result named {key!r} (results: "
                                 f"{', '.join(sorted(self))})") from None


def _warn_once(collector, message):
    import warnings

    from ._base import SondeWarning

    key = (type(collector).__name__, message)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(f"sonde: {message}", SondeWarning, stacklevel=3)


_warned = set()

_VERBS = ("start", "stop", "reset")


class BaseCollector(StartStop):
    """Subclass and implement _start() and _stop() -> dict (and _reset()), or, as
    aaco's documents write it, override start(), stop() -> dict and reset()
    themselves: the states and get_results() hold either way."""

    name = "base"
    #: the profile's header.type, and the units of its resources' types
    profile_type = "python"
    units = {}

    def __init__(self, **options):
        self._state = "idle"
        self._results = None
        self.options = options
        self.target_pid = os.getpid()
        self.target_name = "python"

    def __init_subclass__(cls, **kw):
        """A subclass that overrides start, stop or reset itself keeps the protocol:
        its method runs inside the state checks, and what its stop returns is
        the results."""
        super().__init_subclass__(**kw)
        for verb in _VERBS:
            fn = cls.__dict__.get(verb)
            if fn is None or getattr(fn, "_sonde_protocol", False):
                continue
            setattr(cls, verb, _protocol(verb, fn))
        if "name" not in cls.__dict__:
            cls.name = cls.__name__

    # the protocol ---------------------------------------------------------------------------
    def start(self):
        self._check("start")
        self._start()
        self._state = "collecting"

    def stop(self):
        self._check("stop")
        self._results = Results(self._stop() or {})
        self._state = "stopped"
        return self._results

    def _check(self, verb):
        if verb == "start" and self._state == "collecting":
            raise StateError(f"collector '{self.name}' is collecting already")
        if verb == "start" and self._state == "stopped":
            raise StateError(f"collector '{self.name}' has stopped: reset() it first")
        if verb == "stop" and self._state != "collecting":
            raise StateError(f"collector '{self.name}' was not started")
        if verb == "reset" and self._state == "collecting":
            raise StateError(f"collector '{self.name}' is collecting: stop() it first")

    def collect(self, duration=None):
        """The results, as aaco's collectors give them: of the window start() ...
        stop() when the collector has stopped (or is collecting: it stops now);
        otherwise of a window of ``duration`` seconds from now (default: ten of
        its sample intervals, at least 0.1 s)."""
        if self._state == "collecting":
            return self.stop()
        if self._state == "stopped":
            return self.get_results()
        if duration is None:
            duration = max(0.1, 10 * getattr(self, "sample_interval", 0.01))
        self.start()
        time.sleep(duration)
        return self.stop()

    def reset(self):
        self._check("reset")
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
        pass

    def _stop(self):
        return {}

    def _reset(self):
        pass

    def resources(self, results):
        """[(uid, type, subtype, {column: [values]})] of the results, for a profile."""
        return []

    def profile_doc(self, name, label, argv):
        """The sonde profile (a dict) of the results, as Observatory.profile writes it."""
        return _profile_of(self, name, label, argv)


def _protocol(verb, fn):
    """fn (a subclass's own start, stop or reset) inside the protocol's states."""
    import functools

    @functools.wraps(fn)
    def run(self, *args, **kw):
        self._check(verb)
        before = self._state
        out = fn(self, *args, **kw)
        if verb == "start":
            self._state = "collecting"
        elif verb == "stop":
            # what the subclass's stop returned (or what a super().stop() inside it kept)
            got = out if out is not None else (self._results if before != self._state else {})
            self._results = Results(got if isinstance(got, dict) else {"value": got})
            self._state = "stopped"
            return self._results
        else:
            self._results = None
            self._state = "idle"
        return out

    run._sonde_protocol = True
    return run


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


_MB = 1 << 20  # aaco's "MB": 2^20 bytes, as torch.cuda's figures are divided


def _cuda(device_id):
    """torch and the device when this process uses CUDA through torch; else (None, why)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None, "torch is not loaded in this process: no CUDA device is read through it"
    try:
        if not torch.cuda.is_available():
            return None, "CUDA is not available here (torch.cuda.is_available() is False)"
        if device_id >= torch.cuda.device_count():
            return None, f"no CUDA device {device_id} (torch sees {torch.cuda.device_count()})"
    except Exception as e:  # a broken driver: said, not hidden
        return None, f"CUDA could not be queried: {e}"
    return torch, None


class MemoryCollector(BaseCollector):
    """The target process's memory, sampled every ``sample_interval`` seconds:
    its resident memory from /proc (``track_cpu``: host memory, ``cpu_peak_mb``),
    its CPU time beside it, and with ``track_gpu`` the CUDA caching allocator's
    peak allocated and reserved bytes of ``device_id`` (``gpu_peak_mb``,
    ``gpu_reserved_peak_mb``) where torch uses CUDA in this process; where it
    does not, those are None and ``reasons`` says why (warned once). MB: 2^20 bytes."""

    name = "memory"
    profile_type = "process"
    units = {"memory": "B", "time": "ns"}

    def __init__(self, track_gpu=False, track_cpu=True, sample_interval=0.01, device_id=0):
        super().__init__()
        if sample_interval <= 0:
            raise ValueError("sample_interval is a positive number of seconds")
        self.track_cpu, self.sample_interval = track_cpu, sample_interval
        self.track_gpu, self.device_id = track_gpu, device_id

    def _start(self):
        if not os.path.exists(f"/proc/{self.target_pid}/statm"):
            raise NotSupported(f"/proc/{self.target_pid}/statm cannot be read: "
                               "no procfs here")
        self._gpu, self._gpu_why = (None, "track_gpu=False")
        if self.track_gpu:
            self._gpu, self._gpu_why = _cuda(self.device_id)
            if self.target_pid != os.getpid():
                self._gpu, self._gpu_why = None, ("the GPU memory of another process is not "
                                                  "read (torch's allocator is this process's)")
            if self._gpu is None:
                _warn_once(self, f"GPU memory not measured: {self._gpu_why}")
            else:
                self._gpu.cuda.reset_peak_memory_stats(self.device_id)
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
               "timeline": [{"t_ns": t, "rss": rss, "cpu_ns": c}
                            for t, rss, c in rows]}
        out["cpu_ns"] = rows[-1][2] - rows[0][2] if rows else None
        reasons = {}
        peak = out["peak_rss"]
        out["cpu_peak_mb"] = peak / _MB if self.track_cpu and peak is not None else None
        if out["cpu_peak_mb"] is None:
            reasons["cpu_peak_mb"] = "track_cpu=False" if not self.track_cpu else "no sample"
        if self._gpu is not None:
            cuda = self._gpu.cuda
            out["gpu_peak_mb"] = cuda.max_memory_allocated(self.device_id) / _MB
            out["gpu_reserved_peak_mb"] = cuda.max_memory_reserved(self.device_id) / _MB
        else:
            out["gpu_peak_mb"] = out["gpu_reserved_peak_mb"] = None
            reasons["gpu_peak_mb"] = reasons["gpu_reserved_peak_mb"] = self._gpu_why
        out["reasons"] = reasons
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
        if r.get("gpu_peak_mb") is not None:
            res.append((self.target_name, "memory", "gpu-peak-allocated",
                        {"amount": [int(r["gpu_peak_mb"] * _MB)]}))
            res.append((self.target_name, "memory", "gpu-peak-reserved",
                        {"amount": [int(r["gpu_reserved_peak_mb"] * _MB)]}))
        return res


class CounterCollector(BaseCollector):
    """The counter service counting the block (this thread, as a counted region):
    software events and derived metrics here, hardware ones where a PMU exists.
    What could not be counted is None with the reason (``not_counted``), never 0.
    ``device_id`` (aaco's) names a GPU agent; where there is none (sonde has no
    GPU backend yet) every counter is None with that reason."""

    name = "counters"
    profile_type = "counters"
    units = {}

    def __init__(self, counters=None, agent=0, group=None, device_id=None):
        super().__init__()
        from . import counters as _c

        self._counters = _c
        names = list(counters) if counters is not None else []
        for g in ([group] if isinstance(group, str) else list(group or ())):
            names += [n for n in _c.group(g) if n not in names]
        if not names:
            names = ["task-clock", "page-faults", "context-switches"]
        self.names, self.device_id, self.config, self._why = names, device_id, None, None
        if device_id is not None:
            gpus = [a for a in _c.agents() if a.get("type") == "gpu"]
            if device_id < len(gpus):
                agent = gpus[device_id]["id"]
            else:
                self._why = (f"no GPU agent {device_id}: the counter service lists "
                             f"{len(gpus)} GPU agents here (sonde has no GPU backend yet)")
        if self._why is None:
            self.config = _c.Config(names, agent=agent)

    @classmethod
    def available_counters(cls):
        """The groups of counters this machine has: {group: [counter names]}
        (``sonde counters list --groups``)."""
        from . import counters as _c

        return {g: list(v["counters"]) for g, v in _c.groups().items()}

    def _start(self):
        if self.target_pid != os.getpid():
            raise NotSupported("CounterCollector counts this process's block; for a command "
                               "use `sonde collect counters -- CMD`")
        if self.config is None:
            _warn_once(self, f"counters not counted: {self._why}")
            self._t0 = time.monotonic_ns()
            return
        self._region = self._counters.region(self.target_name, self.config)
        self._region.__enter__()

    def _stop(self):
        if self.config is None:
            return {"values": {n: None for n in self.names},
                    "not_counted": {n: self._why for n in self.names},
                    "units": {n: None for n in self.names},
                    "duration_ns": time.monotonic_ns() - self._t0}
        self._region.__exit__(None, None, None)
        return {"values": dict(self._region.values),
                "not_counted": dict(self._region.not_counted),
                "units": {n: self._counters.info(n)["unit"] for n in self.config.counters},
                "duration_ns": self._region.duration_ns}

    def resources(self, r):
        return [(self.target_name, "counter", n, {"amount": [v]})
                for n, v in r["values"].items() if v is not None]


# ---- power: the machine's own meters -----------------------------------------------------------

def _power_sources(device_id):
    """[(name, kind, path)]: RAPL energy counters (µJ) and hwmon power sensors (µW)."""
    import glob

    out = []
    for d in sorted(glob.glob("/sys/class/powercap/*/")):
        name = _read(d + "name")
        # a package's sub-domains (core, uncore, dram) are inside its figure: packages only
        if name and os.path.exists(d + "energy_uj") and not os.path.basename(
                d.rstrip("/")).count(":") > 1:
            out.append((f"rapl:{name}", "energy", d + "energy_uj"))
    for f in sorted(glob.glob("/sys/class/hwmon/hwmon*/power*_input") +
                    glob.glob("/sys/class/hwmon/hwmon*/power*_average")):
        chip = _read(os.path.join(os.path.dirname(f), "name")) or "hwmon"
        out.append((f"hwmon:{chip}:{os.path.basename(f)}", "power", f))
    return out


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


class PowerCollector(BaseCollector):
    """Power and energy every ``sample_interval`` seconds, from the meters the
    machine has: RAPL packages (powercap energy counters), hwmon power sensors,
    and GPU ``device_id`` through torch/NVML where this process uses CUDA.
    ``average_watts`` and ``peak_watts`` are of the sources read, summed (each
    source's own figures in ``sources``); with none, they are None and
    ``reasons`` says what was looked for. Never an estimate."""

    name = "power"
    profile_type = "power"
    units = {"power": "W", "energy": "J"}

    def __init__(self, device_id=0, sample_interval=0.001):
        super().__init__()
        if sample_interval <= 0:
            raise ValueError("sample_interval is a positive number of seconds")
        self.device_id, self.sample_interval = device_id, sample_interval

    def _start(self):
        self._src = _power_sources(self.device_id)
        self._gpu, self._gpu_why = _cuda(self.device_id)
        if self._gpu is not None:
            try:
                self._gpu.cuda.power_draw(self.device_id)  # mW, through NVML (pynvml)
            except Exception as e:
                self._gpu, self._gpu_why = None, f"the GPU's power could not be read: {e}"
        self._rows = []  # (t_ns, {source: watts})
        self._prev = {}
        self._halt = threading.Event()
        self._sample()
        self._thread = threading.Thread(target=self._run, name="sonde-power-collector",
                                        daemon=True)
        self._thread.start()

    def _sample(self):
        t = time.monotonic_ns()
        row = {}
        for name, kind, path in self._src:
            v = _read(path)
            if v is None:
                continue
            if kind == "power":
                row[name] = int(v) / 1e6
            else:  # an energy counter: the power since the last reading
                e = int(v)
                if name in self._prev:
                    e0, t0 = self._prev[name]
                    if e >= e0 and t > t0:
                        row[name] = (e - e0) / 1e6 / ((t - t0) / 1e9)
                self._prev[name] = (e, t)
        if self._gpu is not None:
            row[f"gpu:{self.device_id}"] = self._gpu.cuda.power_draw(self.device_id) / 1e3
        if row:
            self._rows.append((t, row))

    def _run(self):
        while not self._halt.wait(self.sample_interval):
            self._sample()

    def _stop(self):
        self._halt.set()
        self._thread.join()
        self._sample()
        rows = self._rows
        names = sorted({n for _t, r in rows for n in r})
        sources = {}
        for n in names:
            pts = [(t, r[n]) for t, r in rows if n in r]
            w = [v for _t, v in pts]
            # energy: each reading holds from its time to the next
            e = sum(v * (pts[i + 1][0] - pts[i][0]) / 1e9 for i, (_t, v) in enumerate(pts[:-1]))
            sources[n] = {"average_watts": sum(w) / len(w), "peak_watts": max(w),
                          "energy_joules": e if len(pts) > 1 else None, "samples": len(w)}
        total = [sum(r.values()) for _t, r in rows if len(r) == len(names)] if names else []
        out = {"sources": sources, "samples": len(rows), "interval_s": self.sample_interval,
               "average_watts": sum(total) / len(total) if total else None,
               "peak_watts": max(total) if total else None,
               "energy_joules": sum(v["energy_joules"] or 0 for v in sources.values())
               if sources else None,
               "timeline": [{"t_ns": t - rows[0][0], **r} for t, r in rows], "reasons": {}}
        if not names:
            why = ("no power meter on this machine: no RAPL domain in /sys/class/powercap, "
                   "no power sensor in /sys/class/hwmon, and the GPU: " + self._gpu_why)
            out["reasons"] = {"average_watts": why, "peak_watts": why, "energy_joules": why}
            _warn_once(self, f"power not measured: {why}")
        return out

    def resources(self, r):
        tl = r["timeline"]
        return [(n, "power", "watts", {"amount": [p[n] for p in tl if n in p],
                                       "timestamp": [p["t_ns"] for p in tl if n in p]})
                for n in r["sources"]]


# ---- the system: /proc -----------------------------------------------------------------------------

def _proc_stat():
    """(busy jiffies, all jiffies, context switches, interrupts, forks) of the machine."""
    with open("/proc/stat") as f:
        lines = f.read().split("\n")
    cpu = [int(x) for x in lines[0].split()[1:]]
    idle = cpu[3] + (cpu[4] if len(cpu) > 4 else 0)  # idle + iowait
    total = sum(cpu[:8])  # guest time is inside user already
    vals = {ln.split()[0]: ln.split()[1:] for ln in lines[1:] if ln}
    return (total - idle, total, int(vals["ctxt"][0]), int(vals["intr"][0]),
            int(vals["processes"][0]))


def _meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for ln in f:
            k, v = ln.split(":", 1)
            out[k] = int(v.split()[0]) * 1024
    return out


class SystemCollector(BaseCollector):
    """The machine while the block runs, from /proc every ``sample_interval``
    seconds: CPU utilisation (the share of all CPUs' time not idle, 0 to 1:
    mean and peak over the samples), memory in use (MemTotal - MemAvailable),
    context switches, interrupts and processes created, and the load averages."""

    name = "system"
    profile_type = "system"
    units = {"share": "", "memory": "B"}

    def __init__(self, sample_interval=0.1):
        super().__init__()
        if sample_interval <= 0:
            raise ValueError("sample_interval is a positive number of seconds")
        self.sample_interval = sample_interval

    def _start(self):
        if not os.path.exists("/proc/stat"):
            raise NotSupported("/proc/stat cannot be read: no procfs here")
        self._t0 = time.monotonic_ns()
        self._first = self._last = _proc_stat()
        self._rows = []
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sonde-system-collector",
                                        daemon=True)
        self._thread.start()

    def _sample(self):
        now = _proc_stat()
        m = _meminfo()
        busy, total = now[0] - self._last[0], now[1] - self._last[1]
        self._rows.append({"t_ns": time.monotonic_ns() - self._t0,
                           "cpu_utilization": busy / total if total > 0 else None,
                           "memory_used": m["MemTotal"] - m.get("MemAvailable", m["MemFree"])})
        self._last = now

    def _run(self):
        while not self._halt.wait(self.sample_interval):
            self._sample()

    def _stop(self):
        self._halt.set()
        self._thread.join()
        self._sample()
        end = self._last
        util = [r["cpu_utilization"] for r in self._rows if r["cpu_utilization"] is not None]
        busy, total = end[0] - self._first[0], end[1] - self._first[1]
        return {"cpu_utilization": busy / total if total > 0 else None,
                "cpu_utilization_peak": max(util) if util else None,
                "cpus": os.cpu_count(),
                "memory_used_peak_mb": max(r["memory_used"] for r in self._rows) / _MB,
                "context_switches": end[2] - self._first[2],
                "interrupts": end[3] - self._first[3],
                "processes_created": end[4] - self._first[4],
                "load_average": os.getloadavg(), "samples": len(self._rows),
                "timeline": self._rows, "reasons": {} if total > 0 else
                {"cpu_utilization": "the window was shorter than one clock tick"}}

    def resources(self, r):
        tl = r["timeline"]
        return [("system", "share", "cpu-utilization",
                 {"amount": [p["cpu_utilization"] or 0.0 for p in tl],
                  "timestamp": [p["t_ns"] for p in tl]}),
                ("system", "memory", "used", {"amount": [p["memory_used"] for p in tl],
                                              "timestamp": [p["t_ns"] for p in tl]})]


# ---- the kernel's view of this process ----------------------------------------------------------

def _sched_totals(pid):
    """(ns on a CPU, ns runnable but waiting for one) summed over pid's threads (schedstat)."""
    run = wait = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tasks:
        v = _read(f"/proc/{pid}/task/{t}/schedstat")
        if v:
            a, b, _n = v.split()
            run, wait = run + int(a), wait + int(b)
    return run, wait


class EBPFCollector(BaseCollector):
    """What the kernel's scheduler did to this process, as aaco's eBPF collector
    reports it: context switches (getrusage, every thread, ended ones too),
    the scheduler interference index (the share of its threads' runnable time
    spent waiting for a CPU: run_delay / (run_time + run_delay), from each
    thread's schedstat), the machine's interrupts ("irq", /proc/stat) and this
    thread's system calls ("syscall", the raw_syscalls:sys_enter tracepoint
    through the counter service: root, or a lowered perf_event_paranoid; None
    with the reason otherwise). The kernel keeps these counts itself: no probe
    needs loading. The window runs from start() (or the collector's creation)
    to stop() (or now)."""

    name = "ebpf"
    profile_type = "sched"
    units = {"count": "", "time": "ns", "share": ""}
    PROBES = ("sched", "irq", "syscall")

    def __init__(self, probes=("sched", "irq", "syscall")):
        super().__init__()
        bad = [p for p in probes if p not in self.PROBES]
        if bad:
            raise ValueError(f"probes are {', '.join(self.PROBES)} (not {', '.join(bad)})")
        self.probes = tuple(probes)
        self._region = None
        self._syscalls_why = None
        self._base = self._snapshot()

    def _snapshot(self):
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return {"t_ns": time.monotonic_ns(), "vcsw": ru.ru_nvcsw, "ivcsw": ru.ru_nivcsw,
                "sched": _sched_totals(os.getpid()), "irq": _proc_stat()[3]}

    def _start(self):
        self._base = self._snapshot()
        self._region = None
        if "syscall" in self.probes:
            try:
                from . import counters as _c

                cfg = _c.Config(["raw_syscalls:sys_enter"])
                self._region = _c.region("syscalls", cfg)
                self._region.__enter__()
            except Exception as e:
                self._region, self._syscalls_why = None, f"system calls not counted: {e}"

    def _window(self, end=None):
        end = end or self._snapshot()
        b = self._base
        out = {"duration_ns": end["t_ns"] - b["t_ns"], "reasons": {}}
        if "sched" in self.probes:
            out["voluntary_context_switches"] = end["vcsw"] - b["vcsw"]
            out["involuntary_context_switches"] = end["ivcsw"] - b["ivcsw"]
            out["context_switches"] = (out["voluntary_context_switches"] +
                                       out["involuntary_context_switches"])
            if b["sched"] and end["sched"]:
                run, wait = (end["sched"][0] - b["sched"][0], end["sched"][1] - b["sched"][1])
                out["run_ns"], out["run_delay_ns"] = run, wait
                out["scheduler_interference_index"] = wait / (run + wait) if run + wait > 0 \
                    else 0.0
            else:
                out["scheduler_interference_index"] = None
                out["reasons"]["scheduler_interference_index"] = \
                    "/proc/PID/task/*/schedstat cannot be read (a kernel without schedstats)"
        if "irq" in self.probes:
            out["interrupts"] = end["irq"] - b["irq"]
        return out

    def _stop(self):
        out = self._window()
        if "syscall" in self.probes:
            if self._region is not None:
                self._region.__exit__(None, None, None)
                v = self._region.values.get("raw_syscalls:sys_enter")
                out["syscalls"] = v
                if v is None:
                    out["reasons"]["syscalls"] = self._region.not_counted.get(
                        "raw_syscalls:sys_enter", "not counted")
            else:
                out["syscalls"] = None
                out["reasons"]["syscalls"] = self._syscalls_why
        return out

    def _current(self):
        return self._results if self._state == "stopped" else Results(self._window())

    def scheduler_interference_index(self):
        """The share (0 to 1) of the threads' runnable time spent waiting for a CPU
        in the window (so far, while it runs)."""
        return self._current().get("scheduler_interference_index")

    def context_switches(self):
        """Context switches of every thread of the process in the window (so far)."""
        return self._current().get("context_switches")

    def resources(self, r):
        keys = ("context_switches", "voluntary_context_switches",
                "involuntary_context_switches", "interrupts", "syscalls")
        res = [(self.target_name, "count", k, {"amount": [r[k]]}) for k in keys
               if r.get(k) is not None]
        if r.get("scheduler_interference_index") is not None:
            res.append((self.target_name, "share", "scheduler-interference-index",
                        {"amount": [r["scheduler_interference_index"]]}))
        return res


# ---- traces --------------------------------------------------------------------------------------

class Traces:
    """A TraceCollector's traces: the Python calls (a trace profile) and the GPU
    kernels (None with the reason where no GPU backend runs)."""

    def __init__(self, profile, kernels, reasons):
        self.profile, self.kernels, self.reasons = profile, kernels, reasons

    def export(self, path, format="perfetto"):
        """Write the traces as Perfetto's trace events (ui.perfetto.dev opens it)."""
        if format != "perfetto":
            raise ValueError("traces export to perfetto")
        if self.profile is None:
            doc = json.dumps({"traceEvents": [], "metadata": {"sonde": self.reasons}})
        else:
            from .report import view

            doc = view(self.profile, "perfetto")
        from .report import _write

        _write(os.fspath(path), doc)

    def __repr__(self):
        calls = "none" if self.profile is None else f"{len(self.profile['resource_type_map'])} functions"
        return f"<sonde.Traces calls={calls} kernels={self.kernels!r}>"


class TraceCollector(BaseCollector):
    """Traces of the block: ``trace_level`` "api" records every Python call (and C
    call) of every thread (sonde.CpuCollector underneath), "kernel" the GPU
    kernels of ``device_id``, "full" both. GPU kernels need a GPU backend, which
    this build has not got: they are None with the reason (warned once), never
    a CPU figure. stop() returns a Traces; ``traces.export(path)`` writes Perfetto."""

    name = "trace"
    profile_type = "mixed"
    units = {"mixed(time delta)": "ns"}
    LEVELS = ("api", "kernel", "full")

    def __init__(self, device_id=0, trace_level="kernel", output_format="perfetto"):
        super().__init__()
        if trace_level not in self.LEVELS:
            raise ValueError(f"trace_level is one of {', '.join(self.LEVELS)}")
        if output_format != "perfetto":
            raise ValueError("output_format is perfetto")
        self.device_id, self.trace_level = device_id, trace_level
        self.output_format = output_format

    def _start(self):
        from .cpu import CpuCollector

        self._cpu = None
        if self.trace_level in ("api", "full"):
            self._cpu = CpuCollector()
            self._cpu.start()

    def _stop(self):
        reasons = {}
        profile = None
        if self._cpu is not None:
            self._cpu.stop()
            profile = self._cpu.profile(self.target_name)
        if self.trace_level in ("kernel", "full"):
            reasons["kernels"] = ("GPU kernels are not traced: this build of sonde has no GPU "
                                  "backend (CUPTI) yet")
            _warn_once(self, reasons["kernels"])
        self.traces = Traces(profile, None, reasons)
        return {"traces": self.traces, "functions": None if profile is None else
                len(profile["resource_type_map"]), "kernels": None, "reasons": reasons}

    def stop(self):
        BaseCollector.stop(self)
        return self.traces

    stop._sonde_protocol = True  # the protocol's own stop runs inside

    def profile_doc(self, name, label, argv):
        p = self.traces.profile
        if p is None:
            return super().profile_doc(name, label, argv)
        p = dict(p)
        p["collector_info"] = {**p.get("collector_info", {}), "name": name}
        return p


class Observatory:
    """Collectors registered by name, run together on one function, model or command."""

    def __init__(self):
        self._registry = {"timing": TimingCollector, "memory": MemoryCollector,
                          "counters": CounterCollector, "trace": TraceCollector,
                          "power": PowerCollector, "system": SystemCollector,
                          "ebpf": EBPFCollector}

    def register_collector(self, name, cls):
        if not (isinstance(cls, type) and issubclass(cls, BaseCollector)):
            raise TypeError("a collector is a subclass of sonde.BaseCollector")
        if not name or not isinstance(name, str):
            raise ValueError("a collector's name is a non-empty str")
        self._registry[name] = cls

    def collectors(self):
        return sorted(self._registry)

    def profile(self, target=None, collectors=("timing",), args=(), output_dir=".",
                params=None, model=None, inputs=()):
        """Run target (a callable, or a command as a list or a string) once with
        every named collector; write one profile per collector into output_dir.
        ``model`` instead: a callable, a torch.nn.Module called on ``inputs`` (a
        tensor or a tuple of them), an ``.onnx`` file run through ONNX Runtime on
        zeros of its inputs' shapes, or a command. Returns {name: (results,
        profile path)}."""
        params = params or {}
        if model is not None:
            if target is not None:
                raise TypeError("give target or model, not both")
            target = _model_target(model, inputs)
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
            _sonde.save_profile(json.dumps(c.profile_doc(n, label, argv)), path)
            out[n] = (c.get_results(), path)
        return out


def _model_target(model, inputs):
    """A callable that runs the model once (see Observatory.profile)."""
    if isinstance(model, (str, os.PathLike)) and os.fspath(model).endswith(".onnx"):
        try:
            import onnxruntime
        except ImportError:
            raise NotSupported(f"{os.fspath(model)}: running an ONNX model needs ONNX Runtime "
                               "(the Python module onnxruntime), which is not installed; give "
                               "a callable, a torch.nn.Module with inputs=, or a command") from None
        import numpy as np

        sess = onnxruntime.InferenceSession(os.fspath(model))
        feed = {i.name: np.zeros([d if isinstance(d, int) else 1 for d in i.shape],
                                 dtype=np.float32) for i in sess.get_inputs()}
        run = lambda: sess.run(None, feed)  # noqa: E731
        run.__qualname__ = os.path.basename(os.fspath(model))
        return run
    if callable(model):
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(model, torch.nn.Module):
            args = inputs if isinstance(inputs, tuple) else (inputs,)

            def run():
                with torch.no_grad():
                    return model(*args)
            run.__qualname__ = type(model).__name__
            return run
        return model
    return model  # a command: a list or a string


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
