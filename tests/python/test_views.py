"""libsonde's views from Python: the same text, SVG and HTML as the sonde program
draws for the same profile, and the HTML report opened in headless chromium."""
import json
import os
import shutil
import subprocess
import time

import pytest

import sonde


def _timer():
    t = sonde.Timer()
    for _ in range(5):
        with t.measure("slow"):
            time.sleep(0.004)
        with t.measure("fast"):
            time.sleep(0.001)
    return t


def _cli(sonde_bin, *args):
    return subprocess.run([sonde_bin, *args], capture_output=True, text=True, check=True).stdout


def test_table_is_the_programs(sonde_bin, tmp_path):
    t = _timer()
    path = tmp_path / "run.json"
    sonde.Reporter(t).save_profile(path)
    for fmt in ("text", "json", "csv", "markdown"):
        mine = sonde.view(path, "table", format=fmt)
        if fmt == "text":
            mine += sonde.view(path, "warnings")
        assert mine == _cli(sonde_bin, "show", str(path), "table", "-f", fmt), fmt
    rows = json.loads(sonde.view(t, "table", format="json"))["rows"]
    assert {r["uid"] for r in rows} == {"slow", "fast"}
    slow = next(r for r in rows if r["uid"] == "slow")
    assert slow["n"] == 5 and slow["unit"] == "ns"
    assert 4e6 <= slow["mean"] < 4e6 + 5e6


def test_csv_rows_are_the_exports(sonde_bin, tmp_path):
    # every value row, computed by the library for both (it was the CLI's own)
    path = tmp_path / "run.json"
    sonde.Reporter(_timer()).save_profile(path)
    mine = sonde.view(path, "csv")
    assert mine == _cli(sonde_bin, "export", str(path), "-f", "csv")
    head, *rows = mine.splitlines()
    assert head.startswith("uid,type,subtype,") and len(rows) == 10


def test_drawn_views_are_the_programs(sonde_bin, tmp_path):
    t = _timer()
    path = tmp_path / "run.json"
    sonde.Reporter(t).save_profile(path)
    svg = sonde.view(path, "bars", by="uid", title="regions")
    out = tmp_path / "bars.svg"
    _cli(sonde_bin, "show", str(path), "bars", "--by", "uid", "-o", str(out))
    # the program's title is its own default; everything else is the same drawing
    assert svg.startswith("<?xml") or svg.startswith("<svg")
    assert svg.count("<rect") == out.read_text().count("<rect")
    assert "regions" in svg


def test_views_that_do_not_apply_say_so():
    t = _timer()
    with pytest.raises(sonde.NotSupported, match="memory view"):
        sonde.view(t, "memory")
    with pytest.raises(sonde.NotSupported, match="no stacks"):
        sonde.view(t, "flamegraph")
    with pytest.raises(ValueError, match="unknown view"):
        sonde.view(t, "pie")
    with pytest.raises(ValueError, match="unknown format"):
        sonde.view(t, "table", format="xml")


def _prog(name):
    prog = os.path.join(os.environ.get("BUILD", ""), "tests", name)
    if not os.access(prog, os.X_OK):
        pytest.skip(f"tests/{name} is not built (run through meson test)")
    return prog


def test_memory_views_of_a_collected_profile(sonde_bin, tmp_path):
    mem = tmp_path / "mem.json"
    subprocess.run([sonde_bin, "-q", "collect", "memory", "-o", str(mem), "--",
                    _prog("m-known")], check=True, capture_output=True)
    for top in (5, 0):
        assert sonde.view(mem, "memory", top=top) == _cli(sonde_bin, "show", str(mem),
                                                          "memory", "-n", str(top))
    assert sonde.view(mem, "folded") == _cli(sonde_bin, "export", str(mem), "--format",
                                             "folded")
    assert "sonde-flame" in sonde.view(mem, "flamegraph")
    assert "sonde-flame" in sonde.view(mem, "flamegraph", base=mem, weight="count")


