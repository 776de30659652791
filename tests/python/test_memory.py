"""MemoryTracker: the Python heap through the interpreter's allocator hooks
(tracemalloc, the peer Python users trust, read directly) and RSS over time."""
import time
import tracemalloc

import pytest

import sonde


def _allocate():
    return bytearray(20 * 2**20)  # 20 MiB, in this function's frame


def test_peak_and_top_site():
    with sonde.MemoryTracker(interval=5) as tr:
        buf = _allocate()
        time.sleep(0.03)
        del buf
    s = tr.get_stats()
    assert s["units"] == {"size": "B", "time": "ms"}
    assert 20 * 2**20 <= s["peak_allocated"] < 22 * 2**20
    assert s["growth"] < 2**20  # freed before the end
    assert not tracemalloc.is_tracing()  # it started tracing, so it stopped it


def test_top_site_is_the_allocating_line():
    with sonde.MemoryTracker(track_timeline=False) as tr:
        keep = _allocate()
    site = tr.get_stats()["top_sites"][0]
    line = _allocate.__code__.co_firstlineno + 1
    assert site["site"].endswith(f"test_memory.py:{line}"), site
    assert site["stack"][0] == site["site"]  # innermost first
    assert site["size"] >= 20 * 2**20
    del keep


def test_agrees_with_tracemalloc_itself():
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        with sonde.MemoryTracker(track_timeline=False) as tr:
            b = _allocate()
            del b
        _cur, peak = tracemalloc.get_traced_memory()
        assert tr.get_stats()["peak_allocated"] == peak
        assert tracemalloc.is_tracing()  # someone else's tracing is left on
    finally:
        tracemalloc.stop()


def test_rss_timeline_rises():
    with sonde.MemoryTracker(track_allocations=False, interval=5) as tr:
        time.sleep(0.02)
        b = bytearray(64 * 2**20)
        b[::4096] = b"x" * len(b[::4096])  # touch every page
        time.sleep(0.03)
    tl = tr.get_allocation_timeline()
    assert len(tl) >= 4
    assert [p["t_ms"] for p in tl] == sorted(p["t_ms"] for p in tl)
    assert max(p["rss"] for p in tl) - tl[0]["rss"] >= 60 * 2**20
    s = tr.get_stats()
    assert s["peak_allocated"] is None and "track_allocations" in s["not_measured"]["peak_allocated"]
    del b


def test_states():
    tr = sonde.MemoryTracker(track_timeline=False)
    with pytest.raises(sonde.StateError):
        tr.get_stats()
    with pytest.raises(sonde.StateError):
        tr.stop()
    tr.start()
    with pytest.raises(sonde.StateError):
        tr.start()
    tr.stop()
    tr.print_summary()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_an_interval_that_is_no_positive_finite_number_is_refused(bad):
    with pytest.raises(ValueError, match="positive, finite"):
        sonde.MemoryTracker(interval=bad)


def test_tracemalloc_stopped_by_the_program_is_said_not_guessed():
    tr = sonde.MemoryTracker(interval=5)
    tr.start()
    tracemalloc.stop()  # the program's doing
    stopped_ms = (time.monotonic_ns() - tr._t0) / 1e6
    time.sleep(0.02)
    with pytest.warns(sonde.SondeWarning, match="stopped tracemalloc"):
        s = tr.stop()
    assert s["peak_allocated"] is None and "stopped tracemalloc" in s["not_measured"]["peak_allocated"]
    assert s["rss_end"] > 0  # what could be read still is
    # every sample taken after the program stopped it (a loaded machine may have
    # let the sampler take one before): not measured, not 0
    after = [p for p in tr.get_allocation_timeline() if p["t_ms"] >= stopped_ms]
    assert after and all(p["allocated"] is None for p in after)
