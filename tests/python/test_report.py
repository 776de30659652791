"""Reports and profiles written from Python, read back by the sonde command."""
import csv
import gzip
import json
import os
import subprocess
import time

import pytest

import sonde


def _timer(delay, n=8, warmup=1):
    t = sonde.Timer(warmup=warmup)
    for _ in range(n + warmup):
        with t.measure("work"):
            time.sleep(delay)
    return t


def test_json_report(tmp_path):
    m = sonde.Metrics()
    for i in range(6):
        with m.measure_time("step"):
            time.sleep(0.002)
        m.record_size("step", 32)
        m.record("loss", 2.0 - i * 0.1)
    path = tmp_path / "r.json"
    sonde.Reporter(m).save_json(path)
    r = json.loads(path.read_text())
    assert r["units"] == {"time": "ms", "memory": "B", "throughput": "1/s"}
    st = r["timing"]["step"]
    assert set(st) >= {"n", "mean", "std", "min", "max", "median", "ci95", "total"}
    assert st["n"] == 6 and 2.0 <= st["mean"] < 20.0  # ms, whatever the machine's load
    assert r["metrics"]["loss"]["last"] == pytest.approx(1.5)
    tp = r["throughput"]["step"]
    assert tp["iterations_per_sec"] == pytest.approx(6 / (st["total"] / 1000), rel=1e-6)
    assert tp["samples_per_sec"] == pytest.approx(32 * tp["iterations_per_sec"], rel=1e-6)
    mem = r["memory"]
    assert mem["peak_rss"] > 1 << 20
    # never a number that was not measured
    assert mem["peak_reserved"] is None and "device" in mem["not_measured"]["peak_reserved"]
    assert r["source"]["api"] == "python" and r["source"]["class"] == "Metrics"


def test_csv_parses(tmp_path):
    m = sonde.Metrics()
    for i in range(3):
        with m.measure_time("a,b"):  # a name that needs quoting
            pass
        m.record("acc", 0.5 + i / 10)
    path = tmp_path / "r.csv"
    sonde.Reporter(m).save_csv(path)
    rows = list(csv.DictReader(path.open()))
    assert {r["name"] for r in rows} == {"a,b", "acc"}
    acc = next(r for r in rows if r["name"] == "acc")
    assert acc["kind"] == "metric" and int(acc["n"]) == 3
    assert float(acc["max"]) == pytest.approx(0.7)


def test_profile_reads_in_sonde_show_and_check(tmp_path, sonde_bin):
    a, b = tmp_path / "a.json", tmp_path / "b.json.gz"
    # 5 ms against 30 ms: a severe degradation whatever a loaded machine adds to a sleep
    sonde.Reporter(_timer(0.005)).save_profile(a)
    sonde.Reporter(_timer(0.030)).save_profile(b)  # 6x slower, gzip'ed
    with gzip.open(b) as f:
        assert json.load(f)["header"]["type"] == "time"
    show = subprocess.run([sonde_bin, "show", str(a)], capture_output=True, text=True)
    assert show.returncode == 0, show.stderr
    assert "work" in show.stdout and "ms" in show.stdout
    check = subprocess.run([sonde_bin, "check", str(a), str(b)], capture_output=True, text=True)
    assert check.returncode == 4, check.stdout + check.stderr
    assert "severe degradation" in check.stdout
    same = subprocess.run([sonde_bin, "check", str(a), str(a)], capture_output=True, text=True)
    assert same.returncode == 0


def test_profile_is_valid_and_says_where_it_came_from(tmp_path):
    path = tmp_path / "p.json"
    with pytest.warns(sonde.SondeWarning):
        t = sonde.Timer(warmup=2, synchronize=True)
    for _ in range(5):
        with t.measure("r"):
            pass
    sonde.Reporter(t).save_profile(path)
    p = json.loads(path.read_text())
    schema = os.path.join(os.environ["SRC"], "docs/profile.schema.json") \
        if "SRC" in os.environ else None
    if schema:
        v = subprocess.run(["/usr/bin/python3", os.path.join(os.environ["SRC"],
                                                             "tests/validate-profile.py"),
                            schema, str(path)], capture_output=True, text=True)
        assert v.returncode == 0, v.stdout + v.stderr
    assert p["metadata"]["source"]["api"] == "python"
    assert p["metadata"]["sonde_version"] == sonde.__version__
    assert p["machine"]  # stamped as sonde collect stamps
    assert p["collector_info"]["params"]["warmup"] == 2
    res = next(iter(p["resources"].values()))
    assert len(res["amount"]) == 3  # warm-up left out
    assert any("not applied" in n for n in p["stats"]["notes"])
    assert any("warm-up" in n for n in p["stats"]["notes"])


def _with_durations(ms):
    """A Timer's profile whose region took exactly these times (a loaded machine
    cannot move the answer)."""
    p = sonde.to_profile(_timer(0.0001, n=len(ms), warmup=0))
    (key,) = [k for k, v in p["resource_type_map"].items() if v["uid"] == "work"]
    p["resources"][key]["amount"] = [int(x * 1e6) for x in ms]
    return p


def test_compare_runs_speedup_with_ci():
    slow = _with_durations([6.0, 6.1, 5.9, 6.05, 5.95, 6.2, 5.8, 6.0])
    fast = _with_durations([2.0, 2.02, 1.98, 2.01, 1.99, 2.05, 1.95, 2.0])
    c = sonde.compare_runs(slow, fast)["work"]
    assert c.speedup == pytest.approx(6.0 / 2.0, rel=1e-3)
    assert c.ci95[0] <= c.speedup <= c.ci95[1] and c.ci95[1] - c.ci95[0] < 0.2
    assert c.test == "welch" and c.p < 0.01
    assert "optimization" in c.verdict
    # and from real regions: a 6x slower sleep is slower, whatever the machine's load
    real = sonde.compare_runs(_timer(0.030), _timer(0.005))["work"]
    assert real.speedup > 1.5
    same = sonde.compare_runs(fast, fast)["work"]
    assert same.speedup == pytest.approx(1.0) and same.verdict == "no change"


def test_compare_runs_reads_profile_files(tmp_path):
    a = tmp_path / "a.json.zst"
    sonde.Reporter(_timer(0.02)).save_profile(a)
    c = sonde.compare_runs(a, _timer(0.02))["work"]
    assert 0.7 < c.speedup < 1.4
    with pytest.raises(FileNotFoundError):
        sonde.compare_runs(tmp_path / "missing.json", a)


def test_print_summary(capsys):
    sonde.Reporter(_timer(0.001, n=3)).print_summary()
    out = capsys.readouterr().out
    assert "work" in out and "ms" in out
