#!/usr/bin/python3
"""Perun's degradation methods, computed the way Perun computes them (numpy,
scipy, pandas), from two sonde profiles: the verdicts that `sonde check
--method M` must agree with. Perun itself is not packaged for Debian; its
definitions are (perun/check/methods/*.py), and so are its libraries.

usage: perun-check.py METHOD BASELINE.json TARGET.json [CUTOFF]
prints one line per resource: UID<TAB>VERDICT[<TAB>KIND OF CHANGE]
"""
import json
import sys

import numpy as np
import pandas as pd
from scipy import stats

SAMPLES = 1000


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def self_times(profile):
    """uid -> (location, exclusive ns) of a trace profile's functions."""
    out = {}
    rtm = profile["resource_type_map"]
    for key, fixed in rtm.items():
        summary = fixed.get("summary")
        if isinstance(summary, dict) and "self" in summary:
            out[fixed["uid"]] = (fixed.get("location"), summary["self"])
    return out


def eto(base, targ, cutoff):
    """exclusive_time_outliers: flags by modified z-score, IQR and stddev."""
    b, t = self_times(base), self_times(targ)
    rows = []
    for uid in sorted(set(b) | set(t)):
        old = b[uid][1] / 1e6 if uid in b else np.nan
        new = t[uid][1] / 1e6 if uid in t else np.nan
        rows.append({"uid": uid, "-": old, "+": new})
    df = pd.DataFrame(rows)
    df["d"] = df["+"].fillna(0) - df["-"].fillna(0)
    total = df["+"].sum()
    df["share"] = df["d"] / total * 100
    mad = stats.median_abs_deviation(df["d"], scale=1.0)
    median = df["d"].median()
    ad = (df["d"] - median).abs()
    mzs = 0.6745 * ad / mad if mad else ad.where(ad == 0, np.inf)
    df["mzs"] = mzs > 3.5
    q1, q3 = df["d"].quantile(0.25), df["d"].quantile(0.75)
    iqr = q3 - q1
    df["iqr"] = (df["d"] < q1 - 1.5 * iqr) | (df["d"] > q3 + 1.5 * iqr)
    sd = df.loc[~df["mzs"] & ~df["iqr"], "d"].std()
    df["sd"] = (df["d"] / sd).abs() > 2.0 if sd else False
    for _, r in df.iterrows():
        up = r["d"] > 0
        if np.isnan(r["-"]):
            v = "not in baseline"
        elif np.isnan(r["+"]):
            v = "not in target"
        elif cutoff and abs(r["share"]) < cutoff:
            v = "no change"
        elif r["mzs"]:
            v = "severe degradation" if up else "severe optimization"
        elif r["iqr"]:
            v = "degradation" if up else "optimization"
        elif r["sd"]:
            v = "maybe"
        else:
            v = "no change"
        print(f"{r['uid']}\t{v}")


def model(profile, uid, kind=None):
    """The best model (sonde's mark) or the model of a kind, of a uid."""
    for m in profile.get("models", []):
        if m.get("uid") != uid or m.get("postprocessor") != "regression":
            continue
        if (kind is None and m.get("best")) or (kind is not None and m["model"] == kind):
            return m
    return None


def values(m, x):
    """The model's values at x (the quadratic is Perun's b0 + b1 x + b2 x^2)."""
    c = {k["name"]: k["value"] for k in m["coeffs"]}
    b0, b1, b2 = c["b0"], c.get("b1", 0.0) or 0.0, c.get("b2", 0.0) or 0.0
    f = {
        "constant": lambda: np.full_like(x, b0),
        "linear": lambda: b0 + b1 * x,
        "logarithmic": lambda: b0 + b1 * np.log(x),
        "linearithmic": lambda: b0 + b1 * x * np.log(x),
        "quadratic": lambda: b0 + b1 * x + b2 * x * x,
        "power": lambda: b0 * np.power(x, b1),
        "exponential": lambda: b0 * np.power(b1, x),
    }[m["model"]]
    return f()


def regression(method, base, targ):
    """linear_regression / polynomial_regression: Perun's general detection."""
    for m in base.get("models", []):
        if not m.get("best") or m.get("postprocessor") != "regression":
            continue
        uid = m["uid"]
        bb, bt = m, model(targ, uid)
        lb, lt = model(base, uid, "linear"), model(targ, uid, "linear")
        if not (bt and lb and lt):
            continue
        x = np.linspace(bb["x_start"], bb["x_end"], SAMPLES)
        yb, yt = values(bb, x), values(bt, x)
        err = yt - yb
        lin_err = values(lt, x) - values(lb, x)
        rel = np.sum(np.nan_to_num(np.divide(err, yb))) / SAMPLES * 100
        cb = {k["name"]: k["value"] or 0.0 for k in bb["coeffs"]}
        ct = {k["name"]: k["value"] or 0.0 for k in bt["coeffs"]}
        if abs(ct["b0"] - cb["b0"]) <= abs(0.05 * cb["b0"]) and abs(
            ct.get("b1", 0) - cb.get("b1", 0)
        ) <= abs(0.05 * cb.get("b1", 0)):
            print(f"{uid}\tno change")
            continue
        if method == "polynomial-regression":
            fit = np.polyfit(x, lin_err, 0, None, True)
            degree = 0
            for degree in range(0, 4):
                if fit[1][0] < 100000000:
                    break
                fit = np.polyfit(x, lin_err, degree + 1, None, True)
            kind = {0: "constant", 1: "linear", 2: "quadratic"}.get(degree, "unknown")
        else:
            slope, _, r, _, _ = stats.linregress(x, lin_err)
            lb1 = {k["name"]: k["value"] for k in lt["coeffs"]}["b1"] - {
                k["name"]: k["value"] for k in lb["coeffs"]
            }["b1"]
            kind = ""
            diff_b0 = ct["b0"] - cb["b0"]
            intercept = lin_err[0] - slope * x[0]
            flat = abs(slope) <= abs(0.05 * np.amax(err)) and abs(0.95 * intercept) <= abs(
                diff_b0
            ) <= abs(1.05 * intercept)
            if flat and (
                bb["model"] not in ("linear", "constant") or abs(diff_b0 - intercept) < 1e-12
            ):
                kind = "constant"
            elif abs(lb1) >= abs(0.7 * slope) and abs(lb1) <= abs(1.3 * slope) and r**2 > 0.95:
                kind = "linear"
            quad = np.polyfit(x, lin_err, 2, None, True)[1]
            sst = np.sum((lin_err - lin_err.mean()) ** 2)
            q_r2 = 1 - quad[0] / sst if sst and len(quad) else 1.0
            # a difference constant to within rounding has no shape to judge
            # (sonde's guard; Perun's R² of such noise decides either way)
            shaped = np.sqrt(sst / len(lin_err)) > 1e-9 * abs(lin_err.mean())
            if shaped and q_r2 > 0.90 and abs(q_r2 - r**2) > 0.01:
                kind = "quadratic"
            kind = kind or "?"
        if np.sum(err) > 0:
            v = "degradation" if rel > 25 else "maybe"
        else:
            v = "optimization" if rel < -25 else "maybe"
        print(f"{uid}\t{v}\t{kind}")


def main():
    method, base, targ = sys.argv[1], load(sys.argv[2]), load(sys.argv[3])
    cutoff = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    if method == "exclusive-time-outliers":
        eto(base, targ, cutoff)
    else:
        regression(method, base, targ)


if __name__ == "__main__":
    main()
