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
                 **sonde_rings):
        super().__init__(buffer=buffer, c_calls=c_calls, syscalls=syscalls, mode=mode, hz=hz,
                         wall=wall, memory=memory, numa=numa, memory_interval=memory_interval,
                         **sonde_rings)
        self.results = None

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
        """Write the profile (stamped with machine, commit and date); .gz/.zst compress."""
        cmd = cmd or os.path.basename(sys.argv[0] or "python") or "python"
        _sonde.save_profile(self.profile_json(cmd), os.fspath(path))
