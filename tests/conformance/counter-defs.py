#!/usr/bin/python3
"""counter-defs.py - rocprofiler-sdk's own counter_defs.yaml (tests/data/rocprofiler-sdk)
through sonde's counter service: it loads, every architecture's definitions
are read, every derived metric of an architecture is listed (not supported
on a CPU, with the reason) and evaluates to what its expression gives, and the
per-architecture checks still refuse real mistakes in any block, with the file,
line and name.

The expected values come from the file itself: each expression is read with
Python's own parser, with reduce() and accumulate() as docs/counters.md defines
them (for one reading accumulate(C, ...) is C), on the same inputs: every base
counter a vector of three instances, every agent property a number.

Environment: SONDE, SRC. Output: TAP.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("1..0 # SKIP python3-yaml is missing (scripts/install-deps installs it)")
    sys.exit(0)

SONDE = os.environ["SONDE"]
DEFS = os.path.join(os.environ["SRC"], "tests", "data", "rocprofiler-sdk", "counter_defs.yaml")
WORK = tempfile.mkdtemp(prefix="sonde-defs-")
n = 0


def tap(good, what, notes=()):
    global n
    n += 1
    print(f"{'ok' if good else 'not ok'} {n} - {what}")
    for line in notes if not good else ():
        print(f"# {line}")
    sys.stdout.flush()


def sonde(*args):
    r = subprocess.run([SONDE, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout, r.stderr


with open(DEFS, encoding="utf-8") as f:
    doc = yaml.safe_load(f)
counters = {k: v for k, v in doc.items() if isinstance(v, dict) and "architectures" in v}


def entries(arch):
    """name -> the entry of the counter for arch (its key lists arch)."""
    out = {}
    for name, c in counters.items():
        for keys, e in c["architectures"].items():
            if arch in keys.split("/"):
                out[name] = e
    return out


archs = sorted({a for c in counters.values() for k in c["architectures"] for a in k.split("/")})

# ---- it loads, and each architecture's metrics are there ------------------------------------
rc, out, err = sonde("counters", "list", "--defs", DEFS)
tap(rc == 0 and not err.strip(), f"the real counter_defs.yaml ({len(counters)} counters, "
    f"{len(archs)} architectures) loads", [f"exit {rc}: {err.strip()[:300]}"])

AGENT = {"simd_count": 440, "simd_per_cu": 4, "array_count": 32, "simd_arrays_per_engine": 4,
         "wave_front_size": 64}
for arch in archs:
    mine = entries(arch)
    derived = {k for k, e in mine.items() if e.get("expression")}
    rc, out, err = sonde("counters", "list", "--derived", "--defs", DEFS, "--arch", arch,
                         "--format", "json")
    listed = {o["name"]: o for o in json.loads(out)} if rc == 0 else {}
    missing = sorted(derived - set(listed))
    unsupported = [k for k in derived & set(listed)
                   if listed[k]["supported"] or not listed[k].get("why")]
    tap(rc == 0 and not missing and not unsupported,
        f"{arch}: its {len(derived)} derived metrics listed, each not supported on this "
        "CPU, with the reason", [f"exit {rc}: {err.strip()[:200]}"] + missing[:5] +
        [f"{k}: {listed[k]}" for k in unsupported[:5]])

# a metric that needs an agent property says which, and evaluates once it is given
rc, out, err = sonde("counters", "info", "CU_NUM", "--defs", DEFS, "--arch", "gfx90a")
tap(rc == 0 and "agent property simd_count" in out,
    "gfx90a: CU_NUM (simd_count/simd_per_cu) is not supported on a CPU agent, which has no "
    "simd_count", [out.strip().replace("\n", " | ")[:300]])
rc, out, err = sonde("counters", "eval", "CU_NUM", "--defs", DEFS, "--arch", "gfx90a",
                     "--set", "simd_count=440", "--set", "simd_per_cu=4")
tap(rc == 0 and out.strip() == "110", "gfx90a: CU_NUM with simd_count 440 and simd_per_cu 4: 110",
    [f"exit {rc}: {out.strip()} {err.strip()}"])


# ---- every derived metric evaluates to what its expression gives ---------------------------
class Vec(list):
    pass


def py_value(expr, values, defs, depth=0):
    """The expression's value (a float or a list of floats), as docs/counters.md defines it."""
    def name(m):
        w = m.group(0)
        if w in ("reduce", "accumulate", "sum", "avr", "max", "min", "HIGH_RES", "LOW_RES",
                 "NONE"):
            return w
        return f'_n("{w}")'

    def _n(w):
        if w in values:
            return values[w]
        return py_value(defs[w]["expression"], values, defs, depth + 1)

    def red(x, op):
        x = x if isinstance(x, list) else [x]
        if op == "sum":
            return sum(x)
        if op == "avr":
            return sum(x) / len(x)
        return (max if op == "max" else min)(x)

    def arith(f):
        def g(a, b):
            if isinstance(a, list) or isinstance(b, list):
                la = a if isinstance(a, list) else [a] * len(b)
                lb = b if isinstance(b, list) else [b] * len(a)
                return [f(x, y) for x, y in zip(la, lb)]
            return f(a, b)
        return g

    def div(x, y):
        return x / y if y else math.nan

    import ast
    tree = ast.parse(re.sub(r"[A-Za-z_][A-Za-z0-9_]*", name, expr), mode="eval")

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            return [-x for x in v] if isinstance(v, list) else -v
        if isinstance(node, ast.BinOp):
            f = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y,
                 ast.Mult: lambda x, y: x * y, ast.Div: div}[type(node.op)]
            return arith(f)(ev(node.left), ev(node.right))
        if isinstance(node, ast.Call):
            fn, args = node.func.id, [ev(a) for a in node.args]
            if fn == "_n":
                return _n(args[0])
            if fn == "reduce":
                return red(args[0], args[1])
            if fn == "accumulate":
                return args[0]
        raise ValueError(ast.dump(node))
    return ev(tree)


