"""The Python heap and the process's resident memory while a block runs.

Allocations are the interpreter's own allocator hooks (tracemalloc): every
allocation of the Python heap with its Python stack, as it happens. Resident
memory is read from /proc/self/statm by a sampling thread every `interval` ms.
"""

import os
import resource
import sys
import threading
import time
import tracemalloc
import warnings

from ._base import SondeWarning
from ._sonde import StateError
from .collectors import StartStop, _proc_sample


def _rss():
    return _proc_sample(os.getpid())[0]


def peak_rss():
    """The process's peak resident memory since it started (getrusage), bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class MemoryTracker(StartStop):
    """``with MemoryTracker() as tr:`` records the block's Python heap and RSS.

    ``track_allocations``: trace every allocation with its stack (``nframes``
    frames; tracemalloc). ``track_timeline``: sample RSS and the traced heap every
    ``interval`` ms. Sizes are bytes, times ms from the start of the block.
    """

    def __init__(self, track_allocations=True, track_timeline=True, interval=100, nframes=16,
                 top=10):
        if not interval > 0 or interval == float("inf"):  # NaN compares false
            raise ValueError("interval is a positive, finite number of ms")
        self.track_allocations = track_allocations
        self.track_timeline = track_timeline
        self.interval = interval
        self.nframes = nframes
        self.top = top
        self._state = "idle"
        self._timeline = []
        self._stats = None

    def start(self):
        if self._state == "running":
            raise StateError("the memory tracker is running already")
        self._timeline, self._stats = [], None
        self._owns_tracing = False
        if self.track_allocations:
            if not tracemalloc.is_tracing():
                tracemalloc.start(self.nframes)
                self._owns_tracing = True
            tracemalloc.reset_peak()
            self._base = tracemalloc.get_traced_memory()[0]
        self._t0 = time.monotonic_ns()
        self._rss0 = _rss()
        self._stop = threading.Event()
        if self.track_timeline:
            self._sample()
            self._thread = threading.Thread(target=self._run, name="sonde-memory", daemon=True)
            self._thread.start()
        self._state = "running"

    def _sample(self):
        # the time first: a sample's figures were all read at or after its time
        t_ms = (time.monotonic_ns() - self._t0) / 1e6
        # not tracing (the program stopped tracemalloc): not measured, not 0
        traced = (tracemalloc.get_traced_memory()[0]
                  if self.track_allocations and tracemalloc.is_tracing() else None)
        self._timeline.append({"t_ms": t_ms, "rss": _rss(), "allocated": traced})

    def _run(self):
        while not self._stop.wait(self.interval / 1000):
            self._sample()

    def stop(self):
        if self._state != "running":
            raise StateError("the memory tracker was not started")
        if self.track_timeline:
            self._stop.set()
            self._thread.join()
            self._sample()
        stats = {"units": {"size": "B", "time": "ms"},
                 "duration_ms": (time.monotonic_ns() - self._t0) / 1e6,
                 "rss_start": self._rss0, "rss_end": _rss(),
                 "peak_rss_process": peak_rss(),
                 "not_measured": {}}
        if self._timeline:
            stats["peak_rss_sampled"] = max(s["rss"] for s in self._timeline)
        if self.track_allocations and not tracemalloc.is_tracing():
            why = "the program stopped tracemalloc while the tracker ran"
            warnings.warn(f"sonde: MemoryTracker: {why}: no allocation figures", SondeWarning,
                          stacklevel=2)
            for k in ("peak_allocated", "allocated_at_end", "growth", "live_blocks"):
                stats[k] = None
                stats["not_measured"][k] = why
            stats["top_sites"] = []
        elif self.track_allocations:
            current, peak = tracemalloc.get_traced_memory()
            snap = tracemalloc.take_snapshot()
            stats["peak_allocated"] = peak
            stats["allocated_at_end"] = current
            stats["growth"] = current - self._base
            stats["live_blocks"] = sum(s.count for s in snap.statistics("filename"))
            stats["top_sites"] = [
                {"site": f"{s.traceback[-1].filename}:{s.traceback[-1].lineno}",
                 "size": s.size, "count": s.count,
                 # innermost first, as sonde's memory stacks are
                 "stack": [f"{f.filename}:{f.lineno}" for f in reversed(s.traceback)]}
                for s in snap.statistics("traceback")[:self.top]]
            if self._owns_tracing:
                tracemalloc.stop()
        else:
            stats["peak_allocated"] = None
            stats["not_measured"]["peak_allocated"] = "track_allocations=False"
        self._stats = stats
        self._state = "stopped"
        return stats

    def get_stats(self):
        """Peak and end sizes, live blocks and the top allocation sites (bytes)."""
        if self._stats is None:
            raise StateError("the memory tracker has not stopped yet")
        return self._stats

    def get_allocation_timeline(self):
        """[{t_ms, rss, allocated}] every `interval` ms, first and last included."""
        return list(self._timeline)

    def print_summary(self, file=None):
        s = self.get_stats()
        file = file or sys.stdout

        def mib(b):
            return "-" if b is None else f"{b / 2**20:.2f} MiB"

        print(f"Python heap: peak {mib(s['peak_allocated'])}, at end "
              f"{mib(s.get('allocated_at_end'))}; RSS {mib(s['rss_start'])} -> "
              f"{mib(s['rss_end'])} (sampled peak {mib(s.get('peak_rss_sampled'))})", file=file)
        for site in s.get("top_sites", []):
            print(f"  {mib(site['size']):>12}  {site['count']:>8} blocks  {site['site']}",
                  file=file)
