"""Collectors with one protocol, registered by name and run together."""
import json
import os
import subprocess
import sys
import time

import pytest

import sonde


def test_timing_collector_precision():
    a = time.perf_counter_ns()
    with sonde.TimingCollector(precision="ms") as c:
        time.sleep(0.05)
    outer = (time.perf_counter_ns() - a) / 1e6
    r = c.get_results()
    # at least the sleep, no more than the clock around it (a late wake-up is the region's)
    assert r["unit"] == "ms" and 50 <= r["wall"] <= outer, (r, outer)
    assert r["wall_ns"] >= 50_000_000 and r["cpu_ns"] < r["wall_ns"]
    with pytest.raises(ValueError):
        sonde.TimingCollector(precision="s")


def test_memory_collector_sees_rss_rise():
    c = sonde.MemoryCollector(sample_interval=0.005)
    c.start()
    time.sleep(0.02)
    b = bytearray(64 * 2**20)
    b[::4096] = b"x" * len(b[::4096])
    time.sleep(0.03)
    r = c.stop()
    assert r["samples"] >= 4
    assert r["peak_rss"] - r["timeline"][0]["rss"] >= 60 * 2**20
    assert r["cpu_ns"] is not None and r["cpu_ns"] >= 0
    del b


def test_states_and_reset():
    c = sonde.TimingCollector()
    with pytest.raises(sonde.StateError):
        c.stop()
    with pytest.raises(sonde.StateError):
        c.get_results()
    c.start()
    with pytest.raises(sonde.StateError):
        c.start()
    c.stop()
    with pytest.raises(sonde.StateError):
        c.start()  # stopped: reset first
    c.reset()
    assert c.state == "idle"
    c.start()
    c.stop()


class Calls(sonde.BaseCollector):
    """A custom collector: how many times a counter was bumped in the block."""

    name = "calls"
    profile_type = "python-calls"
    units = {"count": "calls"}
    bumps = 0

    def _start(self):
        Calls.bumps = 0

    def _stop(self):
        return {"calls": Calls.bumps}

    def resources(self, r):
        return [(self.target_name, "count", "calls", {"amount": [r["calls"]]})]


class Broken(sonde.BaseCollector):
    name = "broken"

    def _start(self):
        raise sonde.NotSupported("needs a device this machine lacks")

    def _stop(self):
        return {}


def _work():
    for _ in range(7):
        Calls.bumps += 1
    time.sleep(0.01)


def test_custom_collector_by_name(tmp_path, sonde_bin):
    obs = sonde.Observatory()
    obs.register_collector("calls", Calls)
    assert obs.collectors() == ["calls", "counters", "ebpf", "memory", "power", "system", "timing",
                               "trace"]
    out = obs.profile(_work, collectors=["timing", "calls"], output_dir=tmp_path)
    assert out["calls"][0] == {"calls": 7}
    assert out["timing"][0]["wall_ns"] >= 10_000_000
    for name, (_r, path) in out.items():
        p = json.load(open(path))
        assert p["collector_info"]["name"] == name
        show = subprocess.run([sonde_bin, "show", path], capture_output=True, text=True)
        assert show.returncode == 0, show.stderr
    assert "7" in subprocess.run([sonde_bin, "show", out["calls"][1], "-f", "csv"],
                                 capture_output=True, text=True).stdout
    with pytest.raises(KeyError):
        obs.profile(_work, collectors=["nope"])
    with pytest.raises(TypeError):
        obs.register_collector("x", dict)


def test_not_supported_at_start_stops_the_others(tmp_path):
    obs = sonde.Observatory()
    obs.register_collector("broken", Broken)
    with pytest.raises(sonde.NotSupported, match="device"):
        obs.profile(_work, collectors=["memory", "broken"], output_dir=tmp_path)
    assert os.listdir(tmp_path) == []  # nothing half-written


def test_command_profiles(tmp_path):
    obs = sonde.Observatory()
    cmd = [sys.executable, "-c", "import time; b = bytearray(32 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(0.2)"]
    out = obs.profile(cmd, collectors=["timing", "memory"], output_dir=tmp_path,
                      params={"memory": {"sample_interval": 0.01}})
    assert out["timing"][0]["wall_ns"] >= 200_000_000
    assert out["memory"][0]["peak_rss"] >= 32 * 2**20  # the command's RSS, not ours
    if "SRC" in os.environ:
        for _r, path in out.values():
            v = subprocess.run(["/usr/bin/python3",
                                os.path.join(os.environ["SRC"], "tests/validate-profile.py"),
                                os.path.join(os.environ["SRC"], "docs/profile.schema.json"), path],
                               capture_output=True, text=True)
            assert v.returncode == 0, v.stdout + v.stderr