def nan_eq(a, b):
    a = a if isinstance(a, list) else [a]
    b = b if isinstance(b, list) else [b]
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        x = math.nan if x is None or not math.isfinite(x) else x
        y = math.nan if y is None or not math.isfinite(y) else y
        if math.isnan(x) != math.isnan(y) or (
                not math.isnan(x) and abs(x - y) > 1e-9 * max(1.0, abs(x))):
            return False
    return True


for arch in ("gfx90a", "gfx942", "gfx1100", "gfx906", "gfx908", "gfx1030"):
    mine = entries(arch)
    derived = sorted(k for k, e in mine.items() if e.get("expression"))
    base = sorted(k for k, e in mine.items() if not e.get("expression"))
    values = dict(AGENT)
    for i, b in enumerate(base):  # three instances each, distinct, none zero
        values[b] = [float(1 + (i * 7 + j * 3) % 97) for j in range(3)]
    sets = []
    for k, v in values.items():
        sets += ["--set", f"{k}={','.join(repr(float(x)) for x in (v if isinstance(v, list) else [v]))}"]
    rc, out, err = sonde("counters", "eval", *derived, "--defs", DEFS, "--arch", arch,
                         "--format", "json", *sets)
    got = {r["expression"]: r for r in json.loads(out)["results"]} if out.startswith("{") else {}
    bad = []
    for k in derived:
        want = py_value(mine[k]["expression"], values, mine)
        r = got.get(k, {})
        if "values" not in r:
            bad.append(f"{k}: {r.get('error', 'no result')}")
        elif not nan_eq(r["values"], want):
            bad.append(f"{k}: sonde {r['values']} against {want}")
    tap(rc == 0 and not bad and len(got) == len(derived),
        f"{arch}: every one of its {len(derived)} derived metrics evaluates to what its "
        "expression gives on the same inputs", [f"exit {rc}: {err.strip()[:200]}"] + bad[:8])


# ---- real mistakes are still refused, in any architecture's block ---------------------------
with open(DEFS, encoding="utf-8") as f:
    text = f.read()


def planted(what, old, new, expect, at_line=True):
    path = os.path.join(WORK, "defs.yaml")
    line = text[:text.index(old)].count("\n") + 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, 1))
    rc, out, err = sonde("counters", "list", "--defs", path)
    msg = err.strip()
    where = f"defs.yaml:{line}:" if at_line else "defs.yaml:"
    tap(rc != 0 and len(msg.splitlines()) == 1 and where in msg and
        all(e in msg for e in expect),
        f"{what}: refused in one line with the file, {'line ' if at_line else ''}and name",
        [f"exit {rc}: {msg}"])


# a malformed expression in a GPU block (the machine's architecture is not gfx)
planted("a malformed expression under gfx942",
        "      expression: reduce(TCC_EA0_ATOMIC_LEVEL,sum)",
        "      expression: reduce(TCC_EA0_ATOMIC_LEVEL,sum",
        ["gfx94"])
# a cycle: a metric that ends up depending on itself under gfx90a
planted("a cycle of derived metrics under gfx90a",
        "      expression: simd_count/simd_per_cu",
        "      expression: simd_count/simd_per_cu + CU_NUM",
        ["CU_NUM", "cycle"], at_line=False)
# a counter no block defines, misspelt, under gfx1100
planted("a misspelt counter in the block of gfx1100 and others",
        "expression: 400*reduce(SQ_WAIT_INST_LDS,sum)/reduce(SQ_WAVES,sum)/reduce(GRBM_GUI_ACTIVE,max)",
        "expression: 400*reduce(SQ_WAIT_INST_LDS,sum)/reduce(SQ_WAVEZ,sum)/reduce(GRBM_GUI_ACTIVE,max)",
        ["ALUStalledByLDS", "SQ_WAVEZ"])
print(f"1..{n}")