def test_trace_views_of_a_collected_profile(sonde_bin, tmp_path):
    tr = tmp_path / "trace.json"
    subprocess.run([sonde_bin, "-q", "collect", "trace", "-o", str(tr), "--",
                    _prog("t-calls")], check=True, capture_output=True)
    for fmt in ("text", "csv"):
        assert sonde.view(tr, "report", format=fmt, sort="calls", top=3) == _cli(
            sonde_bin, "show", str(tr), "report", "-f", fmt, "-s", "calls", "-n", "3")
    assert sonde.view(tr, "graph") == _cli(sonde_bin, "show", str(tr), "graph", "-n", "0")
    events = json.loads(sonde.view(tr, "perfetto"))
    assert events == json.loads(_cli(sonde_bin, "export", str(tr), "--format", "perfetto"))


def test_html_report_from_python(sonde_bin, tmp_path):
    a, b = _timer(), _timer()
    out = tmp_path / "report.html"
    sonde.Reporter(a).save_html(out)
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "slow" in html and "fast" in html
    # one file: nothing fetched from elsewhere
    assert "http://" not in html.replace("http://www.w3.org", "")
    assert "https://" not in html
    # a bar per region (its mean), and every sample on a timeline, a line per region
    assert html.count('<g class="bar">') == 2 and "mean time per region" in html
    assert 'id="flow-0"' in html and "by region" in html
    # two recordings: the second is compared with the first, as sonde report does
    both = sonde.report_html([a, b], names=["before", "after"])
    assert "before" in both and "after" in both and 'class="comparison"' in both
    # save_html with a baseline: the same comparison
    cmp_path = tmp_path / "cmp.html"
    sonde.Reporter(b).save_html(cmp_path, title="after", baseline=a)
    cmp_html = cmp_path.read_text()
    assert 'class="comparison"' in cmp_html and "baseline" in cmp_html
    # the program reads the same profile into the same report
    path = tmp_path / "run.json"
    sonde.Reporter(a).save_profile(path)
    cli = tmp_path / "cli.html"
    _cli(sonde_bin, "report", str(path), "-o", str(cli))
    assert sonde.report_html([path]).count("<table") == cli.read_text().count("<table")


def test_html_report_in_chromium(tmp_path):
    src, build = os.environ.get("SRC"), os.environ.get("BUILD")
    if not src or not build:
        pytest.skip("SRC and BUILD are not set (run through meson test)")
    if not shutil.which("node"):
        pytest.skip("node is not installed (scripts/install-deps installs it)")
    if not os.access("/usr/bin/chromium", os.X_OK):
        pytest.skip("/usr/bin/chromium is not installed (scripts/install-deps installs it)")
    pw = os.path.join(build, "tests", "browser")
    setup = subprocess.run([os.path.join(src, "tests", "browser", "setup"), pw],
                           capture_output=True, text=True)
    if setup.returncode:
        pytest.skip(setup.stdout.strip() or "playwright-core could not be installed")
    a, b = sonde.Timer(), sonde.Timer()
    for _ in range(4):
        with a.measure("<b>forward</b>"):
            time.sleep(0.002)
        with b.measure("<b>forward</b>"):
            time.sleep(0.006)
    out = tmp_path / "py-report.html"
    sonde.report_html([a, b], out, names=["a & b", "later"])
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([{
        "file": str(out),
        "expect": {"table.facts": 2, "table.summary tbody tr": 2, "table.check tbody tr": 1,
                   "section.comparison": 1},
        "texts": ["<b>forward</b>", "a & b"],
    }]))
    r = subprocess.run(["node", os.path.join(src, "tests", "browser", "open.js"), str(spec)],
                       capture_output=True, text=True, env={**os.environ, "PW_DIR": pw},
                       timeout=120)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("ok", "not ok"))]
    assert lines, r.stdout + r.stderr
    bad = [ln for ln in lines if ln.startswith("not ok")]
    assert not bad, "\n".join(bad)
