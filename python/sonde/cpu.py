"""The Python CPU collector: every Python call and return (and calls into C
functions) of every thread, recorded by a C profile hook into per-thread rings.

    c = sonde.CpuCollector()
    with c:
        main()
    c.save_profile("calls.json")     # sonde show calls.json report / graph / flamegraph

States: idle -> collecting (start) -> finalized (stop); anything else raises
sonde.StateError. A profile function installed before start (sys.setprofile,
another profiler) still sees every event, and is put back at stop.

What it cannot see: time in C code called from C (one C call from Python is
one event, whatever it calls), and while a thread holds the GIL only it runs,
so a thread waiting for the GIL shows that wait inside the call it is in.
"""

import os
import sys

from . import _sonde
from ._base import SondeWarning, StartStop


class TraceBuffer:
    """The shared trace buffer of the CPU collector's specification: a
    CpuCollector made with one streams its events into it when it stops (each
    thread records into a buffer of its own; they are merged then, in time
    order). Events are dicts whose "type" is one of:

    - cpu_call: a Python (or C, ``"c": True``) function's call, with function,
      file, line, thread, start_ns, end_ns, duration_ns (None for a call still
      open at stop) and depth;
    - cpu_syscall: a system call (``syscalls=True``), with name, thread,
      start_ns, end_ns, duration_ns and the function that made it;
    - memory_alloc, memory_free: a sampled allocation and its free
      (``memory=True``), with address, size, the bytes it stands for
      (weight_bytes), the function, and with ``numa=True`` the NUMA node of its
      page (node) and of the CPU that made it (cpu_node); a free also gives the
      node the page was on when the block was allocated (alloc_node) and
      whether the kernel migrated it meanwhile (migrated: None where a node
      could not be read).
    """

    TYPES = ("cpu_call", "cpu_syscall", "memory_alloc", "memory_free")

    def __init__(self):
        self._events = []

    def extend(self, events):
        self._events.extend(events)
        self._events.sort(key=lambda e: e.get("start_ns", e.get("ts_ns", 0)))

    def events(self, type=None):
        if type is not None and type not in self.TYPES:
            raise ValueError(f"event types are {', '.join(self.TYPES)}")
        return [e for e in self._events if type is None or e["type"] == type]

    def counts(self):
        out = dict.fromkeys(self.TYPES, 0)
        for e in self._events:
            out[e["type"]] += 1
        return out

    def clear(self):
        self._events = []

    def __len__(self):
        return len(self._events)

    def __iter__(self):
        return iter(list(self._events))

    def __repr__(self):
        return f"<sonde.TraceBuffer {self.counts()}>"


def _typed(raw, memory):
    """The collector's raw events (call/return pairs per thread) as TraceBuffer events."""
    out, stacks = [], {}
    for e in raw:
        kind, tid = e.get("event"), e.get("thread")
        st = stacks.setdefault(tid, [])
        if kind in ("call", "c_call", "syscall_enter"):
            st.append(e)
        elif kind in ("return", "c_return", "syscall_exit") and st:
            b = st.pop()
            out.append(_closed(b, e["ts_ns"], len(st)))
    for st in stacks.values():  # still open at stop
        for depth, b in enumerate(st):
            out.append(_closed(b, None, depth))
    nodes = {}  # a live sampled block's address -> the node its page was on when allocated
    for m in memory:
        if m["event"] in ("memory_alloc", "memory_free"):
            e = {"type": m["event"], **{k: v for k, v in m.items() if k != "event"}}
            if m["event"] == "memory_alloc":
                nodes[m.get("address")] = m.get("node")
            elif "node" in m:
                # a page the kernel moved to another node while the block lived
                first = nodes.pop(m.get("address"), None)
                e["alloc_node"] = first
                e["migrated"] = None if first is None or m["node"] is None \
                    else first != m["node"]
            out.append(e)
    return out


def _closed(b, end, depth):
    if b["event"] == "syscall_enter":
        name = (b.get("function") or "syscall:?").split(":", 1)[-1]
        return {"type": "cpu_syscall", "name": name, "thread": b["thread"],
                "start_ns": b["ts_ns"], "end_ns": end,
                "duration_ns": None if end is None else end - b["ts_ns"]}
    return {"type": "cpu_call", "function": b.get("function"), "file": b.get("file"),
            "line": b.get("line"), "c": b["event"] == "c_call", "thread": b["thread"],
            "start_ns": b["ts_ns"], "end_ns": end,
            "duration_ns": None if end is None else end - b["ts_ns"], "depth": depth}


