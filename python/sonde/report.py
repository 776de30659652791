"""Reports of Timer and Metrics recordings: a dict / JSON, CSV, a sonde profile,
libsonde's views (tables, SVG charts, flame graphs) and its HTML report.

Statistics (summaries, tests, comparisons) are libsonde's, the ones the sonde
command uses; nothing here re-implements them.
"""

import csv
import json
import math
import os
import sys
import tracemalloc
from dataclasses import dataclass

from . import _sonde
from ._sonde import SondeError
from .memory import peak_rss
from .timing import NS_PER_MS, Stats, _Recording

#: The units of every number in a report.
UNITS = {"time": "ms", "memory": "B", "throughput": "1/s"}


def _num(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _stats_dict(s):
    return {"n": s.n, "mean": s.mean, "std": s.std, "min": s.min, "max": s.max,
            "median": s.median, "ci95": list(s.ci95) if s.ci95 else None,
            "outliers": s.outliers}


def _memory():
    """What was measured of memory; what was not is None with the reason."""
    out = {"peak_rss": peak_rss(),
           "not_measured": {}}
    if tracemalloc.is_tracing():
        out["peak_allocated"] = tracemalloc.get_traced_memory()[1]
    else:
        out["peak_allocated"] = None
        out["not_measured"]["peak_allocated"] = (
            "the Python heap was not traced (use sonde.MemoryTracker or tracemalloc)")
    out["peak_reserved"] = None
    out["not_measured"]["peak_reserved"] = "no device backend is loaded"
    return out


def build_report(rec):
    """The report of a Timer or Metrics as a dict: timing (ms), metrics,
    memory (B), throughput (1/s), where it came from and the units."""
    samples, values = rec.samples(), rec.values()
    timing, metrics, throughput = {}, {}, {}
    for name, rows in samples.items():
        kept = [e - s for s, e, _d, _t, w in rows if not w]
        if not kept:
            continue
        st = Stats.of(name, kept, "ms", NS_PER_MS, len(rows) - len(kept))
        d = _stats_dict(st)
        d["total"] = sum(kept) / NS_PER_MS
        d["warmup"] = st.warmup
        timing[name] = d
        seconds = sum(kept) / 1e9
        if seconds > 0:
            tp = {"iterations_per_sec": len(kept) / seconds}
            if name in rec.sizes:
                tp["samples_per_sec"] = rec.sizes[name] / seconds
            throughput[name] = tp
    for name, rows in values.items():
        st = Stats.of(name, [v for _t, v, _tid in rows], "")
        d = _stats_dict(st)
        d["last"] = rows[-1][1]
        metrics[name] = d
    return {
        "source": dict(rec.created_by),
        "synchronize": rec.synchronization.as_dict(),
        "units": dict(UNITS),
        "timing": timing,
        "metrics": metrics,
        "memory": _memory(),
        "throughput": throughput,
        "open_regions": rec.open_regions(),
    }


def analyze_bottlenecks(rec, alpha=0.05):
    """Which top-level region takes the most time, its share of the top-level
    time, the ranking, and whether its per-call time differs significantly
    from the next region's (Welch's t-test, libsonde's)."""
    per = {}
    for name, rows in rec.samples().items():
        kept = [e - s for s, e, depth, _t, w in rows if not w and depth == 0]
        if kept:
            per[name] = kept
    if not per:
        raise SondeError("no top-level region has ended yet")
    total = sum(sum(v) for v in per.values())
    ranking = sorted(({"name": n, "total_ms": sum(v) / NS_PER_MS, "calls": len(v),
                       "mean_ms": sum(v) / len(v) / NS_PER_MS,
                       "share": sum(v) / total if total else 0.0} for n, v in per.items()),
                     key=lambda r: -r["total_ms"])
    top = ranking[0]
    out = {"dominant": top["name"], "share": top["share"], "ranking": ranking,
           "next": None, "significant": None, "test": None}
    if len(ranking) > 1:
        nxt = ranking[1]["name"]
        out["next"] = nxt
        a, b = per[nxt], per[top["name"]]
        if len(a) >= 2 and len(b) >= 2:
            t = _sonde.welch(a, b)
            out["test"] = {"method": "welch", "on": "per-call durations", "p": _num(t["p"]),
                           "effect": _num(t["effect"]), "alpha": alpha}
            out["significant"] = t["p"] < alpha
        else:
            out["test"] = {"method": None,
                           "reason": "fewer than 2 calls of a region: no test can tell"}
    return out


def to_profile(rec, cmd=None):
    """A sonde profile (dict) of a Timer or Metrics: every region's durations
    (ns) and every series' values, readable by sonde show, check and report."""
    src = rec.created_by
    rtm, res = {}, {}
    warm = {}
    for name, rows in rec.samples().items():
        kept = [r for r in rows if not r[4]]
        warm[name] = len(rows) - len(kept)
        if not kept:
            continue
        key = f"{name}#{len(rtm)}"
        rtm[key] = {"uid": name, "type": "time", "subtype": "region"}
        res[key] = {"amount": [e - s for s, e, *_ in kept],
                    "order": list(range(1, len(kept) + 1)),
                    "timestamp": [s for s, *_ in kept],
                    "depth": [d for _s, _e, d, *_ in kept],
                    "thread": [t for *_x, t, _w in kept]}
    for name, rows in rec.values().items():
        key = f"{name}#{len(rtm)}"
        rtm[key] = {"uid": name, "type": "value", "subtype": "metric"}
        res[key] = {"amount": [v for _t, v, _tid in rows],
                    "order": list(range(1, len(rows) + 1)),
                    "timestamp": [t for t, _v, _tid in rows]}
    notes = []
    sync = rec.synchronization
    if sync.requested and not sync.applied:
        notes.append(f"synchronize was requested and not applied: {sync.reason}")
    if any(warm.values()):
        notes.append("warm-up samples left out: " +
                     ", ".join(f"{n} {k}" for n, k in warm.items() if k))
    script = src.get("script") or "python"
    return {
        "format_version": 1,
        "origin": None,
        "header": {"type": "time", "cmd": cmd or os.path.basename(script),
                   "args": src.get("argv", []), "workload": "",
                   "units": {"time": "ns", "value": ""}},
        "collector_info": {"name": "python",
                           "params": {"class": src.get("class"), "warmup": rec.warmup,
                                      "repeat": getattr(rec, "repeat", None),
                                      "synchronize": sync.requested}},
        "machine": {},
        "metadata": {"source": src, "synchronize": sync.as_dict()},
        "stats": {"duration_ns": _sonde.clock_ns() - rec.t0_ns, "notes": notes,
                  "warnings": []},
        "resource_type_map": rtm,
        "resources": res,
        "models": [],
        "postprocessors": [],
    }


def _as_profile_json(x):
    if isinstance(x, _Recording):
        return json.dumps(to_profile(x))
    if isinstance(x, dict):
        return json.dumps(x)
    if isinstance(x, str) and x.lstrip().startswith("{"):
        return x
    if isinstance(x, (str, os.PathLike)):
        return _sonde.load_profile(os.fspath(x))
    raise TypeError(f"cannot compare a {type(x).__name__}: pass a Timer, Metrics, a profile "
                    "dict or a profile's path")


def view(profile, kind="table", **options):
    """A view of a profile as `sonde show` draws it, as a string.

    profile: a Timer, Metrics, profile dict, profile path or profile JSON text.
    kind: table, warnings, memory, report, graph, counters (text; format= text,
    json, csv or markdown; top=, sort=), csv (every value row, as `sonde export
    -f csv` writes), perfetto, folded (weight=), flamegraph
    (weight=, base= a baseline profile for a differential one), bars, flow,
    scatter (SVG; of=, per=, by=, type=, func=, stacked=, top=, title=).
    Raises sonde.NotSupported when the view does not apply to the profile."""
    base = options.pop("base", None)
    if base is not None:
        options["base"] = _as_profile_json(base)
    return _sonde.view(kind, _as_profile_json(profile), **options)


def report_html(profiles, path=None, names=None):
    """The self-contained HTML report of `sonde report` for one or more profiles
    (each compared with the previous one of the same collector and command).
    Written to path (whole or not at all) when given; returned otherwise."""
    if not isinstance(profiles, (list, tuple)):
        profiles = [profiles]
    docs = [_sonde.stamp(_as_profile_json(p)) if isinstance(p, _Recording)
            else _as_profile_json(p) for p in profiles]
    if names is None:
        names = [os.fspath(p) if isinstance(p, (str, os.PathLike)) and not
                 str(p).lstrip().startswith("{") else f"profile {i + 1}"
                 for i, p in enumerate(profiles)]
    html = _sonde.view("html", docs, names=list(names))
    if path is None:
        return html
    _write(path, html)
    return None


@dataclass(frozen=True)
class Comparison:
    """One region of b against a: b's speedup over a (> 1: b is faster), its 95 %
    confidence interval, and the test and verdict of `sonde check`."""

    name: str
    speedup: float
    ci95: tuple
    test: str
    p: float
    verdict: str
    baseline_ms: float
    target_ms: float
    n_baseline: int
    n_target: int

    def __str__(self):
        ci = "" if self.ci95 is None else f" [{self.ci95[0]:.3g}, {self.ci95[1]:.3g}]"
        p = "" if self.p is None else f", p = {self.p:.3g}"
        return (f"{self.name}: {self.speedup:.3g}×{ci} ({self.baseline_ms:.4g} ms -> "
                f"{self.target_ms:.4g} ms; {self.test}{p}): {self.verdict}")


def compare_runs(a, b, method="auto", alpha=0.05):
    """Compare run b against run a, region by region: {name: Comparison}.

    a and b are Timers, Metrics, profile dicts or profile paths. The test is
    `sonde check`'s (Welch's t-test on the durations by default)."""
    out = {}
    for r in _sonde.compare(_as_profile_json(a), _as_profile_json(b), method=method,
                            alpha=alpha):
        if r["subtype"] not in ("region", None) or r["baseline"] is None \
                or r["target"] is None:
            continue
        lo, hi = r["ratio_low"], r["ratio_high"]
        ci = (1 / hi, 1 / lo) if lo and hi else None
        scale = NS_PER_MS if r["unit"] in (None, "ns") else 1.0
        out[r["uid"]] = Comparison(r["uid"], r["baseline"] / r["target"] if r["target"] else
                                   math.inf, ci, r["method"], r["p"], r["verdict"],
                                   r["baseline"] / scale, r["target"] / scale, r["n_baseline"],
                                   r["n_target"])
    return out


class Reporter:
    """Write a Timer's or Metrics' report: JSON, CSV, a sonde profile, a summary."""

    def __init__(self, recording):
        if not isinstance(recording, _Recording):
            raise TypeError("Reporter takes a sonde.Timer or sonde.Metrics")
        self.recording = recording

    def report(self):
        return build_report(self.recording)

    def save_json(self, path):
        _write(path, json.dumps(self.report(), indent=2) + "\n")

    def save_csv(self, path):
        rep = self.report()
        rows = [["name", "kind", "unit", "n", "mean", "std", "min", "max", "median",
                 "ci95_low", "ci95_high", "outliers"]]
        for kind, unit, part in (("region", "ms", rep["timing"]), ("metric", "", rep["metrics"])):
            for name, d in part.items():
                ci = d["ci95"] or [None, None]
                rows.append([name, kind, unit, d["n"], d["mean"], d["std"], d["min"], d["max"],
                             d["median"], ci[0], ci[1], d["outliers"]])
        import io

        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(
            [["" if v is None else v for v in r] for r in rows])
        _write(path, buf.getvalue())

    def save_profile(self, path, cmd=None):
        """A sonde profile (path ending .gz or .zst: compressed), stamped with the
        machine, the git commit and the date as `sonde collect` stamps its own.
        A rank of a distributed job (torchrun, mpirun, srun) of several ranks
        writes PATH-rankR, with the job's run id (docs/distributed.md), so
        that `sonde show RUN` compares the ranks. Returns the path written."""
        return _sonde.save_profile(json.dumps(to_profile(self.recording, cmd)), os.fspath(path))

    def save_html(self, path, title=None, baseline=None, baseline_title="baseline"):
        """The same self-contained HTML report as `sonde report`, in one file with
        nothing to fetch: the regions' statistics, a bar per region (its mean),
        a timeline of every sample (its duration at its start), and with
        baseline (a Timer, Metrics, profile or path) the comparison of each
        region with the baseline's, as `sonde check` makes it."""
        name = title or self.recording.created_by.get("class", "python")
        if baseline is None:
            report_html([self.recording], path, names=[name])
        else:
            report_html([baseline, self.recording], path, names=[baseline_title, name])

    def view(self, kind="table", **options):
        """One of libsonde's views of the recording's profile (see sonde.view)."""
        return view(self.recording, kind, **options)

    def print_summary(self, file=None):
        file = file or sys.stdout
        rep = self.report()
        if rep["timing"]:
            w = max(len(n) for n in rep["timing"])
            print(f"{'region':<{w}}  {'n':>5}  {'mean ± σ (ms)':>22}  {'min':>10}  "
                  f"{'max':>10}  {'total (ms)':>11}", file=file)
            for n, d in sorted(rep["timing"].items(), key=lambda kv: -kv[1]["total"]):
                std = "-" if d["std"] is None else f"{d['std']:.4g}"
                print(f"{n:<{w}}  {d['n']:>5}  {d['mean']:>11.4g} ± {std:<8}  "
                      f"{d['min']:>10.4g}  {d['max']:>10.4g}  {d['total']:>11.4g}", file=file)
        for n, d in rep["metrics"].items():
            std = "-" if d["std"] is None else f"{d['std']:.4g}"
            print(f"{n}: {d['mean']:.4g} ± {std} (n = {d['n']}, last {d['last']:.4g})",
                  file=file)
        sync = rep["synchronize"]
        if sync["requested"] and not sync["applied"]:
            print(f"synchronize: not applied ({sync['reason']})", file=file)


def _write(path, text):
    """Whole file or nothing (libsonde's atomic write; .gz and .zst compressed)."""
    _sonde.write_file(os.fspath(path), text.encode("utf-8"))
