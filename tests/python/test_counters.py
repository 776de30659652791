"""The counter service from Python, checked against the kernel's own count of
the same block (getrusage's minor faults) and against known answers."""
import json
import mmap
import resource
import subprocess

import pytest

import sonde
from sonde import counters

PAGE = 4096


def test_agents_and_catalog():
    a = counters.agents()
    assert a and a[0]["type"] == "cpu" and a[0]["name"] == "cpu0"
    names = {c["name"] for c in counters.catalog()}
    assert {"task-clock", "page-faults", "context-switches"} <= names
    info = counters.info("page-faults")
    assert info["kind"] == "software" and info["supported"]
    with pytest.raises(KeyError):
        counters.info("no-such-counter")


def test_region_counts_n_page_faults():
    n = 4096  # 16 MiB, every page touched once
    cfg = counters.Config(["page-faults", "task-clock"])
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    with counters.region("touch", cfg) as r:
        b = mmap.mmap(-1, n * PAGE)  # fresh pages, not yet touched...
        for i in range(0, n * PAGE, PAGE):
            b[i] = 1             # ...until each is written
    after = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    faults = r.values["page-faults"]
    assert n <= faults <= n + 256, faults
    # the kernel's own count of this thread over (slightly more than) the region
    assert abs((after - before) - faults) <= 64, (after - before, faults)
    assert r.values["task-clock"] > 0 and r.duration_ns > 0
    assert r.not_counted == {}


def test_config_is_validated():
    with pytest.raises(KeyError):
        counters.Config(["page-faults", "nonsense"])
    with pytest.raises(ValueError):
        counters.Config([])
    cfg = counters.Config(["page-faults"])
    assert cfg.counters == ("page-faults",) and cfg.agent == 0
    with pytest.raises(AttributeError):
        cfg.counters = ("task-clock",)  # immutable


def test_regions_do_not_nest():
    cfg = counters.Config(["task-clock"])
    with counters.region("outer", cfg):
        with pytest.raises(sonde.StateError):
            with counters.region("inner", cfg):
                pass
    r = counters.region("again", cfg)
    with r:
        pass
    with pytest.raises(sonde.StateError):
        with r:  # a region runs once
            pass


def test_not_supported_is_none_with_reason():
    unsupported = [c["name"] for c in counters.catalog() if not c["supported"]]
    if not unsupported:
        pytest.skip("every counter of the catalog can be counted on this machine")
    cfg = counters.Config([unsupported[0], "task-clock"])
    with counters.region("r", cfg) as r:
        pass
    assert r.values[unsupported[0]] is None
    assert r.not_counted[unsupported[0]]


def test_eval():
    assert counters.eval("a / b", {"a": [4.0, 6.0], "b": 2}) == [2.0, 3.0]
    assert counters.eval("a / b", {"a": 1, "b": 0}) == [None]  # never a number
    with pytest.raises(ValueError):
        counters.eval("a +", {"a": 1})


def test_counter_collector_profile(tmp_path, sonde_bin):
    obs = sonde.Observatory()

    def touch():
        b = mmap.mmap(-1, 1024 * PAGE)
        for i in range(0, 1024 * PAGE, PAGE):
            b[i] = 1

    out = obs.profile(touch, collectors=["counters"], output_dir=tmp_path,
                      params={"counters": {"counters": ["page-faults", "task-clock"]}})
    r, path = out["counters"]
    assert r["values"]["page-faults"] >= 1024
    assert r["units"]["task-clock"] == "ns"
    show = subprocess.run([sonde_bin, "show", path], capture_output=True, text=True)
    assert show.returncode == 0 and "page-faults" in show.stdout, show.stderr
    assert json.load(open(path))["header"]["type"] == "counters"


def test_groups_and_collector_by_group(sonde_bin):
    """The groups are `sonde counters list --groups`'s, and group= counts one."""
    g = counters.groups()
    listed = json.loads(subprocess.run([sonde_bin, "counters", "list", "--groups",
                                        "--format", "json"], capture_output=True,
                                       text=True, check=True).stdout)
    assert {x["name"]: [c["name"] for c in x["counters"]] for x in listed} == \
        {k: v["counters"] for k, v in g.items()}
    assert counters.group("MEMORY") == g["memory"]["counters"]
    with pytest.raises(KeyError):
        counters.group("no-such-group")
    c = sonde.CounterCollector(group="memory")
    assert list(c.config.counters) == g["memory"]["counters"]
    with c:
        b = mmap.mmap(-1, 256 * PAGE)
        for i in range(0, 256 * PAGE, PAGE):
            b[i] = 1
    r = c.get_results()
    assert r["values"]["page-faults"] >= 256
    assert r["values"]["FAULT_BYTES"] == r["values"]["page-faults"] * PAGE