class CpuCollector(StartStop, _sonde.CpuCollector):
    """Every Python call and return of every thread (and C calls, c_calls=True).

    buffer: bytes of ring per thread (a power of two; 64 MiB by default, 16
    bytes an event). A full ring drops its oldest events; each one is counted
    (``dropped``), warned about once, and said in the profile.

    c_calls=False records Python calls only, through the frame evaluator
    (PEP 523): the cheapest way in, about 85 ns a call here.

    syscalls=True also records every system call of the process's threads
    (perf_event on the raw_syscalls tracepoints: root, or a lowered
    kernel.perf_event_paranoid), each a call of "syscall:NAME" nested in the
    Python (or C) function that made it. Where that is not permitted, a
    warning says why and the calls are recorded without them.

    mode="sampling" records no calls: hz times a second (100 by default) a
    thread of sonde's takes the GIL and reads every thread's Python stack;
    each thread that ran since its previous sample gets one, weighted by the
    CPU time it used meanwhile (wall=True: the wall time, and waiting
    threads are sampled too). The profile's counts are samples and its times
    estimates; docs/python.md says what the GIL does to them.

    memory=True also samples the Python allocator (its "mem" and "object"
    domains, as tracemalloc hooks them): about one allocation every
    memory_interval bytes, each standing for the bytes it is likely to
    represent, so the profile's stats.trace.memory estimates bytes allocated
    per function without recording every allocation; memory_events() lists
    the samples (memory_alloc) and their frees (memory_free). numa=True also
    reads the NUMA node of each sampled block's page and of the CPU that
    allocated it (libnuma), for bytes per node, migrated and remote blocks."""

    def __init__(self, buffer=None, c_calls=True, syscalls=False, mode="calls", hz=100,
                 wall=False, memory=False, numa=False, memory_interval=256 * 1024,
                 trace_buffer=None, **sonde_rings):
        if isinstance(buffer, TraceBuffer):  # the specification's CpuCollector(trace_buffer)
            buffer, trace_buffer = None, buffer
        super().__init__(buffer=buffer, c_calls=c_calls, syscalls=syscalls, mode=mode, hz=hz,
                         wall=wall, memory=memory, numa=numa, memory_interval=memory_interval,
                         **sonde_rings)
        self.results = None
        self.trace_buffer = trace_buffer
        self._memory = memory
        self._initialized = True

    @property
    def state(self):
        """uninitialized (made without __init__), idle, collecting or finalized: the
        specification's Uninitialized -> Idle -> Collecting -> Finalized."""
        if not self.__dict__.get("_initialized"):
            return "uninitialized"
        return _sonde.CpuCollector.state.__get__(self)

    def start(self):
        import atexit  # built in: nothing of the program's is imported

        # still running when the interpreter exits: stopped before it finalises (a
        # sampling timer that fired during finalisation crashed the interpreter);
        # registered before start, so that the call is not the profile's
        atexit.register(self._stop_at_exit)
        try:
            return super().start()
        except BaseException:
            atexit.unregister(self._stop_at_exit)
            raise

    def _stop_at_exit(self):
        try:
            super().stop()
        except Exception:  # stopped already, or never started
            pass

    def stop(self):
        import atexit
        import warnings  # not before the program (see _base.py)

        self.results = r = super().stop()
        atexit.unregister(self._stop_at_exit)  # (after: not a call of the profile's)
        if self.trace_buffer is not None and not (r and r.get("mode") == "sampling"):
            mem = self.memory_events() if self._memory else []
            self.trace_buffer.extend(_typed(self.events(), mem))
        if r and r.get("mode") == "sampling":
            return r
        if r and r["dropped"]:
            warnings.warn(f"sonde: {r['dropped']} events were dropped from full rings (the "
                          "oldest of their threads); give CpuCollector a bigger buffer=",
                          SondeWarning, stacklevel=2)
        if r and r["syscalls_not_recorded"]:
            warnings.warn(f"sonde: system calls were not recorded: {r['syscalls_not_recorded']}",
                          SondeWarning, stacklevel=2)
        if r and r.get("hook_displaced"):
            warnings.warn(f"sonde: the program replaced sonde's profile hook (sys.setprofile; "
                          f"now: {r['displaced_by']}) in {r['hook_displaced']} thread(s): "
                          "their calls after that were not recorded "
                          "(CpuCollector(c_calls=False) records through the frame evaluator, "
                          "which sys.setprofile leaves alone)", SondeWarning, stacklevel=2)
        if r and r["syscalls_lost"]:
            warnings.warn(f"sonde: {r['syscalls_lost']} system call events found the kernel's "
                          "ring full and were lost", SondeWarning, stacklevel=2)
        if r and r["lost"]:
            warnings.warn(f"sonde: {r['lost']} events were lost: their threads found no free "
                          "ring (a collection has rings for 1024 threads)", SondeWarning, stacklevel=2)
        return r

    def get_results(self):
        return self.results

    def profile(self, cmd=None):
        """The trace profile of the calls (a dict), as `sonde collect trace` writes."""
        import json

        cmd = cmd or os.path.basename(sys.argv[0] or "python") or "python"
        return json.loads(self.profile_json(cmd))

    def save_profile(self, path, cmd=None):
        """Write the profile (stamped with machine, commit and date); .gz/.zst compress.
        A rank of a distributed job of several ranks writes PATH-rankR instead
        (docs/distributed.md). Returns the path written."""
        cmd = cmd or os.path.basename(sys.argv[0] or "python") or "python"
        return _sonde.save_profile(self.profile_json(cmd), os.fspath(path))
